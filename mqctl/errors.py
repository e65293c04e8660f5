"""One error model: every failure a user can cause carries its exit code and a fix hint."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mqctl.secrets import mask_url_passwords

EXIT_OK = 0
EXIT_FINDINGS = 1  # the check ran and found problems (errors, drift)
EXIT_USAGE = 2  # bad usage, unreadable or invalid input
EXIT_PRECONDITION = 3  # a precondition or an external system failed


class MqctlError(Exception):
    """A user-facing error: printed as one line, never as a traceback."""

    exit_code = EXIT_USAGE
    kind = "input"

    def __init__(self, message: str, *, hint: str | None = None, location: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.location = location  # "file:line[:column]" or "file" when known

    def one_line(self) -> str:
        parts = [f"{self.location}: " if self.location else "", self.message]
        if self.hint:
            parts.append(f" — {self.hint}")
        return "".join(parts)


class InputError(MqctlError):
    """Unreadable or invalid input: a file, a key, a value, an option."""

    exit_code = EXIT_USAGE
    kind = "input"


class PreconditionError(MqctlError):
    """The world is not as the operation needs it: server unreachable, refused change."""

    exit_code = EXIT_PRECONDITION
    kind = "precondition"


class Stopped(MqctlError):
    """A stopping signal (Ctrl-C, SIGTERM, SIGHUP) ended a command part way; the message says what it left
    behind, read back where it changed something, never what it meant to do."""

    exit_code = EXIT_PRECONDITION
    kind = "aborted"


# "file", "file:line" or "file:line:column" (a file name may itself hold a colon)
_LOCATION = re.compile(r"(?P<file>.+?)(?::(?P<line>\d+))?(?::(?P<column>\d+))?")


@dataclass(frozen=True)
class ErrorReport:
    """A failure as `--json` prints it: `{"error": {...}}`, one shape for every command and every cause.

    kind: input | precondition | usage (the command line itself) | aborted (Ctrl-C, a declined prompt)
    | internal (a bug: please report it).
    """

    code: int
    kind: str
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    hint: str | None = None

    @classmethod
    def of(cls, err: MqctlError) -> ErrorReport:
        file, line, column = split_location(err.location)
        return cls(err.exit_code, err.kind, err.message, file, line, column, err.hint)

    def as_json(self) -> dict[str, dict[str, str | int | None]]:
        """The JSON object, URL passwords masked as in the text output."""
        return {
            "error": {
                "code": self.code,
                "kind": self.kind,
                "message": mask_url_passwords(self.message),
                "file": None if self.file is None else mask_url_passwords(self.file),
                "line": self.line,
                "column": self.column,
                "hint": None if self.hint is None else mask_url_passwords(self.hint),
            }
        }


def split_location(location: str | None) -> tuple[str | None, int | None, int | None]:
    """`file:line:column` into its parts (line and column None when absent)."""
    if not location:
        return None, None, None
    match = _LOCATION.fullmatch(location)
    if match is None:  # an empty file part, e.g. ":12"
        return location, None, None
    line, column = match["line"], match["column"]
    return match["file"], int(line) if line else None, int(column) if column else None
