"""One output layer: results are dataclasses, rendered as Rich tables/panels or as JSON.

Commands build a result object, then call ``Output.emit(result, render)``; ``render`` turns the
result into Rich renderables for people, ``--json`` prints the same result as one JSON object.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, cast

from mqctl import clock
from mqctl.errors import ErrorReport, MqctlError, PreconditionError
from mqctl.secrets import mask_url_passwords

if TYPE_CHECKING:  # Rich loads when something is shown to people: a --json run never imports it
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.progress import Progress
    from rich.text import Text


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, enums, paths and datetimes to plain JSON values (times as ISO-8601 UTC)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: to_jsonable(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if not f.name.startswith("_") and f.metadata.get("json", True)
        }
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, _dt.datetime):
        if obj.tzinfo is None:
            obj = obj.replace(tzinfo=_dt.timezone.utc)
        return obj.astimezone(_dt.timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(obj, bytes):
        return obj.hex()
    if isinstance(obj, str):
        return mask_url_passwords(obj)
    return obj


# C0 controls but newline, DEL, C1 controls, and the bidirectional overrides that reorder what a reader sees;
# compiled (re's cache) when text for people is first shown: a JSON result never needs it (0.5 ms at import)
_CONTROLS = "[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
_JSON_RAW = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # what json.dumps leaves raw


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str) -> str:
    """Text as the terminal may show it: URL passwords masked and every control character escaped (`\\x1b`),
    so a YAML value, an etcd key, a file or stream name or a decoded payload cannot retitle, clear or
    rewrite the terminal. Newlines stay (multi-line cells)."""
    return re.sub(_CONTROLS, _escape, mask_url_passwords(text))


def _masked(renderable: Any) -> Any:
    """Plain strings and Rich Text shown safely (see `shown`); other renderables show their own cells safely."""
    if isinstance(renderable, str):
        return shown(renderable)
    from rich.text import Text

    if isinstance(renderable, Text):
        safe = shown(renderable.plain)
        if safe != renderable.plain:
            return Text(safe, style=renderable.style)
    return renderable


# Column kinds of `FitTable`: how a column reads, shrinks and hides when the terminal is narrow.
KEY = "key"  # the identifying column (channel, topic, file:line): never cut, wrapped or hidden
LABEL = "label"  # short words (status, code, type): shown whole, hidden by priority
TEXT = "text"  # free text (findings, evidence): wraps inside its cell
NUMBER = "number"  # counts and sizes: right-aligned, shown whole, hidden by priority
ID = "id"  # numeric ids: values longer than ID_NARROW_MAX are shown only with --wide
TIME = "time"  # datetimes: an age ("3m", "1.3d") in the narrow view, ISO-8601 UTC with --wide
ID_NARROW_MAX = 10
TEXT_MIN = 24  # a wrapping column is not squeezed below this many characters (or its longest value)


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of a `FitTable`: header, kind, and when it gives way.

    When the table is wider than the terminal, columns are kept in order of `priority` (0 first; unset means
    their place from the left) as long as they fit: KEY columns and priority 0 always stay.
    Columns of one priority are kept or hidden together (e.g. a configured/actual pair).
    """

    header: str
    kind: str = TEXT
    priority: int | None = None
    wide_header: str | None = None  # the header with --wide, e.g. "first time (UTC)" for an age column

    @property
    def right(self) -> bool:
        return self.kind in (NUMBER, ID, TIME)


def format_time(value: _dt.datetime | None) -> str:
    """UTC with milliseconds, e.g. 2024-05-01 12:00:00.123Z."""
    if value is None:
        return ""
    return value.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def format_age(seconds: float | None) -> str:
    """A duration the way kubectl's AGE column shows it: 42s, 3m, 5.2h, 1.3d, 12d."""
    if seconds is None:
        return ""
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600)):
        if seconds >= size:
            value = seconds / size
            return f"{sign}{value:.1f}{unit}" if value < 10 else f"{sign}{value:.0f}{unit}"
    if seconds >= 60:
        return f"{sign}{seconds // 60:.0f}m"
    return f"{sign}{seconds:.0f}s"


