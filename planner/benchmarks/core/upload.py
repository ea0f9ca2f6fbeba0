"""One entry point for every benchmark upload: a folder (as files), a zip or tar archive of a folder, a vLLM bench
JSON, or a per-request CSV/JSONL. Detects the format and returns the parsed run (``BenchmarkError`` otherwise)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

from planner.benchmarks.core import inferenceperf, perrequest
from planner.benchmarks.core.errors import BenchmarkError
from planner.benchmarks.core.schema import BenchmarkRun

MAX_FILES = 200
MAX_MEMBER_BYTES = 64 * 2**20
SKIP = ("per_request_lifecycle_metrics.json", "traces.json", "kv_events.jsonl", "vllm.log")


def _keep(name: str) -> bool:
    return not name.endswith(SKIP) and not name.endswith("/")


def unpack(raw: bytes, filename: str) -> dict[str, bytes]:
    """The files of an archive ({relative path: bytes}); large per-request dumps are skipped."""
    files: dict[str, bytes] = {}
    try:
        if zipfile.is_zipfile(io.BytesIO(raw)):
            with zipfile.ZipFile(io.BytesIO(raw)) as zf:
                members = [m for m in zf.infolist() if not m.is_dir() and _keep(m.filename)]
                if len(members) > MAX_FILES:
                    raise BenchmarkError(f"has {len(members)} files; the limit is {MAX_FILES}", file=filename)
                for m in members:
                    if m.file_size > MAX_MEMBER_BYTES:
                        raise BenchmarkError(f"{m.filename} is {m.file_size} bytes; the limit is "
                                             f"{MAX_MEMBER_BYTES}", file=filename)
                    files[m.filename] = zf.read(m)
            return files
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:*") as tf:
            members = [m for m in tf.getmembers() if m.isfile() and _keep(m.name)]
            if len(members) > MAX_FILES:
                raise BenchmarkError(f"has {len(members)} files; the limit is {MAX_FILES}", file=filename)
            for m in members:
                if m.size > MAX_MEMBER_BYTES:
                    raise BenchmarkError(f"{m.name} is {m.size} bytes; the limit is {MAX_MEMBER_BYTES}",
                                         file=filename)
                fh = tf.extractfile(m)
                if fh is not None:
                    files[m.name] = fh.read()
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise BenchmarkError(f"cannot open the archive: {exc}", file=filename,
                             hint="upload a .zip or .tar.gz of the result folder") from None
    return files


def read_path(path: Path) -> tuple[dict[str, bytes], str]:
    """Files of a folder on this machine (CLI), or one file."""
    if path.is_dir():
        files = {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
                 if p.is_file() and _keep(p.name)}
        return files, path.name
    return {path.name: path.read_bytes()}, path.name


def parse_upload(files: dict[str, bytes], *, name: str = "", gpu: str = "", engine: dict | None = None
                 ) -> BenchmarkRun:
    engine = {k: v for k, v in (engine or {}).items() if v not in (None, "")}
    if gpu:
        engine.setdefault("gpu", gpu)
    if len(files) == 1:
        (fname, raw), = files.items()
        lower = fname.lower()
        if lower.endswith((".zip", ".tar", ".tar.gz", ".tgz")):
            return parse_upload(unpack(raw, fname), name=name or fname.split(".")[0], gpu=gpu, engine=engine)
        if lower.endswith(".json") and perrequest.looks_like_vllm_bench(raw):
            return perrequest.parse_vllm_bench(raw, fname, _need_gpu(engine, fname), name=name)
        if lower.endswith((".csv", ".jsonl")):
            return perrequest.parse_requests(raw, fname, _need_gpu(engine, fname), name=name)
    if inferenceperf.looks_like(files):
        return inferenceperf.parse_folder(files, name=name, gpu=gpu, engine_overrides=engine or None)
    raise BenchmarkError("unknown benchmark format", file=", ".join(sorted(files))[:200],
                         hint="upload an inference-perf result folder (zip/tar), a vLLM bench serving JSON "
                              "(--save-detailed), or a per-request CSV/JSONL")


def _need_gpu(engine: dict, fname: str) -> dict:
    if not engine.get("gpu"):
        raise BenchmarkError("the GPU type is not given", file=fname, field="gpu",
                             hint="say which GPU the server ran on (e.g. h100-80gb)")
    return engine
