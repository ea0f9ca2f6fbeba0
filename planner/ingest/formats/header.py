"""Header mapping: find a format's columns in the file's header (case-insensitive), the columns a mapping
asked to keep, and reject the ones nobody asked for."""

from __future__ import annotations

from collections.abc import Sequence

from planner.ingest.errors import TraceFormatError


def resolve(header: list[str], names: Sequence[str]) -> str | None:
    """The file's spelling of the first of ``names`` in ``header``, or None."""
    lower = {h.lower(): h for h in header}
    for name in names:
        if name.lower() in lower:
            return lower[name.lower()]
    return None


def keep_columns(header: list[str], keep: Sequence[str]) -> dict[str, str]:
    out = {}
    for name in keep:
        actual = resolve(header, [name])
        if actual is None:
            raise TraceFormatError(
                f"the mapping refers to column {name!r}, which the file does not have",
                line=1,
                hint=f"map from one of the file's columns: {header}",
            )
        out[name] = actual
    return out


def reject_unknown_columns(header: list[str], known: set[str], kept: dict[str, str], fmt: str, hint: str) -> None:
    unknown = [h for h in header if h.lower() not in known and h not in kept.values()]
    if unknown:
        raise TraceFormatError(f"unknown column(s) {unknown} for the {fmt} format", line=1, hint=hint)
