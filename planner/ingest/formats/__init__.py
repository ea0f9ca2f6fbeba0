"""Format detection and streaming parsers.

Every parser yields ``RawChunk`` frames with the same columns:

- ``t_ns`` int64: arrival on the file's own clock in nanoseconds (epoch for timestamps, or
  seconds-from-zero for numeric times); the normaliser later shifts it to the trace start
- ``input_tokens``, ``output_tokens`` int64 >= 0
- optionally ``region``, ``model``, ``tier``, ``session_id`` (str), ``deadline_ns`` (int64 on the
  same clock as ``t_ns``, or the ``NO_DEADLINE`` sentinel), ``failed`` (bool), ``hash_ids``
  (lists of int), and ``src:<column>`` string copies of columns a mapping asked to keep.

Bad values raise ``TraceFormatError`` naming the line, the column and the fix.

Where things live: ``spec`` (format names, columns, help; ``Detected``, ``RawChunk``), ``detect`` (which format
a file is), ``chunks`` (chunked CSV / JSON-lines readers), ``header`` (finding columns in a header),
``columns`` (value converters), and one module per parser family: ``csv_traces`` (Azure, BurstGPT),
``mooncake``, ``native`` (CSV, JSON lines, Parquet).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from planner.ingest.formats.columns import (
    bool_column,
    looks_numeric,
    seconds_column,
    string_column,
    tier_column,
    timestamp_column,
    token_column,
)
from planner.ingest.formats.csv_traces import CSV_SPECS, CsvSpec, parse_csv_trace
from planner.ingest.formats.detect import detect
from planner.ingest.formats.mooncake import parse_mooncake
from planner.ingest.formats.native import native_columns, parse_native_csv, parse_native_jsonl, parse_parquet
from planner.ingest.formats.spec import (
    AZURE_COLUMNS,
    AZURE_OPTIONAL,
    BURSTGPT_COLUMNS,
    BURSTGPT_OPTIONAL,
    FORMAT_HELP,
    FORMATS,
    INT32_MAX,
    MOONCAKE_KEYS,
    MOONCAKE_OPTIONAL,
    NATIVE_ARRIVAL,
    NATIVE_INPUT,
    NATIVE_OPTIONAL,
    NATIVE_OUTPUT,
    NO_DEADLINE,
    TIERS,
    Detected,
    RawChunk,
    expected_formats_hint,
)
from planner.ingest.reader import DEFAULT_MAX_LINE_BYTES

__all__ = [
    "AZURE_COLUMNS",
    "AZURE_OPTIONAL",
    "BURSTGPT_COLUMNS",
    "BURSTGPT_OPTIONAL",
    "CSV_SPECS",
    "FORMATS",
    "FORMAT_HELP",
    "INT32_MAX",
    "MOONCAKE_KEYS",
    "MOONCAKE_OPTIONAL",
    "NATIVE_ARRIVAL",
    "NATIVE_INPUT",
    "NATIVE_OPTIONAL",
    "NATIVE_OUTPUT",
    "NO_DEADLINE",
    "TIERS",
    "CsvSpec",
    "Detected",
    "RawChunk",
    "bool_column",
    "detect",
    "expected_formats_hint",
    "looks_numeric",
    "native_columns",
    "parse",
    "parse_csv_trace",
    "parse_mooncake",
    "parse_native_csv",
    "parse_native_jsonl",
    "parse_parquet",
    "seconds_column",
    "string_column",
    "tier_column",
    "timestamp_column",
    "token_column",
]


def parse(
    path: str | Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 1_000_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    path = Path(path)
    kw = {"keep": keep, "chunk_rows": chunk_rows, "max_line_bytes": max_line_bytes}
    if det.kind == "parquet":
        return parse_parquet(path, det, **kw)
    if det.format in CSV_SPECS:
        return parse_csv_trace(CSV_SPECS[det.format], path, det, **kw)
    if det.format == "mooncake":
        return parse_mooncake(path, det, **{**kw, "chunk_rows": min(chunk_rows, 200_000)})
    if det.kind == "jsonl":
        return parse_native_jsonl(path, det, **{**kw, "chunk_rows": min(chunk_rows, 200_000)})
    return parse_native_csv(path, det, **kw)
