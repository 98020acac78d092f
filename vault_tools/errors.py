"""The project's own exceptions. Each carries the exit code the CLI returns for it.

Exit codes: 0 ok; 1 refused or findings; 2 bad usage or configuration;
3 the vault's state is inconsistent; 4 an internal error (a bug); 130 interrupted;
141 the pipe its output went to was closed.
"""
from __future__ import annotations

# 128 + SIGPIPE: what a shell says of a command whose output pipe was closed (`vault-tools lint | head`)
PIPE_CLOSED = 141


class VaultToolsError(Exception):
    """An expected failure: the message is one line meant for the user."""

    exit_code = 3

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 details: list[str] | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.details = details or []  # further lines shown under the message
        super().__init__(message)

    def __str__(self) -> str:
        return self.where() + self.message

    def where(self) -> str:
        if self.path is None:
            return ""
        return f"{self.path}:{self.line}: " if self.line else f"{self.path}: "


class Refused(VaultToolsError):
    """The request is understood but the ledger's rules say no."""

    exit_code = 1


class PossibleMatch(Refused):
    """A question that may be the matter of decisions already recorded: the asker reads them and says
    (`--not-the-same` each of `nearest`, or `--reask-reason`)."""

    def __init__(self, message: str, nearest: tuple[str, ...], details: list[str], *, same: bool = False) -> None:
        super().__init__(message, details=details)
        self.nearest = nearest
        self.same = same  # the nearest is the same matter (the strong tier), not only possibly


class Unfinished(VaultToolsError):
    """Work done as far as it could go now; what is left, and why, is named."""

    exit_code = 1


class NotFound(VaultToolsError):
    """No decision has the id asked for."""

    exit_code = 1


class UsageError(VaultToolsError):
    """Bad arguments or a bad value typed by the caller."""

    exit_code = 2


class ConfigError(VaultToolsError):
    """`vault-tools/config.yaml` is wrong, or no vault was found."""

    exit_code = 2


class NoteError(VaultToolsError):
    """A decision note cannot be read or does not follow the schema."""

    exit_code = 3


class InconsistentVault(VaultToolsError):
    """The vault and its ledger disagree, or the ledger is damaged."""

    exit_code = 3
