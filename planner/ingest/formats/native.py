"""The native format (our own column names) as CSV, JSON lines or Parquet."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from planner.ingest.errors import TraceFormatError
from planner.ingest.formats.chunks import csv_chunks, json_chunks
from planner.ingest.formats.columns import (
    bool_column,
    first_bad,
    hash_lists,
    kept_columns,
    line_numbers,
    looks_numeric,
    relined,
    seconds_column,
    string_column,
    tier_column,
    timed,
    timestamp_column,
    tokens,
)
from planner.ingest.formats.header import keep_columns, resolve
from planner.ingest.formats.spec import (
    NATIVE_ARRIVAL,
    NATIVE_INPUT,
    NATIVE_OPTIONAL,
    NATIVE_OUTPUT,
    NO_DEADLINE,
    Detected,
    RawChunk,
)
from planner.ingest.reader import DEFAULT_MAX_LINE_BYTES


def native_columns(header: list[str], keep: Sequence[str] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """Map the native schema's names to the file's column names, and the mapped ``keep`` columns to theirs;
    reject unknown columns."""
    cols = {
        "arrival": resolve(header, NATIVE_ARRIVAL),
        "input_tokens": resolve(header, NATIVE_INPUT),
        "output_tokens": resolve(header, NATIVE_OUTPUT),
    }
    for opt in NATIVE_OPTIONAL:
        actual = resolve(header, [opt])
        if actual:
            cols[opt] = actual
    if "deadline_s" in cols and "deadline" in cols:
        raise TraceFormatError("both deadline_s and deadline columns are present", line=1, hint="keep one of them")
    kept = keep_columns(header, keep)
    used = set(cols.values()) | set(kept.values())
    unknown = [h for h in header if h not in used]
    if unknown:
        raise TraceFormatError(
            f"unknown column(s) {unknown} for the native format",
            line=1,
            hint="native columns are arrival_s (or timestamp), input_tokens, output_tokens and optional "
            f"{', '.join(NATIVE_OPTIONAL)}; rename or remove the others, or map them with a column mapping",
        )
    return cols, kept


def _native_frame(
    frame: pd.DataFrame, cols: dict[str, str], kept: dict[str, str], first: int, blank: np.ndarray, time_mode: list
) -> pd.DataFrame:
    arrival = frame[cols["arrival"]]
    sub = arrival[~blank].reset_index(drop=True)
    numeric = looks_numeric(sub) if len(sub) else True
    if time_mode[0] is None:
        time_mode[0] = "seconds" if numeric else "timestamp"
    elif (time_mode[0] == "seconds") != numeric:
        lines = line_numbers(first, blank)
        raise TraceFormatError(
            f"mixes numeric seconds and timestamps (this file started with {time_mode[0]})",
            line=int(lines[0]),
            column=cols["arrival"],
            hint="use one kind of arrival time throughout the file",
        )
    t = timed(arrival, cols["arrival"], first, blank)
    out = pd.DataFrame(
        {
            "t_ns": t,
            "input_tokens": tokens(frame[cols["input_tokens"]], cols["input_tokens"], first, blank),
            "output_tokens": tokens(frame[cols["output_tokens"]], cols["output_tokens"], first, blank),
        }
    )
    lines = line_numbers(first, blank)

    def sub_col(name):
        return frame[cols[name]][~blank].reset_index(drop=True)

    for name, default in (("region", "region-1"), ("model", "default"), ("session_id", "")):
        if name in cols:
            out[name] = string_column(sub_col(name), default)
    if "tier" in cols:
        out["tier"] = relined(tier_column, lines, sub_col("tier"), cols["tier"], 0)
    if "failed" in cols:
        out["failed"] = relined(bool_column, lines, sub_col("failed"), cols["failed"], 0)
    for name in ("deadline_s", "deadline", "slo_s"):
        if name not in cols:
            continue
        values = sub_col(name)
        empty = values.isna().to_numpy() | (values.astype("string").str.strip() == "").fillna(True).to_numpy()
        deadline = np.full(len(values), NO_DEADLINE, dtype=np.int64)
        if (~empty).any():
            present = values[~empty].reset_index(drop=True)
            idx = np.flatnonzero(~empty)
            as_timestamp = name == "deadline" and time_mode[0] == "timestamp" and not looks_numeric(present)
            parse = timestamp_column if as_timestamp else seconds_column
            vals = relined(parse, lines[idx], present, cols[name], 0)
            if name == "slo_s":
                vals = vals + t[idx]
            deadline[idx] = vals
        out["deadline_ns"] = deadline
    if "hash_ids" in cols:
        out["hash_ids"] = hash_lists(sub_col("hash_ids"), lines)
    return kept_columns(out, frame, kept, blank)


def parse_native_csv(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 1_000_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    cols, kept = native_columns(det.header, keep)
    text_cols = [c for k, c in cols.items() if k not in ("input_tokens", "output_tokens")]
    dtypes = {c: str for c in text_cols + list(kept.values())}
    mode: list = [None]
    for frame, first, blank, prog in csv_chunks(path, dtypes, chunk_rows, max_line_bytes):
        yield RawChunk(_native_frame(frame, cols, kept, first, blank, mode), first, prog)


def parse_native_jsonl(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 200_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    mode: list = [None]
    for records, lines, prog in json_chunks(path, chunk_rows, max_line_bytes):
        frame = pd.DataFrame.from_records(records)
        frame.columns = [str(c) for c in frame.columns]
        cols, kept = native_columns(list(frame.columns), keep)
        for key, names in (("arrival", NATIVE_ARRIVAL), ("input_tokens", NATIVE_INPUT), ("output_tokens", NATIVE_OUTPUT)):
            if cols[key] is None:  # no line of this chunk has the key (a later chunk: the header came from line 1)
                raise TraceFormatError(
                    f"the key {names[0]!r} is missing",
                    line=int(lines[0]),
                    hint="every line needs arrival_s (or timestamp), input_tokens, output_tokens",
                )
            missing = frame[cols[key]].isna().to_numpy()
            if missing.any():
                raise TraceFormatError(
                    f"the key {cols[key]!r} is missing",
                    line=int(lines[first_bad(missing)]),
                    hint="every line needs arrival_s (or timestamp), input_tokens, output_tokens",
                )
        # Lines are all non-blank here, so "blank" is empty and line numbers come from ``lines``.
        frame = frame.astype(
            {c: object for c in frame.columns if c not in (cols["input_tokens"], cols["output_tokens"])}
        )
        out = relined(_native_frame, lines, frame, cols, kept, 0, np.zeros(len(frame), bool), mode)
        yield RawChunk(out, int(lines[0]), prog)


def parse_parquet(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 500_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    """A normalised (or native-columned) Parquet trace, e.g. from the synthesiser. "Lines" are rows + 1."""
    import pyarrow.parquet as pq

    cols, kept = native_columns(det.header, keep)
    pf = pq.ParquetFile(path)
    total = max(pf.metadata.num_rows, 1)
    first = 2
    mode: list = [None]
    for batch in pf.iter_batches(batch_size=chunk_rows):
        frame = batch.to_pandas()
        for name in frame.columns:
            if isinstance(frame[name].dtype, pd.CategoricalDtype):
                frame[name] = frame[name].astype(object)
        if cols.get("deadline_s") in frame.columns:  # NaN means "no deadline" in the contract
            frame[cols["deadline_s"]] = (
                frame[cols["deadline_s"]].astype(object).where(frame[cols["deadline_s"]].notna(), "")
            )
        n = len(frame)
        out = _native_frame(frame, cols, kept, first, np.zeros(n, bool), mode)
        first += n
        yield RawChunk(out, first - n, min((first - 2) / total, 1.0))
