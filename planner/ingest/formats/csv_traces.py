"""The published CSV traces with fixed columns (Azure LLM inference, BurstGPT): one parser, driven by a table
of what differs between them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from planner.ingest.formats.chunks import csv_chunks
from planner.ingest.formats.columns import kept_columns, string_column, timed, tokens
from planner.ingest.formats.header import keep_columns, reject_unknown_columns, resolve
from planner.ingest.formats.spec import (
    AZURE_COLUMNS,
    AZURE_OPTIONAL,
    BURSTGPT_COLUMNS,
    BURSTGPT_OPTIONAL,
    FORMAT_HELP,
    Detected,
    RawChunk,
)
from planner.ingest.reader import DEFAULT_MAX_LINE_BYTES


@dataclass(frozen=True)
class CsvSpec:
    """One fixed-column CSV format. Column names are as the format spells them; matching is case-insensitive."""

    name: str
    arrival: str
    # (output column, file column) in the order they are converted: the first one with a bad value is reported
    token_columns: tuple[tuple[str, str], tuple[str, str]]
    known: frozenset[str]  # lower-case names of every column the format may have
    unknown_hint: str
    arrival_as_text: bool = False  # read arrival times as text (ISO timestamps), not as numbers
    model: str | None = None  # optional column copied as ``model``
    failed_without_output: bool = False  # a request that produced no tokens failed


CSV_SPECS = {
    "azure": CsvSpec(
        name="azure",
        arrival="TIMESTAMP",
        token_columns=(("input_tokens", "ContextTokens"), ("output_tokens", "GeneratedTokens")),
        known=frozenset(AZURE_COLUMNS) | frozenset(AZURE_OPTIONAL),
        unknown_hint="azure traces have "
        + FORMAT_HELP["azure"]
        + "; remove the extra columns or use the native format",
        arrival_as_text=True,
    ),
    "burstgpt": CsvSpec(
        name="burstgpt",
        arrival="Timestamp",
        token_columns=(("output_tokens", "Response tokens"), ("input_tokens", "Request tokens")),
        known=frozenset(BURSTGPT_COLUMNS) | frozenset(BURSTGPT_OPTIONAL),
        unknown_hint="BurstGPT traces have " + FORMAT_HELP["burstgpt"],
        model="Model",
        failed_without_output=True,
    ),
}


def parse_csv_trace(
    spec: CsvSpec,
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 1_000_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    ts = resolve(det.header, [spec.arrival])
    counted = [(out, resolve(det.header, [column])) for out, column in spec.token_columns]
    model = resolve(det.header, [spec.model]) if spec.model else None
    kept = keep_columns(det.header, keep)
    reject_unknown_columns(det.header, spec.known, kept, spec.name, spec.unknown_hint)
    dtypes = {c: str for c in kept.values()}
    if spec.arrival_as_text:
        dtypes[ts] = str
    if model:
        dtypes[model] = str
    for frame, first, blank, prog in csv_chunks(path, dtypes, chunk_rows, max_line_bytes):
        t = timed(frame[ts], ts, first, blank)
        counts = {out: tokens(frame[column], column, first, blank) for out, column in counted}
        out = pd.DataFrame(
            {"t_ns": t, "input_tokens": counts["input_tokens"], "output_tokens": counts["output_tokens"]}
        )
        if spec.failed_without_output:
            out["failed"] = counts["output_tokens"] == 0
        if model:
            out["model"] = string_column(frame[model][~blank], "default")
        yield RawChunk(kept_columns(out, frame, kept, blank), first, prog)
