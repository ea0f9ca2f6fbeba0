"""Trace readers without pandas: the light CLI (``python -m simulations.engine.run``) and the streamed
replay (``simulations.engine.streaming.stream``) read traces through these, so a small replay does not pay for pandas.

``read_trace_arrays(path)`` returns the normalised columns as numpy arrays (``arrival_s``, ``input_tokens``,
``output_tokens``, and ``model`` / ``region`` / ``tier`` as string arrays when the file has them): the engine's one
trace reader (``scenario.build_workload`` reads every trace file through it) for Parquet (the contract, via
pyarrow), CSV (normalised columns or the Azure LLM inference trace) and JSONL (normalised or Mooncake).
``iter_parquet_chunks(path, rows)`` reads a Parquet trace in row batches (pyarrow), for replays longer than memory.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from simulations.engine.scenario.config import ScenarioError

NUMERIC = ("arrival_s", "input_tokens", "output_tokens")
LABELS = ("model", "region", "tier")
OPTIONAL = {"deadline_s": np.float64, "predicted_output_tokens": np.int64, "ttft_slo_s": np.float64,
            "tpot_slo_s": np.float64, "class_id": np.int32}


def _columns(rows: dict) -> dict:
    for col in NUMERIC:
        if col not in rows:
            raise ScenarioError(f"workload.{col}", f"the trace has no {col!r} column")
    out = {"arrival_s": np.asarray(rows["arrival_s"], dtype=np.float64),
           "input_tokens": np.asarray(rows["input_tokens"], dtype=np.int64),
           "output_tokens": np.asarray(rows["output_tokens"], dtype=np.int64)}
    for col in LABELS:
        if col in rows:
            out[col] = np.asarray(rows[col]).astype(str)
    for col, dtype in OPTIONAL.items():
        if col in rows:
            try:
                out[col] = np.asarray(rows[col], dtype=np.float64).astype(dtype)
            except (TypeError, ValueError):
                raise ScenarioError(f"workload.{col}", f"the trace's {col!r} column must be numeric") from None
    if rows.get("hash_ids") is not None:  # Mooncake's prefix block hashes: prefix caching's ids (workload.py)
        hashes = list(rows["hash_ids"])
        if not all(h is None or (isinstance(h, list) and all(isinstance(x, int) for x in h)) for h in hashes):
            raise ScenarioError("workload.hash_ids", "each request's hash_ids must be a list of integers")
        out["hash_ids"] = hashes
    return out


def _azure_arrivals(stamps: list[str]) -> np.ndarray:
    """Seconds since the first request, exactly as pandas computes them (ns differences / 1e9)."""
    ts = np.array([s.strip().replace(" ", "T") for s in stamps], dtype="datetime64[ns]")
    if not len(ts):
        return np.zeros(0)
    return (ts - ts.min()).astype(np.int64) / 1e9


def _arrow_numpy(column) -> np.ndarray:
    """A pyarrow (chunked) column as numpy, chunk by chunk, without pyarrow's to_numpy (it imports pandas):
    fixed-width numbers without nulls are read from the data buffer, anything else through Python lists."""
    import pyarrow as pa

    parts = []
    for c in getattr(column, "chunks", [column]):
        t = c.type
        if (pa.types.is_integer(t) or pa.types.is_floating(t)) and c.null_count == 0:
            dtype = np.dtype({"double": "float64", "float": "float32", "halffloat": "float16"}.get(str(t), str(t)))
            parts.append(np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c) + c.offset)[c.offset:])
        else:
            values = c.to_pylist()
            if pa.types.is_integer(t) or pa.types.is_floating(t):
                values = [np.nan if v is None else v for v in values]
            parts.append(np.asarray(values))
    if not parts:
        return np.zeros(0)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _read_parquet(path: Path):
    """The whole file as a pyarrow Table through the reader under ``pq.ParquetFile(path).read()``: importing
    ``pyarrow.parquet`` also loads ``pyarrow.fs`` and its cloud filesystems (about a third of the Parquet
    start-up), and ``pq.read_table`` loads ``pyarrow.dataset`` (~0.3 s)."""
    from pyarrow._parquet import ParquetReader

    reader = ParquetReader()
    reader.open(str(path))
    return reader.read_all()


def read_trace_arrays(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ScenarioError("workload.trace_path", f"file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        table = _read_parquet(path)
        cols = {name: _arrow_numpy(table.column(name)) for name in table.column_names
                if name in NUMERIC or name in LABELS or name in OPTIONAL}
        if "hash_ids" in table.column_names:
            cols["hash_ids"] = table.column("hash_ids").to_pylist()
        return _columns(cols)
    if suffix in (".jsonl", ".json"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        cols: dict = {}
        for r in rows:
            for k in r:
                cols.setdefault(k, [])
        for k in cols:
            cols[k] = [r.get(k) for r in rows]
        if "timestamp" in cols:  # Mooncake: ms from start
            cols["input_tokens"] = cols.pop("input_length", cols.get("input_tokens"))
            cols["output_tokens"] = cols.pop("output_length", cols.get("output_tokens"))
            cols["arrival_s"] = np.asarray(cols["timestamp"], dtype=np.float64) / 1000.0
        return _columns(cols)
    if suffix == ".csv":
        with path.open(newline="") as f:
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader, [])]
            data = list(reader)
        cols = {h: [r[i] for r in data] for i, h in enumerate(header)}
        if "TIMESTAMP" in cols:  # Azure LLM inference trace
            return _columns({"arrival_s": _azure_arrivals(cols["TIMESTAMP"]),
                             "input_tokens": np.asarray(cols["ContextTokens"], dtype=np.int64),
                             "output_tokens": np.asarray(cols["GeneratedTokens"], dtype=np.int64)})
        for col in (*NUMERIC, *OPTIONAL):
            if col in cols:
                cols[col] = np.asarray([x if x.strip() else "nan" for x in cols[col]], dtype=np.float64)
        return _columns(cols)
    raise ScenarioError("workload.trace_path", f"unsupported file type {suffix!r}; use .parquet, .csv or .jsonl")


def read_parquet_columns(path: str | Path, names: tuple) -> dict:
    """Some columns of a Parquet trace as numpy arrays (e.g. a length sampler's ``input_tokens`` /
    ``output_tokens``); a missing column is a ScenarioError naming it."""
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    missing = [n for n in names if n not in f.schema_arrow.names]
    if missing:
        raise ScenarioError(f"workload.{missing[0]}", f"the trace has no {missing[0]!r} column")
    table = f.read(columns=list(names))
    return {n: _arrow_numpy(table.column(n)) for n in names}


def iter_parquet_chunks(path: str | Path, rows: int = 1_000_000):
    """Yield the trace's normalised columns ``rows`` at a time (dicts as ``read_trace_arrays``)."""
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    names = [n for n in f.schema_arrow.names if n in NUMERIC or n in LABELS or n in OPTIONAL]
    for batch in f.iter_batches(batch_size=rows, columns=names):
        yield _columns({n: _arrow_numpy(batch.column(n)) for n in names})
