"""Ingest a trace file into a normalised Parquet file, streaming in bounded memory.

A file already in arrival order (the common case) is parsed, transformed and written in one pass.
When an earlier arrival turns up, that attempt is dropped and the file is read again in two passes:
pass 1 parses it chunk by chunk into a staging Parquet file (absolute nanosecond times); pass 2 reads
that back in arrival order (sorted in memory when small, or bucketed by time range and sorted bucket
by bucket when large), applies the transforms and writes the normalised file. Nothing is left behind
on failure: the staging directory is removed and the output only appears, by rename, on success.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from planner.ingest import formats
from planner.ingest.errors import TraceFormatError
from planner.ingest.limits import IngestLimits
from planner.ingest.limits import active as active_limits
from planner.ingest.limits import current as current_limits
from planner.ingest.normalised import NormalisedWriter, use_returning_memory_pool
from planner.ingest.reader import DEFAULT_MAX_LINE_BYTES
from planner.ingest.transforms import Transformer, TransformOptions

Progress = Callable[[float, str], None]
SORT_IN_MEMORY_ROWS = 4_000_000
BUCKET_ROWS = 2_000_000

STAGE_TYPES = {
    "t_ns": pa.int64(),
    "input_tokens": pa.int32(),
    "output_tokens": pa.int32(),
    "region": pa.string(),
    "model": pa.string(),
    "tier": pa.string(),
    "session_id": pa.string(),
    "deadline_ns": pa.int64(),
    "failed": pa.bool_(),
    "hash_ids": pa.list_(pa.int64()),
}


@dataclass
class IngestResult:
    format: str
    requests: int
    span_s: float
    input_tokens: int
    output_tokens: int
    source_rows: int
    was_sorted: bool
    failed: int = 0
    columns: list[str] = field(default_factory=list)
    groups: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    start_epoch_s: float | None = None  # wall-clock start when the file had timestamps

    def as_dict(self) -> dict:
        return asdict(self)


def _noop(fraction: float, message: str = "") -> None:
    return None


def _load_trim():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


_MALLOC_TRIM = _load_trim()


def _trim() -> None:
    """Hand freed heap pages back to the OS between chunks (parsing churns many small strings)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _stage_schema(frame: pd.DataFrame) -> pa.Schema:
    fields = []
    for name in frame.columns:
        fields.append((name, STAGE_TYPES.get(name, pa.string())))
    return pa.schema(fields)


