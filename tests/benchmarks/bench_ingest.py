"""Ingest benchmark: generate an Azure-format CSV (5M rows by default), ingest it, print rows/s and peak RSS.

    python tests/benchmarks/bench_ingest.py [--rows 5000000] [--gzip] [--keep DIR]

The last line printed is one JSON object. Peak RSS is VmHWM (the high-water mark of resident memory)
of a fresh child process per phase, so generating the file does not count against ingest
(ru_maxrss would not do: Linux carries it across fork and exec).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def generate(path: str, rows: int, gz: bool, seed: int = 0) -> None:
    """Azure 2024 week-style CSV: mixed `+00:00` and 7-digit timestamps, CRLF line endings."""
    import gzip

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-05-10 00:00:00").value
    span_ns = 7 * 86400 * 10**9
    opener = gzip.open if gz else open
    chunk = 500_000
    with opener(path, "wb") as fh:
        fh.write(b"TIMESTAMP,ContextTokens,GeneratedTokens\r\n")
        for lo in range(0, rows, chunk):
            n = min(chunk, rows - lo)
            t = start + (np.arange(lo, lo + n, dtype=np.int64) * (span_ns // rows)) + rng.integers(0, 10**6, n)
            stamps = pd.DatetimeIndex(t.astype("datetime64[ns]")).astype(str).str.slice(0, 26)
            stamps = np.where(np.arange(n) % 2 == 0, stamps + "+00:00", stamps + "0")  # the two Azure styles
            frame = pd.DataFrame({"t": stamps, "c": rng.integers(1, 8000, n), "g": rng.integers(1, 800, n)})
            fh.write(frame.to_csv(index=False, header=False, lineterminator="\r\n").encode())


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_ingest(src: str, dst: str, queue) -> None:
    from planner.ingest.pipeline import ingest

    t0, c0 = time.perf_counter(), cpu_s()
    result = ingest(src, dst)
    elapsed = time.perf_counter() - t0
    queue.put(
        {
            "seconds": elapsed,
            "cpu_s": cpu_s() - c0,
            "requests": result.requests,
            "span_s": result.span_s,
            "peak_rss_mb": peak_rss_mb(),
        }
    )


def run_characterise(dst: str, queue) -> None:
    from planner.ingest.characterise import characterise

    t0, c0 = time.perf_counter(), cpu_s()
    out = characterise(dst)
    queue.put(
        {
            "seconds": time.perf_counter() - t0,
            "cpu_s": cpu_s() - c0,
            "groups": len(out["summary"]["groups"]),
            "peak_rss_mb": peak_rss_mb(),
        }
    )


def in_child(target, *args) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--keep", help="directory to keep the generated files in")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / ("azure.csv.gz" if args.gzip else "azure.csv")
    dst = work / "normalised.parquet"
    t0 = time.perf_counter()
    if not src.exists():
        generate(str(src), args.rows, args.gzip)
    gen_s = time.perf_counter() - t0
    ing = in_child(run_ingest, str(src), str(dst))
    char = in_child(run_characterise, str(dst))
    report = {
        "benchmark": "ingest",
        "rows": ing["requests"],
        "file_mb": round(src.stat().st_size / 2**20, 1),
        "gzip": args.gzip,
        "generate_s": round(gen_s, 1),
        "ingest_s": round(ing["seconds"], 2),
        "rows_per_s": round(ing["requests"] / ing["seconds"]),
        "ingest_cpu_s": round(ing["cpu_s"], 2),
        "rows_per_cpu_s": round(ing["requests"] / ing["cpu_s"]),
        "ingest_peak_rss_mb": round(ing["peak_rss_mb"], 1),
        "parquet_mb": round(dst.stat().st_size / 2**20, 1),
        "characterise_s": round(char["seconds"], 2),
        "characterise_rows_per_s": round(ing["requests"] / char["seconds"]),
        "characterise_cpu_s": round(char["cpu_s"], 2),
        "characterise_peak_rss_mb": round(char["peak_rss_mb"], 1),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
    }
    if not args.keep:
        for p in (src, dst):
            p.unlink(missing_ok=True)
        work.rmdir()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