class FitTable:
    """A Rich table laid out for the width it is printed at, the way kubectl, docker and natscli do it.

    The KEY column is as wide as its longest value; other columns are hidden in their stated priority
    until the rest fits (a caption names them), TEXT wraps in its cell. With `wide` (--wide/--no-trunc)
    every column shows, ids and times in full, and a line may run past the terminal.
    Cells are plain text, never Rich markup; URL passwords are masked.
    """

    def __init__(
        self,
        title: str | None,
        columns: list[Column],
        rows: list[list[Any]],
        footer: list[Any] | None,
        *,
        show_header: bool = True,
        wide: bool = False,
    ):
        self.title, self.columns, self.rows, self.footer = title, columns, rows, footer
        self.show_header, self.wide = show_header, wide

    def cell_text(self, column: Column, value: Any, now: _dt.datetime) -> str:
        if value is None:
            return ""
        if isinstance(value, _dt.datetime):
            if self.wide:
                return format_time(value)
            value = value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
            age = format_age((now - value).total_seconds())
            return age if column.kind == TIME else f"{age} ago"
        if isinstance(value, _dt.timedelta):
            return format_age(value.total_seconds())
        return shown(str(value))

    def _header(self, column: Column) -> str:
        return column.wide_header if self.wide and column.wide_header else column.header

    def _texts(self, row: list[Any], now: _dt.datetime) -> list[str]:
        return [self.cell_text(col, row[i] if i < len(row) else None, now) for i, col in enumerate(self.columns)]

    def layout(self, max_width: int) -> tuple[list[int], list[int], list[list[str]], list[str], list[str]]:
        """(kept column indexes, their widths, cell texts, footer texts, hidden headers) for `max_width` characters."""
        from rich.cells import cell_len

        now = clock.now()
        cells = [self._texts(row, now) for row in self.rows]
        footer = self._texts(self.footer, now) if self.footer is not None else []
        lines = [
            [line for r in [*cells, footer] if i < len(r) for line in r[i].splitlines()]
            for i in range(len(self.columns))
        ]
        natural, minimum, header_words = [], [], []
        for i, col in enumerate(self.columns):
            header = self._header(col) if self.show_header else ""
            header_words.append(max((cell_len(w) for w in header.split()), default=0))
            values = max((cell_len(line) for line in lines[i]), default=0)
            full = max(values, cell_len(header) if col.kind == KEY else header_words[i])
            natural.append(max(full, cell_len(header)))
            minimum.append(
                min(max(values, header_words[i]), max(TEXT_MIN, header_words[i])) if col.kind == TEXT else full
            )

        def width_of(indexes: list[int]) -> int:
            return sum(minimum[i] for i in indexes) + 3 * len(indexes) + 1

        ranks = {
            i: 0 if col.kind == KEY else (100 + i if col.priority is None else col.priority)
            for i, col in enumerate(self.columns)
            if self.wide or col.kind != ID or max((len(line) for line in lines[i]), default=0) <= ID_NARROW_MAX
        }
        levels: dict[int, list[int]] = {}
        for i, rank in ranks.items():
            levels.setdefault(rank, []).append(i)
        kept: list[int] = []
        for rank in sorted(levels):
            if rank == 0 or self.wide or width_of(kept + levels[rank]) <= max_width:
                kept = sorted(kept + levels[rank])
        if not self.wide:  # too narrow even for what must stay: text narrows, then the least important column goes
            for i in kept:
                if self.columns[i].kind == TEXT:
                    minimum[i] -= max(0, min(width_of(kept) - max_width, minimum[i] - max(8, header_words[i])))
            while width_of(kept) > max_width and any(self.columns[i].kind != KEY for i in kept):
                kept.remove(max((i for i in kept if self.columns[i].kind != KEY), key=lambda i: (ranks[i], i)))
        widths = [minimum[i] for i in kept]
        if self.wide:  # whole headers even past the terminal's edge
            max_width = max(
                max_width,
                sum(minimum[i] if self.columns[i].kind == TEXT else natural[i] for i in kept) + 3 * len(kept) + 1,
            )
        spare = max(0, max_width - (sum(widths) + 3 * len(kept) + 1))
        for n, i in enumerate(kept):  # first headers on one line, then wider text
            grow = cell_len(self._header(self.columns[i])) - widths[n] if self.show_header else 0
            if 0 < grow <= spare:
                widths[n] += grow
                spare -= grow
        for n, i in enumerate(kept):
            grow = min(spare, natural[i] - widths[n]) if self.columns[i].kind == TEXT else 0
            if grow > 0:
                widths[n] += grow
                spare -= grow
        hidden = [self._header(self.columns[i]) for i in range(len(self.columns)) if i not in kept]
        return (
            kept,
            widths,
            [[row[i] for i in kept] for row in cells],
            [footer[i] for i in kept] if footer else [],
            hidden,
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.table import Table
        from rich.text import Text

        kept, widths, cells, footer, hidden = self.layout(options.max_width)
        table = Table(show_header=self.show_header, show_footer=bool(footer))
        for n, i in enumerate(kept):
            column = self.columns[i]
            table.add_column(
                Text(self._header(column)),
                width=widths[n],
                justify="right" if column.right else "left",
                footer=Text(footer[n] if footer else ""),
                overflow="fold",
            )
        for row in cells:
            table.add_row(
                *[Text(value, no_wrap=self.columns[i].kind != TEXT, overflow="fold") for i, value in zip(kept, row)]
            )
        # title and caption wrap at the terminal's width, not the (maybe narrow) table's
        if self.title is not None:
            yield Text(shown(self.title), style="table.title")
        yield from console.render(table, options.update_width(sum(widths) + 3 * len(kept) + 1))
        if hidden:
            yield Text(
                f"not shown at {options.max_width} columns: {', '.join(hidden)} (--wide shows all)",
                style="table.caption",
            )


# `--json` prints exactly one object per run, a result or an error: an error after the result adds none
_json_printed = False


def _columns() -> int:
    """The width for output that is not a terminal: COLUMNS when it is a positive whole number (as `ls` and
    Rich read it), else 160; a COLUMNS of "abc" or "-5" is ignored, not an error."""
    text = os.environ.get("COLUMNS", "").strip()
    return int(text) if text.isascii() and text.isdigit() and 0 < int(text) <= 100_000 else 160


class Output:
    """Where every command's results and messages go."""

    def __init__(self, json_mode: bool = False, no_color: bool = False, wide: bool = False):
        self.json_mode = json_mode
        self.wide = wide
        self._no_color = no_color or bool(os.environ.get("NO_COLOR"))
        self._consoles: dict[bool, Console] = {}

    def _console(self, stderr: bool) -> Console:
        """The Rich console of stdout or stderr, made (and Rich imported) when first used."""
        if stderr not in self._consoles:
            from rich.console import Console

            width = None if sys.stdout.isatty() else _columns()
            # markup off: file names, keys, values and channel names with [brackets] print as they are
            self._consoles[stderr] = Console(
                stderr=stderr, no_color=self._no_color, width=width, highlight=False, soft_wrap=False, markup=False
            )
        return self._consoles[stderr]

    @property
    def console(self) -> Console:
        return self._console(False)

    @console.setter
    def console(self, console: Console) -> None:
        self._consoles[False] = console

    @property
    def err(self) -> Console:
        return self._console(True)

    @err.setter
    def err(self, console: Console) -> None:
        self._consoles[True] = console

    # results ---------------------------------------------------------------
    def emit(self, result: Any, render: Callable[[Any], RenderableType | Iterable[RenderableType]]) -> None:
        if self.json_mode:
            self.print_json(to_jsonable(result))
            return
        rendered = render(result)
        if isinstance(rendered, (list, tuple)) or (
            hasattr(rendered, "__iter__")
            and not hasattr(rendered, "__rich_console__")
            and not isinstance(rendered, str)
        ):
            items = list(cast(Iterable[Any], rendered))
        else:
            items = [rendered]
        for item in items:
            if isinstance(item, FitTable):  # fits the width itself; only a key wider than the terminal runs past it
                item.wide = self.wide
            self.console.print(_masked(item), crop=not isinstance(item, FitTable))

    def plain(self, text: str) -> None:
        """Text in a format a program reads (Prometheus exposition, a Nagios status line), written as it is."""
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()

    def print_json(self, data: Any) -> None:
        global _json_printed
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str)  # escapes C0 controls itself
        sys.stdout.write(_JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
        sys.stdout.flush()
        _json_printed = True

    # building blocks ---------------------------------------------------------
    @staticmethod
    def table(
        title: str | None,
        columns: list[Column | str],
        rows: Iterable[Iterable[Any]],
        *,
        footer: Iterable[Any] | None = None,
        right: Iterable[str] = (),
        show_header: bool = True,
    ) -> FitTable:
        """A table that fits the terminal (see `FitTable`); plain-string columns are TEXT, or NUMBER when in `right`."""
        right = set(right)
        specs = [c if isinstance(c, Column) else Column(c, NUMBER if c in right else TEXT) for c in columns]
        return FitTable(
            title, specs, [list(row) for row in rows], None if footer is None else list(footer), show_header=show_header
        )

    def info(self, message: str | Text) -> None:
        """Progress notes for people (plain text, or Text for styled parts); silent in JSON mode."""
        if not self.json_mode:
            self.err.print(_masked(message))

    def warn(self, message: str) -> None:
        from rich.text import Text

        # one line however long: a warning may end in a command to copy
        self.err.print(Text.assemble(("warning:", "yellow"), " ", shown(message)), soft_wrap=True)

    def error(self, err: MqctlError) -> None:
        from rich.text import Text

        self.err.print(Text.assemble(("error:", "red"), " ", shown(err.one_line())), soft_wrap=True)

    def fail(self, report: ErrorReport) -> None:
        """A failure in JSON mode: the error object on stdout, unless this run already printed its one object."""
        if self.json_mode and not _json_printed:
            self.print_json(report.as_json())

    def diff(self, diff_text: str) -> None:
        """Show a unified diff (on stderr in JSON mode so stdout stays parseable)."""
        from rich.syntax import Syntax

        target = self.err if self.json_mode else self.console
        if not diff_text:
            target.print("(no change)")
            return
        target.print(Syntax(shown(diff_text), "diff", theme="ansi_dark", background_color="default"))

    def confirm(self, question: str, *, assume_yes: bool) -> bool:
        """Ask before a mutation; without a terminal the caller must pass --yes."""
        if assume_yes:
            return True
        if not sys.stdin or not sys.stdin.isatty():
            raise PreconditionError(
                f"{question} — needs confirmation but there is no terminal",
                hint="pass --yes to proceed, or --dry-run to only look",
            )
        from rich.prompt import Confirm
        from rich.text import Text

        return Confirm.ask(Text(shown(question)), console=self.err, default=False)

    def progress(self, *, transient: bool = True) -> Progress:
        """A Rich progress bar on stderr; disabled in JSON mode and when stderr is not a terminal."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        return Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=transient,
            disable=self.json_mode or not self.err.is_terminal,
        )
