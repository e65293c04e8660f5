"""Root command. Sub-command groups are imported only when used, so `mqctl --help` stays fast.

The root help and version are printed without importing click, typer or rich at all.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # click and the error model load only when a command runs
    import click

    from mqctl.errors import ErrorReport

# name -> (module, one-line help). Each module exposes `app` (a typer.Typer).
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": (
        "mqctl.cli.doctor",
        "Is my Milvus healthy? Finds the Milvus running here, checks its MQ, one verdict, a fix per finding.",
    ),
    "exporter": (
        "mqctl.cli.exporter",
        "Serve the doctor's checks as Prometheus metrics (/metrics), reads cached between scrapes.",
    ),
    "bundle": (
        "mqctl.cli.bundle",
        "Write one .tar.gz for a support ticket: configs (secrets masked), doctor, channels, checkpoints, logs.",
    ),
    "config": (
        "mqctl.cli.config",
        "Explain, validate and edit MQ settings (milvus.yaml, user.yaml, Operator CR, Helm values).",
    ),
    "channels": (
        "mqctl.cli.channels",
        "Inspect channels of RocksMQ (offline, read-only) and NATS JetStream; decode messages.",
    ),
    "retention": ("mqctl.cli.retention", "Show configured vs actual retention, find drift and purge blockages; apply."),
    "migrate": (
        "mqctl.cli.migrate.commands",
        "Journaled, resumable MQ migration: stop writes, FlushAll, switch, restart, verify.",
    ),
    "sandbox": ("mqctl.cli.sandbox", "Run a real embedded Milvus 2.3.5 to rehearse migrations on."),
    "replay": ("mqctl.cli.replay", "Replay MQ topics into Apache Spark (local or cluster) for backfill."),
}

ROOT_HELP = """\
Usage: mqctl [OPTIONS] COMMAND [ARGS]...

  Admin and migration tool for the message-queue layer of Milvus.

Options:
  --version   Show the version and exit.
  --debug     Show tracebacks for errors (for bug reports).
  --no-color  Disable colour (NO_COLOR is honoured too).
  --json      Print one JSON object (stable schema, see docs/json.md); also after a command's name.
  --wide      Show every column, full ids and full times (--no-trunc); also after a command's name.
  --help      Show this message and exit.

Commands:
{commands}

