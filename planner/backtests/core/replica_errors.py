"""The replica record's error (naming row and column) and count check, shared by its readers. Django-free."""

from __future__ import annotations

MAX_ROWS = 200_000


class ReplicaFileError(ValueError):
    def __init__(self, where: str, message: str, hint: str = "") -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message
        self.hint = hint


def whole_number(raw: str, where: str, what: str) -> int:
    """``raw`` as a count >= 0; else a ReplicaFileError at ``where`` saying it is not ``what``."""
    try:
        value = int(raw)
    except ValueError:
        raise ReplicaFileError(where, f"{raw!r} is not {what}") from None
    if value < 0:
        raise ReplicaFileError(where, f"{value} is negative")
    return value
