"""Errors of trace imports a user can fix, with the HTTP status the API answers with."""

from __future__ import annotations

from typing import Any

from planner.ingest.errors import TraceFormatError
from planner.traces.models import Trace


class TraceInputError(Exception):
    """Bad input a user can fix; ``status`` is the HTTP status the API answers with."""

    status = 400

    def __init__(
        self,
        message: str,
        *,
        where: str = "",
        hint: str = "",
        line: int | None = None,
        column: str | None = None,
        status: int | None = None,
        extra: dict | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint
        self.line = line
        self.column = column
        self.extra = extra or {}
        if status is not None:
            self.status = status

    @classmethod
    def from_format_error(cls, exc: TraceFormatError) -> TraceInputError:
        return cls(exc.message, where=exc.where, hint=exc.hint, line=exc.line, column=exc.column)

    def as_dict(self) -> dict:
        body: dict[str, Any] = {"message": self.message, "where": self.where, "hint": self.hint}
        if self.line is not None:
            body["line"] = self.line
        if self.column:
            body["column"] = self.column
        body.update(self.extra)
        return body

    def __str__(self) -> str:
        parts = [f"{self.where}: {self.message}" if self.where else self.message]
        if self.hint:
            parts.append(f"(fix: {self.hint})")
        return " ".join(parts)


class DuplicateTrace(TraceInputError):
    status = 409

    def __init__(self, existing: Trace) -> None:
        super().__init__(
            f"this team already has this trace with the same options: #{existing.pk} {existing.name!r}",
            where="file",
            hint=f"use trace #{existing.pk}, delete it first, or upload with different options",
            extra={"existing": {"id": existing.pk, "name": existing.name, "url": f"/api/traces/{existing.pk}/"}},
        )
        self.existing = existing
