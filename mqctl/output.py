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
from pathlib import PurePath
from typing import Any, Callable, Iterable
from urllib.parse import SplitResult, urlsplit

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table

from mqctl.errors import InputError, MqctlError, PreconditionError

SECRET_MARKERS = ("password", "token", "secret", "sasl", "authparams", "credential", "accesskey", "privatekey")
REDACTED = "******"


def is_secret_key(key: str) -> bool:
    """True for keys whose values must never be printed (passwords, tokens, sasl, authParams...)."""
    flat = key.lower().replace("_", "").replace("-", "").replace(".", "")
    return any(marker in flat for marker in SECRET_MARKERS)


def redact(value: Any, key: str = "") -> Any:
    """Replace secret values anywhere inside a nested structure."""
    if key and is_secret_key(key) and value not in (None, "", [], {}):
        return REDACTED
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


def split_url(url: str, option: str) -> tuple[SplitResult, str | None, str | None]:
    """A server URL without its user:password@ part, and that user and password.

    Raises InputError (exit 2) naming the option when the URL cannot be parsed, e.g. `http://[::1`.
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # a non-numeric port only fails here
    except ValueError as err:
        raise InputError(f"{option} {safe_url(url)!r} is not a valid URL: {err}",
                         hint="write scheme://host:port; an IPv6 host goes in brackets, e.g. [::1]") from None
    if parts.username is None and parts.password is None:
        return parts, None, None
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=host), parts.username, parts.password


def _with_password(url: str, password: str | None) -> str:
    """`url` with the password of its user:password@ part replaced, or left out when `password` is None."""
    head, sep, rest = url.partition("://")
    if not sep:
        head, rest = "", url
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{head}{sep}{user}{'' if password is None else ':' + password}@{host}"


def safe_url(url: str) -> str:
    """A URL fit to print: the password of a user:password@ part becomes ******."""
    return _with_password(url, REDACTED) if "://" in url else url


def without_password(url: str) -> str:
    """The URL with the password of its user:password@ part left out (the user stays), fit to store."""
    return _with_password(url, None)


# `user:password@host` in a URL (the password runs to the last `@` before the host, as `safe_url` reads
# it) or in a broker list without a scheme (pulsar.address, kafka.brokerList, etcd endpoints...)
URL_PASSWORD = re.compile(r"(?P<user>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*:)(?P<password>[^\s'\",]+)(?=@[^\s@'\",]+)"
                          r"|(?P<user2>(?<![^\s'\"(\[,=])[^\s:/@'\"]+:)(?P<password2>[^\s/@'\",]+)(?=@[^\s@]+)")


def mask_url_passwords(text: str) -> str:
    """Any text fit to print: the password of every `user:password@` becomes ******."""
    if "@" not in text:
        return text

    def masked(match: re.Match) -> str:
        user = match["user"] or match["user2"]
        return match[0] if (match["password"] or match["password2"]) == REDACTED else user + REDACTED

    return URL_PASSWORD.sub(masked, text)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, enums, paths and datetimes to plain JSON values (times as ISO-8601 UTC)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if not f.name.startswith("_")}
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


def natural_key(name: str) -> list:
    """Sort key with natural numbering: dml_2 before dml_10."""
    import re

    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _masked(renderable: Any) -> Any:
    """Plain strings and Rich Text with URL passwords masked; other renderables mask their own cells."""
    from rich.text import Text

    if isinstance(renderable, str):
        return mask_url_passwords(renderable)
    if isinstance(renderable, Text) and "@" in renderable.plain:
        masked = mask_url_passwords(renderable.plain)
        if masked != renderable.plain:
            return Text(masked, style=renderable.style)
    return renderable


class Output:
    """Where every command's results and messages go."""

    def __init__(self, json_mode: bool = False, no_color: bool = False):
        self.json_mode = json_mode
        no_color = no_color or bool(os.environ.get("NO_COLOR"))
        width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "160"))
        self.console = Console(no_color=no_color, width=width, highlight=False, soft_wrap=False)
        self.err = Console(stderr=True, no_color=no_color, highlight=False, width=width)

    # results ---------------------------------------------------------------
    def emit(self, result: Any, render: Callable[[Any], RenderableType | Iterable[RenderableType]]) -> None:
        if self.json_mode:
            self.print_json(to_jsonable(result))
            return
        rendered = render(result)
        if isinstance(rendered, (list, tuple)) or (hasattr(rendered, "__iter__") and not hasattr(rendered, "__rich_console__") and not isinstance(rendered, str)):
            for item in rendered:
                self.console.print(_masked(item))
        else:
            self.console.print(_masked(rendered))

    def print_json(self, data: Any) -> None:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()

    # building blocks ---------------------------------------------------------
    @staticmethod
    def table(title: str | None, columns: list[str], rows: Iterable[Iterable[Any]], *, footer: Iterable[Any] | None = None,
              right: Iterable[str] = ()) -> Table:
        right = set(right)
        table = Table(title=None if title is None else escape(title), show_footer=footer is not None,
                      title_justify="left")
        footer_cells = list(footer) if footer is not None else []
        for i, col in enumerate(columns):
            table.add_column(col, justify="right" if col in right else "left",
                             footer=str(footer_cells[i]) if i < len(footer_cells) else "")
        for row in rows:
            table.add_row(*["" if cell is None else escape(mask_url_passwords(str(cell))) for cell in row])
        return table

    def info(self, message: str) -> None:
        """Progress notes for people; silent in JSON mode so stdout stays one object."""
        if not self.json_mode:
            self.err.print(_masked(message))

    def warn(self, message: str) -> None:
        self.err.print(f"[yellow]warning:[/yellow] {escape(mask_url_passwords(message))}")

    def error(self, err: MqctlError) -> None:
        self.err.print(f"[red]error:[/red] {escape(mask_url_passwords(err.one_line()))}", markup=True, soft_wrap=True)

    def diff(self, diff_text: str) -> None:
        """Show a unified diff (on stderr in JSON mode so stdout stays parseable)."""
        from rich.syntax import Syntax

        target = self.err if self.json_mode else self.console
        if not diff_text:
            target.print("(no change)")
            return
        target.print(Syntax(mask_url_passwords(diff_text), "diff", theme="ansi_dark", background_color="default"))

    def confirm(self, question: str, *, assume_yes: bool) -> bool:
        """Ask before a mutation; without a terminal the caller must pass --yes."""
        if assume_yes:
            return True
        if not sys.stdin or not sys.stdin.isatty():
            raise PreconditionError(f"{question} — needs confirmation but there is no terminal",
                                    hint="pass --yes to proceed, or --dry-run to only look")
        from rich.prompt import Confirm

        return Confirm.ask(question, console=self.err, default=False)

    def progress(self, *, transient: bool = True):
        """A Rich progress bar on stderr; disabled in JSON mode and when stderr is not a terminal."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=self.err, transient=transient,
                        disable=self.json_mode or not self.err.is_terminal)
