"""One error model: every failure a user can cause carries its exit code and a fix hint."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1  # the check ran and found problems (errors, drift)
EXIT_USAGE = 2  # bad usage, unreadable or invalid input
EXIT_PRECONDITION = 3  # a precondition or an external system failed


class MqctlError(Exception):
    """A user-facing error: printed as one line, never as a traceback."""

    exit_code = EXIT_USAGE

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


class PreconditionError(MqctlError):
    """The world is not as the operation needs it: server unreachable, refused change."""

    exit_code = EXIT_PRECONDITION
