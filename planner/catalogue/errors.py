"""One error type for bad profile input: what is wrong, where, and how to fix it."""

from __future__ import annotations


class ProfileError(ValueError):
    """A user-fixable problem in a profile file or catalogue entry.

    ``where`` names the row/column or JSON path; ``hint`` says how to fix it.
    """

    def __init__(self, message: str, *, where: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def as_dict(self) -> dict:
        return {"message": self.message, "where": self.where, "hint": self.hint}

    def __str__(self) -> str:
        parts = [self.message]
        if self.where:
            parts.append(f"(at {self.where})")
        if self.hint:
            parts.append(f"- {self.hint}")
        return " ".join(parts)