Exit codes: 0 ok, 1 findings (errors/drift), 2 bad usage or input, 3 precondition or external failure.
With --json, stdout holds one JSON object whatever happens; a failure is {{"error": {{"code", "kind",
"message", "file", "line", "column", "hint"}}}} with the same exit code.
Run `mqctl COMMAND --help` for a command's options.
"""


def _root_help() -> str:
    width = max(len(n) for n in COMMANDS) + 2
    lines = [f"  {name.ljust(width)}{text}" for name, (_, text) in COMMANDS.items()]
    return ROOT_HELP.format(commands="\n".join(lines))


def _build_root() -> click.Group:
    import click
    import typer.main

    from mqctl import __version__

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return list(COMMANDS)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            if name not in COMMANDS:
                return None
            import importlib

            from mqctl.cli.context import add_options

            module = importlib.import_module(COMMANDS[name][0])
            command = typer.main.get_command(module.app)
            command.name = name
            add_options(command, name)  # --json and --wide after the command's name too, read from the root
            return command

    from mqctl.cli.context import root_options

    @click.group(cls=LazyGroup, help="Admin and migration tool for the message-queue layer of Milvus.")
    @click.version_option(__version__, prog_name="mqctl")
    @click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
    @click.option("--no-color", is_flag=True, help="Disable colour.")
    @root_options
    @click.pass_context
    def root(ctx: click.Context, debug: bool, no_color: bool, json: bool, wide: bool) -> None:
        settings = ctx.ensure_object(dict)  # the one context every command reads (mqctl.cli.context)
        settings.update(debug=debug, no_color=no_color, json=json, wide=wide)

    return root


COMPLETE_VARIABLE = "_MQCTL_COMPLETE"  # click's shell completion: eval "$(_MQCTL_COMPLETE=bash_source mqctl)"


def main(argv: list[str] | None = None) -> int:
    """The console script and `python -m mqctl`: run the command and exit with its code (0-3, see ROOT_HELP).

    The stopping signals get mqctl's handler before anything else happens, so Ctrl-C, SIGTERM or SIGHUP at any
    moment after the interpreter reached this line (while the CLI is imported and built, while the command
    runs, while the result is printed) ends in one line, `error: interrupted (...)`, and exit 3 — never a
    traceback, never 130 or 143. Once the exit code is decided a signal can no longer change it."""
    args = list(sys.argv[1:] if argv is None else argv)
    import os

    if os.environ.get(COMPLETE_VARIABLE):  # the shell asks for its script or for completions (bash, zsh, fish)
        _build_root().main(args=args, prog_name="mqctl", complete_var=COMPLETE_VARIABLE)
        return 0
    if not args or args in (["--help"], ["-h"]) or args == ["--version"]:
        return _root_text(args)  # instant, no handler to install (mqctl/__init__.py's covers the CLI's start)
    from mqctl import interrupts

    interrupts.install()  # first: SIGTERM and SIGHUP unwind like Ctrl-C, cleanup runs
    try:
        code = _main(args)
    except KeyboardInterrupt as interrupt:  # between the handlers and the command (imports, start-up)
        code = _interrupted(interrupt, args)
    interrupts.after_result(code)
    _leave(code)
    return code  # not reached


def _leave(code: int) -> None:
    """Exit with `code`, running the atexit functions and flushing the streams first, without the interpreter's
    own shutdown: that restores the default signal handlers, so a SIGTERM in its last milliseconds used to end a
    finished command with 143 and no word; here a signal can only end it sooner with the same code."""
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`mqctl ... | head`): nothing more can be written
            pass
    os._exit(code)


def _root_text(args: list[str]) -> int:
    """The root help or the version, printed without importing click, typer or rich."""
    if args == ["--version"]:
        from mqctl import __version__

        sys.stdout.write(f"mqctl, version {__version__}\n")
        return 0
    sys.stdout.write(_root_help())
    return 0


def _main(args: list[str]) -> int:
    _quiet_warnings(debug="--debug" in _options(args))
    for stream in (sys.stdout, sys.stderr):  # an ASCII-only terminal gets \u2013 escapes, not an encoding error
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        return run(args)
    except KeyboardInterrupt as interrupt:  # while a failure was being printed
        return _interrupted(interrupt, args)


def _quiet_warnings(*, debug: bool) -> None:
    """A library's warning (a deprecation in click, pyspark, protobuf...) or root-logger record never ends or
    clutters a command, even under PYTHONWARNINGS=error: warnings are ignored, in this process and in the Python
    workers Spark starts (which inherit the environment). --debug keeps them, as Python's defaults show them."""
    import os
    import warnings

    if debug:
        return
    os.environ.pop("PYTHONWARNINGS", None)
    warnings.resetwarnings()
    warnings.simplefilter("ignore")
    # a library that logs through the root logger (py4j logs an interrupted call with its traceback) would print
    # on stderr, through logging's basicConfig or last resort: a handler that keeps it quiet; --debug shows it.
    # Added as logging loads, by whoever imports it: a command that never logs does not import it (3 ms)
    if "logging" in sys.modules:
        _quiet_root_logger(sys.modules["logging"])
    else:
        sys.meta_path.insert(0, _WhenLoggingLoads())


def _quiet_root_logger(logging: Any) -> None:
    logging.getLogger().addHandler(logging.NullHandler())


