"""One error type for a bad benchmark upload: what is wrong, in which file and field, and how to fix it."""

from __future__ import annotations


class BenchmarkError(ValueError):
    def __init__(self, message: str, *, file: str = "", field: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.field = field
        self.hint = hint

    @property
    def where(self) -> str:
        return ": ".join(p for p in (self.file, self.field) if p) or "upload"

    def as_dict(self) -> dict:
        return {"message": self.message, "where": self.where, "hint": self.hint}

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}"
        return f"{text} (fix: {self.hint})" if self.hint else text
