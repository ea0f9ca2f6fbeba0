"""The normalised trace: one Parquet row per request, sorted by arrival (see docs/traces.md).

Columns: ``arrival_s`` float64 (first request at 0.0), ``input_tokens``/``output_tokens`` int32,
``region``/``model``/``tier`` strings (read back as pandas categories), and optionally
``deadline_s`` float64 (NaN = none), ``session_id`` string, ``failed`` bool, ``hash_ids`` list<int64>.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REQUIRED = ("arrival_s", "input_tokens", "output_tokens", "region", "model", "tier")
OPTIONAL = ("deadline_s", "session_id", "failed", "hash_ids")
CATEGORIES = ("region", "model", "tier")
ARROW_TYPES = {
    "arrival_s": pa.float64(),
    "input_tokens": pa.int32(),
    "output_tokens": pa.int32(),
    "region": pa.dictionary(pa.int32(), pa.string()),
    "model": pa.dictionary(pa.int32(), pa.string()),
    "tier": pa.dictionary(pa.int32(), pa.string()),
    "deadline_s": pa.float64(),
    "session_id": pa.string(),
    "failed": pa.bool_(),
    "hash_ids": pa.list_(pa.int64()),
}
ROW_GROUP_ROWS = 1_000_000


def schema_for(columns: Sequence[str]) -> pa.Schema:
    names = list(REQUIRED) + [c for c in OPTIONAL if c in columns]
    return pa.schema([(name, ARROW_TYPES[name]) for name in names])


def read_trace(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Load a normalised trace (all or some columns) as a DataFrame; region/model/tier are categories."""
    path = Path(path)
    available = pq.read_schema(path).names
    cols = list(columns) if columns is not None else available
    missing = [c for c in cols if c not in available]
    if missing:
        raise KeyError(f"{path.name} has no column(s) {missing}; it has {available}")
    table = pq.read_table(path, columns=cols, read_dictionary=[c for c in CATEGORIES if c in cols])
    frame = table.to_pandas()
    for name in CATEGORIES:  # pandas categories, whichever dictionary index width was stored
        if name in frame.columns and not isinstance(frame[name].dtype, pd.CategoricalDtype):
            frame[name] = frame[name].astype("category")
    return frame


def iter_trace(
    path: str | Path, columns: Sequence[str] | None = None, batch_rows: int = 1_000_000
) -> Iterator[pd.DataFrame]:
    """Stream a normalised trace in batches (bounded memory)."""
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=batch_rows, columns=list(columns) if columns else None):
        yield batch.to_pandas()


def trace_rows(path: str | Path) -> int:
    return pq.ParquetFile(path).metadata.num_rows


def frame_to_table(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    arrays = []
    for f in schema:
        values = frame[f.name]
        if f.name in CATEGORIES:
            cat = (
                values.array if isinstance(values.dtype, pd.CategoricalDtype) else pd.Categorical(values.astype(object))
            )
            arrays.append(
                pa.DictionaryArray.from_arrays(
                    pa.array(cat.codes.astype(np.int32)), pa.array(cat.categories.astype(str), type=pa.string())
                )
            )
            continue
        if f.name == "session_id":
            values = values.astype(object)
        arrays.append(pa.array(values, type=f.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)


@dataclass
class Totals:
    """Running totals while writing a normalised trace."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    span_s: float = 0.0
    failed: int = 0
    groups: dict = field(default_factory=dict)  # "region|model|tier" -> requests

    def add(self, frame: pd.DataFrame) -> None:
        self.requests += len(frame)
        self.input_tokens += int(frame["input_tokens"].to_numpy().sum(dtype=np.int64))
        self.output_tokens += int(frame["output_tokens"].to_numpy().sum(dtype=np.int64))
        if len(frame):
            self.span_s = float(frame["arrival_s"].iloc[-1])
        if "failed" in frame.columns:
            self.failed += int(frame["failed"].sum())
        counts = frame.groupby(list(CATEGORIES), observed=True, sort=False).size()
        for key, n in counts.items():
            k = "|".join(map(str, key))
            self.groups[k] = self.groups.get(k, 0) + int(n)


class NormalisedWriter:
    """Writes sorted normalised frames; shifts every time so the first written request is at 0.0."""

    def __init__(self, path: str | Path, columns: Sequence[str]) -> None:
        self.path = Path(path)
        self.schema = schema_for(columns)
        self._writer: pq.ParquetWriter | None = None
        self._offset: float | None = None
        self._last = -np.inf
        self.totals = Totals()
        self._pending: list[pd.DataFrame] = []
        self._pending_rows = 0

    def write(self, frame: pd.DataFrame | None) -> None:
        if frame is None or not len(frame):
            return
        if self._offset is None:
            self._offset = float(frame["arrival_s"].iloc[0])
        frame = frame.copy()
        frame["arrival_s"] = frame["arrival_s"].to_numpy() - self._offset
        if "deadline_s" in frame.columns:
            frame["deadline_s"] = frame["deadline_s"].to_numpy() - self._offset
        arrivals = frame["arrival_s"].to_numpy()
        if arrivals[0] < self._last or (len(arrivals) > 1 and (np.diff(arrivals) < 0).any()):
            raise AssertionError("normalised frames must arrive sorted")  # a bug, not bad input
        self._last = float(arrivals[-1])
        self.totals.add(frame)
        self._pending.append(frame)
        self._pending_rows += len(frame)
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        frame = pd.concat(self._pending, ignore_index=True) if len(self._pending) > 1 else self._pending[0]
        self._pending, self._pending_rows = [], 0
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self.schema, compression="zstd")
        self._writer.write_table(frame_to_table(frame, self.schema), row_group_size=ROW_GROUP_ROWS)

    def close(self) -> Totals:
        self._flush()
        if self._writer is None:  # nothing written: still leave a valid, empty file
            self._writer = pq.ParquetWriter(self.path, self.schema, compression="zstd")
        self._writer.close()
        return self.totals

    def abort(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self.path.unlink(missing_ok=True)


def write_frame(frame: pd.DataFrame, path: str | Path) -> Totals:
    """Write an in-memory normalised frame (e.g. from the synthesiser), sorting it first."""
    frame = frame.sort_values("arrival_s", kind="stable", ignore_index=True)
    for name, default in (("region", "region-1"), ("model", "default"), ("tier", "IW-F")):
        if name not in frame.columns:
            frame[name] = default
    writer = NormalisedWriter(path, [c for c in frame.columns if c in OPTIONAL])
    try:
        for start in range(0, len(frame), ROW_GROUP_ROWS):
            writer.write(frame.iloc[start : start + ROW_GROUP_ROWS])
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def use_returning_memory_pool() -> None:
    """Switch Arrow's default pool from mimalloc (which keeps freed pages, so RSS grew with the file:
    ~60 MB per million rows read) to jemalloc, or the system allocator, unless the user chose one
    with ARROW_DEFAULT_MEMORY_POOL. Measured with tests/benchmarks/bench_ingest.py; see docs/traces.md."""
    import os

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    if pa.default_memory_pool().backend_name != "mimalloc":
        return
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
        pa.jemalloc_set_decay_ms(0)  # return freed pages at once rather than after 1 s
    except (NotImplementedError, pa.ArrowNotImplementedError):
        pa.set_memory_pool(pa.system_memory_pool())