class _WhenLoggingLoads:
    """An import finder that steps aside for every module but `logging`, and quiets its root logger once loaded."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> Any:
        if name != "logging":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is not None and hasattr(loader, "exec_module"):
            load = loader.exec_module

            def exec_module(module: Any) -> None:
                load(module)
                _quiet_root_logger(module)

            loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's own loader only
        return spec


def _interrupted(interrupt: BaseException, args: list[str]) -> int:
    """Report a stop that came outside a command: one line on stderr (and the error object with --json)."""
    import json

    from mqctl.errors import EXIT_PRECONDITION, ErrorReport
    from mqctl.interrupts import describe, held

    with held():  # a second Ctrl-C cannot cut the line in half
        reason = describe(interrupt)
        sys.stderr.write(f"error: {reason}\n")
        if _json_wanted(args) and not _json_already_printed():
            report = ErrorReport(EXIT_PRECONDITION, "aborted", reason)
            sys.stdout.write(json.dumps(report.as_json(), indent=2) + "\n")
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    return EXIT_PRECONDITION


def _json_already_printed() -> bool:
    terminal = sys.modules.get("mqctl.cli.terminal")
    return bool(getattr(terminal, "_json_printed", False))


def run(args: list[str]) -> int:
    """Run the CLI in-process and return its exit code; with `--json` every failure is an error object on stdout."""
    settings: dict[str, object] = {}  # the root context's object: what the command line said (mqctl.cli.context)
    report = _run(args, settings)
    if report is None:
        return 0
    from mqctl.cli.terminal import Output

    Output(json_mode=_json_wanted(args, settings)).fail(report)
    return report.code


def _json_wanted(args: list[str], settings: dict[str, object] | None = None) -> bool:
    """Whether --json was given: the root context says once the command line parsed; a line that did not parse (an
    unknown option before `--json`, a signal while the CLI loads) is taken at its word."""
    return bool(settings and settings.get("json")) or "--json" in _options(args)


def _options(args: list[str]) -> list[str]:
    """The arguments before a `--` (after it, `--json` would be a value)."""
    return args[: args.index("--")] if "--" in args else args


def _run(args: list[str], settings: dict[str, object]) -> ErrorReport | None:
    """Run the root command: None on success, else how it failed (the one-line message is on stderr already)."""
    import click

    from mqctl.errors import EXIT_PRECONDITION, EXIT_USAGE, ErrorReport, MqctlError
    from mqctl.interrupts import describe

    debug = "--debug" in _options(args)
    # a command that ends with an exit code and no result: its result, when printed, stays the one object
    stopped = "stopped before a result (a confirmation was declined or the change refused; see stderr)"
    root = _build_root()
    try:
        # what click's `main(standalone_mode=False)` does, minus the blank line it writes to stderr on Ctrl-C
        # before turning it into Abort: the one line below is all an interrupted command prints
        try:
            with root.make_context("mqctl", list(args), obj=settings) as ctx:
                returned = root.invoke(ctx)
        except EOFError as eof:  # a prompt read the end of stdin
            raise click.exceptions.Abort() from eof
        code = returned if isinstance(returned, int) else 0
        return ErrorReport(code, "aborted", stopped) if code else None
    except MqctlError as err:
        _traceback_for(debug)
        from mqctl.cli.terminal import Output

        Output(no_color="--no-color" in _options(args)).error(err)
        return ErrorReport.of(err)
    except click.exceptions.Exit as done:
        return ErrorReport(done.exit_code, "aborted", stopped) if done.exit_code else None
    except click.exceptions.Abort as abort:
        reason = describe(abort.__context__) if isinstance(abort.__context__, KeyboardInterrupt) else "aborted"
        sys.stderr.write(f"error: {reason}\n")
        return ErrorReport(EXIT_PRECONDITION, "aborted", reason)
    except click.ClickException as err:  # one line, as every other error (not click's Usage/Try/Error block)
        report = _click_report(err, EXIT_USAGE if err.exit_code == 2 else err.exit_code)
        from mqctl.cli.terminal import Output

        Output(no_color="--no-color" in _options(args)).error(MqctlError(report.message, hint=report.hint))
        return report
    except KeyboardInterrupt as interrupt:  # outside a command (while the CLI is built or a result printed)
        sys.stderr.write(f"error: {describe(interrupt)}\n")
        return ErrorReport(EXIT_PRECONDITION, "aborted", describe(interrupt))
    except Exception as err:
        wrapped = _interrupt_inside(err)
        if wrapped is not None:  # a signal raised inside code that wraps what it raises (e.g. __set_name__)
            sys.stderr.write(f"error: {describe(wrapped)}\n")
            return ErrorReport(EXIT_PRECONDITION, "aborted", describe(wrapped))
        _traceback_for(debug)
        from mqctl.cli.terminal import shown

        sys.stderr.write(
            shown(f"error: internal error: {type(err).__name__}: {err} (run with --debug for a traceback)") + "\n"
        )
        return ErrorReport(
            EXIT_PRECONDITION,
            "internal",
            f"internal error: {type(err).__name__}: {err}",
            hint="run with --debug for a traceback, and report it",
        )


def _interrupt_inside(err: BaseException) -> KeyboardInterrupt | None:
    """The interrupt an exception was raised from, when one was: Python wraps an exception raised while a class
    is created (`__set_name__`) in RuntimeError, and some libraries re-raise what stopped them as their own."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _traceback_for(debug: bool) -> None:
    """With --debug, the traceback of the error being handled (on stderr, for bug reports)."""
    if debug:
        import traceback

        traceback.print_exc()


def _click_report(err: click.ClickException, code: int) -> ErrorReport:
    """A command-line mistake (unknown option, bad value, missing argument) or a file click could not open."""
    import click

    from mqctl.errors import ErrorReport

    if isinstance(err, click.FileError):
        return ErrorReport(code, "input", err.format_message(), file=err.ui_filename)
    if isinstance(err, click.UsageError):
        command = err.ctx.command_path if err.ctx is not None else "mqctl"
        return ErrorReport(code, "usage", err.format_message(), hint=f"see `{command} --help`")
    return ErrorReport(code, "input", err.format_message())