def _to_stage_table(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    arrays = []
    for f in schema:
        if f.name in frame.columns:
            values = frame[f.name]
        elif f.name == "hash_ids":
            values = pd.Series([[]] * len(frame), dtype=object)
        else:
            raise AssertionError(f"parser changed its columns mid-file ({f.name})")
        if pa.types.is_string(f.type):
            values = values.astype(object)
        arrays.append(pa.array(values, type=f.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)


def ingest(
    src: str | Path,
    dst: str | Path,
    *,
    fmt: str = "auto",
    options: TransformOptions | dict | None = None,
    chunk_rows: int = 500_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress: Progress | None = None,
    work_dir: str | Path | None = None,
    sort_in_memory_rows: int = SORT_IN_MEMORY_ROWS,
    bucket_rows: int = BUCKET_ROWS,
    limits: IngestLimits | None = None,
) -> IngestResult:
    """Parse ``src`` (any supported format, plain or gzip) and write the normalised trace to ``dst``, within
    ``limits`` (planner/ingest/limits.py: rate multiplier, decompressed size, requests, span)."""
    lim = limits or IngestLimits()
    with active_limits(lim):
        return _ingest(src, dst, fmt, options, chunk_rows, max_line_bytes, progress, work_dir, sort_in_memory_rows,
                       bucket_rows, lim)


def _ingest(src, dst, fmt, options, chunk_rows, max_line_bytes, progress, work_dir, sort_in_memory_rows,
            bucket_rows, lim: IngestLimits) -> IngestResult:
    use_returning_memory_pool()
    src, dst = Path(src), Path(dst)
    opts = options if isinstance(options, TransformOptions) else TransformOptions.from_dict(options)
    if opts.rate > lim.max_rate:
        raise TraceFormatError(f"the rate multiplier {opts.rate:g} is above the limit of {lim.max_rate:g}",
                               hint="use a smaller rate, or ask the operator to raise TRACE_MAX_RATE_MULTIPLIER")
    # replicas are made per parsed chunk: shrink the chunk as the rate grows so they never pile up in memory
    chunk_rows = max(1_000, int(chunk_rows // max(1.0, math.ceil(opts.rate))))
    report = progress or _noop
    det = formats.detect(src, fmt)
    stage_dir = Path(tempfile.mkdtemp(prefix="ingest-", dir=work_dir or dst.parent))
    tmp_out = stage_dir / "normalised.parquet"
    try:
        try:
            info, totals, writer = _direct(src, det, tmp_out, opts, chunk_rows, max_line_bytes, report)
        except _NotSorted:
            info, totals, writer = _staged(
                src, det, stage_dir, tmp_out, opts, chunk_rows, max_line_bytes, report, sort_in_memory_rows, bucket_rows
            )
        if totals.requests == 0:
            raise TraceFormatError(
                f"no requests are left after the rate multiplier {opts.rate}",
                hint="use a larger rate, or a larger trace",
            )
        os.replace(tmp_out, dst)
    finally:
        shutil.rmtree(stage_dir, ignore_errors=True)
    report(1.0, "done")
    epoch = info["t_min"] / 1e9 if info["timestamps"] else None
    return IngestResult(
        format=det.format,
        requests=totals.requests,
        span_s=totals.span_s,
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        source_rows=info["rows"],
        was_sorted=info["sorted"],
        failed=totals.failed,
        columns=list(writer.schema.names),
        groups=totals.groups,
        options=opts.as_dict(),
        start_epoch_s=epoch,
    )


def check_written(totals) -> None:
    """The stored trace so far against the active limits (called after every chunk written)."""
    lim = current_limits()
    if totals.requests > lim.max_rows:
        raise TraceFormatError(f"the trace has more than {lim.max_rows:,} requests (after the rate multiplier)",
                               hint="import a part of it, lower the rate, or ask the operator to raise TRACE_MAX_ROWS")
    if totals.span_s > lim.max_span_s:
        raise TraceFormatError(f"the trace spans more than {lim.max_span_s:,.0f} s from its first to its last "
                               "request", hint="check the arrival column's unit (seconds), split the trace, or ask "
                                               "the operator to raise TRACE_MAX_SPAN_S")


def check_source(rows: int, span_s: float, opts: TransformOptions) -> None:
    """The same limits on the source rows of an unsorted file, before it is sorted (rate and time scale applied)."""
    lim = current_limits()
    if rows * max(opts.rate, 0.0) > lim.max_rows * 1.05 + 1000:  # replicas are random: allow a little slack
        check_written(_Est(requests=int(rows * opts.rate), span_s=0.0))
    check_written(_Est(requests=0, span_s=span_s * opts.time_scale))


@dataclass
class _Est:
    requests: int
    span_s: float


class _NotSorted(Exception):
    """The direct pass met an arrival earlier than the one before (or a change of columns)."""


def _direct(
    src: Path,
    det: formats.Detected,
    tmp_out: Path,
    opts: TransformOptions,
    chunk_rows: int,
    max_line_bytes: int,
    report: Progress,
):
    """One pass for files already in arrival order (the common case): parse, transform, write."""
    writer = transformer = None
    columns = None
    rows = 0
    t_min = last = None
    try:
        for chunk in formats.parse(
            src, det, keep=opts.source_columns(), chunk_rows=chunk_rows, max_line_bytes=max_line_bytes
        ):
            frame = chunk.frame
            if not len(frame):
                continue
            t = frame["t_ns"].to_numpy()
            if (last is not None and t[0] < last) or (len(t) > 1 and (np.diff(t) < 0).any()):
                raise _NotSorted()
            if columns is None:
                columns = list(frame.columns)
                t_min = int(t[0])
                transformer = Transformer(opts, t_min, set(columns))
                writer = NormalisedWriter(tmp_out, _output_columns(columns))
            elif list(frame.columns) != columns:
                raise _NotSorted()
            last = int(t[-1])
            writer.write(transformer.apply(frame))
            check_written(writer.totals)
            rows += len(frame)
            fraction = chunk.progress
            del frame, chunk
            _trim()
            report(fraction, f"read {rows:,} requests")
        if writer is None:
            raise TraceFormatError(
                "the file has a header but no requests", line=2, hint="add one request per line after the header"
            )
        writer.write(transformer.flush())
        check_written(writer.totals)
        totals = writer.close()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    info = {"rows": rows, "t_min": t_min, "sorted": True, "timestamps": t_min > 10**18 // 2}
    return info, totals, writer


def _staged(
    src,
    det,
    stage_dir: Path,
    tmp_out: Path,
    opts: TransformOptions,
    chunk_rows: int,
    max_line_bytes: int,
    report: Progress,
    sort_in_memory_rows: int,
    bucket_rows: int,
):
    """Two passes for unsorted files: parse to a staging file, then read it back in arrival order."""
    stage = stage_dir / "stage.parquet"
    info = _pass_one(src, det, stage, opts, chunk_rows, max_line_bytes, report)
    report(0.7, "sorting and writing")
    chunks = _sorted_chunks(stage, info, stage_dir, chunk_rows, sort_in_memory_rows, bucket_rows)
    transformer = Transformer(opts, info["t_min"], set(info["columns"]))
    writer = NormalisedWriter(tmp_out, _output_columns(info["columns"]))
    done = 0
    try:
        for frame in chunks:
            done += len(frame)
            writer.write(transformer.apply(frame))
            check_written(writer.totals)
            report(0.7 + 0.3 * done / max(info["rows"], 1), f"written {done:,} of {info['rows']:,} requests")
        writer.write(transformer.flush())
        check_written(writer.totals)
        totals = writer.close()
    except BaseException:
        writer.abort()
        raise
    return info, totals, writer


def _output_columns(stage_columns: list[str]) -> list[str]:
    out = []
    if "deadline_ns" in stage_columns:
        out.append("deadline_s")
    for name in ("session_id", "failed", "hash_ids"):
        if name in stage_columns:
            out.append(name)
    return out


def _pass_one(
    src: Path,
    det: formats.Detected,
    stage: Path,
    opts: TransformOptions,
    chunk_rows: int,
    max_line_bytes: int,
    report: Progress,
) -> dict:
    writer = None
    schema = None
    rows = 0
    t_min, t_max = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    last = np.iinfo(np.int64).min
    is_sorted = True
    try:
        for chunk in formats.parse(
            src, det, keep=opts.source_columns(), chunk_rows=chunk_rows, max_line_bytes=max_line_bytes
        ):
            frame = chunk.frame
            if not len(frame):
                continue
            t = frame["t_ns"].to_numpy()
            if is_sorted and (t[0] < last or (len(t) > 1 and (np.diff(t) < 0).any())):
                is_sorted = False
            last = max(last, int(t[-1]))
            t_min, t_max = min(t_min, int(t.min())), max(t_max, int(t.max()))
            check_source(rows + len(frame), (t_max - t_min) / 1e9, opts)
            if schema is None:
                schema = _stage_schema(frame)
                writer = pq.ParquetWriter(stage, schema, compression="lz4")
            writer.write_table(_to_stage_table(frame, schema))
            rows += len(frame)
            fraction = chunk.progress
            del frame, chunk
            _trim()
            report(0.7 * fraction, f"read {rows:,} requests")
    finally:
        if writer is not None:
            writer.close()
    if rows == 0:
        raise TraceFormatError(
            "the file has a header but no requests", line=2, hint="add one request per line after the header"
        )
    timestamps = t_min > 10**18 // 2  # epoch nanoseconds of dates after ~1985: a wall clock
    return {
        "rows": rows,
        "t_min": t_min,
        "t_max": t_max,
        "sorted": is_sorted,
        "columns": schema.names,
        "timestamps": bool(timestamps),
    }


def _sorted_chunks(
    stage: Path, info: dict, stage_dir: Path, chunk_rows: int, in_memory: int, bucket_rows: int
) -> Iterator[pd.DataFrame]:
    pf = pq.ParquetFile(stage)
    if info["sorted"]:
        for batch in pf.iter_batches(batch_size=chunk_rows):
            yield batch.to_pandas()
        return
    if info["rows"] <= in_memory:
        frame = pf.read().to_pandas().sort_values("t_ns", kind="stable", ignore_index=True)
        for start in range(0, len(frame), chunk_rows):
            yield frame.iloc[start : start + chunk_rows].reset_index(drop=True)
        return
    # Large and unsorted: split by time range into buckets on disk, then sort each bucket.
    n_buckets = max(2, math.ceil(info["rows"] / bucket_rows))
    lo, hi = info["t_min"], info["t_max"] + 1
    edges = np.linspace(lo, hi, n_buckets + 1)
    writers: dict[int, pq.ParquetWriter] = {}
    paths = [stage_dir / f"bucket-{i:04d}.parquet" for i in range(n_buckets)]
    try:
        for batch in pf.iter_batches(batch_size=chunk_rows):
            table = pa.Table.from_batches([batch])
            t = table.column("t_ns").to_numpy()
            which = np.searchsorted(edges, t, side="right") - 1
            which = which.clip(0, n_buckets - 1)
            for b in np.unique(which):
                if b not in writers:
                    writers[b] = pq.ParquetWriter(paths[b], pf.schema_arrow, compression="lz4")
                writers[b].write_table(table.filter(pa.array(which == b)))
    finally:
        for w in writers.values():
            w.close()
    for b in range(n_buckets):
        if b not in writers:
            continue
        frame = pq.read_table(paths[b]).to_pandas().sort_values("t_ns", kind="stable", ignore_index=True)
        paths[b].unlink()
        for start in range(0, len(frame), chunk_rows):
            yield frame.iloc[start : start + chunk_rows].reset_index(drop=True)
