"""The one error type the ingest raises for bad input: what, where and how to fix it."""

from __future__ import annotations


class TraceFormatError(ValueError):
    """A trace the user can fix. ``line`` is 1-based in the (decompressed) file, header = line 1."""

    def __init__(self, message: str, *, line: int | None = None, column: str | None = None, hint: str = "") -> None:
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint
        super().__init__(self.__str__())

    @property
    def where(self) -> str:
        parts = []
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.column:
            parts.append(f"column {self.column!r}")
        return ", ".join(parts) or "file"

    def __str__(self) -> str:
        text = self.message
        if self.line is not None or self.column:
            text = f"{self.where}: {text}"
        if self.hint:
            text = f"{text} (fix: {self.hint})"
        return text

    def as_dict(self) -> dict:
        return {
            "message": self.message,
            "where": self.where,
            "hint": self.hint,
            "line": self.line,
            "column": self.column,
        }
