"""Mooncake traces: JSON lines with a millisecond timestamp, token counts and prefix-block hashes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd

from planner.ingest.errors import TraceFormatError
from planner.ingest.formats.chunks import json_chunks, records_frame
from planner.ingest.formats.columns import first_bad, hash_lists, relined, seconds_column, string_column, token_column
from planner.ingest.formats.spec import MOONCAKE_KEYS, MOONCAKE_OPTIONAL, Detected, RawChunk
from planner.ingest.reader import DEFAULT_MAX_LINE_BYTES


def parse_mooncake(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 200_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    for records, lines, prog in json_chunks(path, chunk_rows, max_line_bytes):
        frame = records_frame(records, lines, ["timestamp", "input_length", "output_length"])
        unknown = [c for c in frame.columns if c not in MOONCAKE_KEYS | MOONCAKE_OPTIONAL | {k.lower() for k in keep}]
        if unknown:
            bad = frame[unknown].notna().any(axis=1).to_numpy()
            raise TraceFormatError(
                f"unknown key(s) {unknown} for the mooncake format",
                line=int(lines[first_bad(bad)]),
                hint="mooncake lines have timestamp (ms), input_length, output_length, hash_ids",
            )
        out = pd.DataFrame(
            {
                "t_ns": relined(seconds_column, lines, frame["timestamp"], "timestamp", 0, scale=1e-3),  # ms
                "input_tokens": relined(token_column, lines, frame["input_length"], "input_length", 0),
                "output_tokens": relined(token_column, lines, frame["output_length"], "output_length", 0),
            }
        )
        if "hash_ids" in frame.columns:
            out["hash_ids"] = hash_lists(frame["hash_ids"], lines)
        for name in keep:
            out[f"src:{name}"] = string_column(
                frame[name.lower()] if name.lower() in frame else pd.Series([""] * len(frame)), ""
            )
        yield RawChunk(out, int(lines[0]), prog)
