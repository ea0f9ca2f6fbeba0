"""kubernetes-sigs/inference-perf result folders.

Layout (any prefix folder is stripped): the inference-perf config (``results/config.yaml``, the resolved one,
else ``profile.yaml``), the engine settings (``exp-config.yaml`` or ``engine.yaml``/``engine.json``) and one
``results/stage_N_lifecycle_metrics.json`` per load stage. Times in the stage files are seconds.
"""

from __future__ import annotations

import json
import re

import yaml
from pydantic import ValidationError

from planner.benchmarks.core.errors import BenchmarkError
from planner.benchmarks.core.schema import BenchmarkRun

STAGE_RE = re.compile(r"(?:^|/)results/stage_(\d+)_lifecycle_metrics\.json$")
CONFIG_NAMES = ("results/config.yaml", "profile.yaml", "config.yaml")
ENGINE_NAMES = ("exp-config.yaml", "engine.yaml", "engine.json")
KNOWN_DATA_TYPES = ("shared_prefix", "synthetic", "random")


def _strip_prefix(files: dict[str, bytes]) -> dict[str, bytes]:
    """Drop a common leading folder (an archive of ``run-1/...``) so names read ``results/...``."""
    names = [n.strip("/") for n in files]
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names):
        top = next(iter(tops)) + "/"
        return {n[len(top):]: files[k] for n, k in zip(names, files, strict=True)}
    return {n: files[k] for n, k in zip(names, files, strict=True)}


def looks_like(files: dict[str, bytes]) -> bool:
    files = _strip_prefix(files)
    return any(STAGE_RE.search(n) for n in files) or any(n in files for n in ENGINE_NAMES + ("profile.yaml",))


def _load(name: str, raw: bytes) -> dict:
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    except (UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise BenchmarkError(f"cannot read: {str(exc).splitlines()[0][:200]}", file=name,
                             hint="upload the file inference-perf / the launcher wrote, unchanged") from None
    if not isinstance(data, dict):
        raise BenchmarkError("must be a mapping (YAML or JSON object)", file=name)
    return data


def _get(d: dict, path: str, file: str, *, required: bool = True, default=None):
    cur = d
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            if required:
                raise BenchmarkError("is missing", file=file, field=path)
            return default
        cur = cur[key]
    return cur


def _workload(cfg: dict, file: str) -> tuple[dict, dict]:
    data = _get(cfg, "data", file)
    kind = _get(data, "type", file) if isinstance(data, dict) else None
    if kind not in KNOWN_DATA_TYPES:
        raise BenchmarkError(f"unknown profile type {kind!r}", file=file, field="data.type",
                             hint=f"supported inference-perf data types: {', '.join(KNOWN_DATA_TYPES)}")
    if kind == "shared_prefix":
        sp = _get(cfg, "data.shared_prefix", file)
        groups = sp.get("num_groups", sp.get("num_unique_system_prompts"))
        per_group = sp.get("num_prompts_per_group", sp.get("num_users_per_system_prompt"))
        block = {"num_groups": groups, "prompts_per_group": per_group,
                 "system_prompt_len": sp.get("system_prompt_len"), "question_len": sp.get("question_len"),
                 "output_len": sp.get("output_len"),
                 "multi_turn": bool(sp.get("enable_multi_turn_chat", False))}
        for key, value in block.items():
            if value is None:
                raise BenchmarkError("is missing", file=file, field=f"data.shared_prefix.{key}")
        return {"kind": kind, "shared_prefix": block}, {}
    dist = {}
    for side in ("input", "output"):
        d = _get(cfg, f"data.{side}_distribution", file)
        if not isinstance(d, dict):
            raise BenchmarkError("must be a mapping with mean (and std, min, max)", file=file,
                                 field=f"data.{side}_distribution")
        dist[side] = {k: d[k] for k in ("mean", "std", "min", "max") if d.get(k) is not None}
    return {"kind": kind, **dist}, {}


def _engine(name: str, raw: dict, gpu: str) -> dict:
    tp = raw.get("tensor_parallelism", raw.get("tensor_parallel_size", raw.get("tp")))
    if tp is None:
        raise BenchmarkError("the tensor-parallel degree is missing", file=name, field="tensor_parallelism",
                             hint="add tensor_parallelism: N (the vLLM --tensor-parallel-size the server ran with)")
    if not raw.get("model"):
        raise BenchmarkError("is missing", file=name, field="model")
    out = {"model": str(raw["model"]), "tensor_parallel_size": tp, "gpu": str(raw.get("gpu") or gpu)}
    for key in ("max_num_batched_tokens", "max_num_seqs", "max_model_len", "gpu_memory_utilization",
                "engine_version", "kv_offload_gb"):
        if raw.get(key) is not None:
            out[key] = raw[key]
    for key, alias in (("chunked_prefill", "enable_chunked_prefill"), ("prefix_caching", "enable_prefix_caching"),
                       ("async_scheduling", "async_scheduling")):
        value = raw.get(key, raw.get(alias))
        if value is not None:
            out[key] = value
    return out


def _stat(block: dict | None, file: str, field: str) -> dict:
    if not isinstance(block, dict) or block.get("mean") is None:
        raise BenchmarkError("is missing (needs mean, median, p90, p99 in seconds)", file=file, field=field)
    out = {"mean": block["mean"], "p50": block.get("median"), "p90": block.get("p90"), "p99": block.get("p99")}
    for key, value in out.items():
        if value is not None and (not isinstance(value, (int, float)) or value < 0):
            raise BenchmarkError(f"{key} must be a number >= 0 seconds, got {value!r}", file=file, field=field)
    return out


def _stage(index: int, name: str, data: dict, load_stage: dict | None) -> dict:
    ok = _get(data, "successes.count", name)
    failed = _get(data, "failures.count", name, required=False, default=0) or 0
    lat = _get(data, "successes.latency", name) if ok else {}
    if not ok:
        raise BenchmarkError("no successful request in this stage: nothing to compare", file=name,
                             field="successes.count")
    return {
        "index": index,
        "rate": (load_stage or {}).get("rate", _get(data, "load_summary.requested_rate", name, required=False)),
        "duration_s": (load_stage or {}).get("duration"),
        "requests_ok": ok, "requests_failed": failed,
        "achieved_rate": _get(data, "load_summary.achieved_rate", name, required=False),
        "prompt_len_mean": _get(data, "successes.prompt_len.mean", name, required=False),
        "output_len_mean": _get(data, "successes.output_len.mean", name, required=False),
        "ttft": _stat(lat.get("time_to_first_token"), name, "successes.latency.time_to_first_token"),
        "e2e": _stat(lat.get("request_latency"), name, "successes.latency.request_latency"),
    }


def parse_folder(files: dict[str, bytes], *, name: str = "", gpu: str = "", engine_overrides: dict | None = None
                 ) -> BenchmarkRun:
    """One inference-perf run from its files ({relative path: bytes}); raises ``BenchmarkError``."""
    files = _strip_prefix(files)
    cfg_name = next((n for n in CONFIG_NAMES if n in files), None)
    if cfg_name is None:
        raise BenchmarkError("the inference-perf config is missing", file="profile.yaml",
                             hint="include results/config.yaml or profile.yaml of the run")
    cfg = _load(cfg_name, files[cfg_name])
    eng_name = next((n for n in ENGINE_NAMES if n in files), None)
    if eng_name is None and not engine_overrides:
        raise BenchmarkError("the engine settings are missing", file="exp-config.yaml",
                             hint="include exp-config.yaml (model, tensor_parallelism, max_num_batched_tokens, ...)")
    raw_engine = _load(eng_name, files[eng_name]) if eng_name else {}
    raw_engine.update(engine_overrides or {})
    engine = _engine(eng_name or "engine settings", raw_engine, gpu)
    workload, _ = _workload(cfg, cfg_name)
    load_type = _get(cfg, "load.type", cfg_name)
    if load_type not in ("constant", "poisson"):
        raise BenchmarkError(f"unknown load type {load_type!r}", file=cfg_name, field="load.type",
                             hint="supported: constant, poisson")
    stages_cfg = _get(cfg, "load.stages", cfg_name)
    if not isinstance(stages_cfg, list) or not stages_cfg:
        raise BenchmarkError("must list at least one {rate, duration}", file=cfg_name, field="load.stages")
    stage_files = sorted((int(m.group(1)), n) for n in files if (m := STAGE_RE.search(n)))
    if not stage_files:
        raise BenchmarkError("no stage results in the folder", file="results/stage_0_lifecycle_metrics.json",
                             hint="include results/stage_N_lifecycle_metrics.json for every load stage "
                                  "(inference-perf report.request_lifecycle.per_stage: true)")
    stages = []
    for index, fname in stage_files:
        if index >= len(stages_cfg):
            raise BenchmarkError(f"stage {index} has no load stage in the config ({len(stages_cfg)} stages)",
                                 file=fname, hint="upload the config the run used")
        stages.append(_stage(index, fname, _load(fname, files[fname]), stages_cfg[index]))
    notes = []
    if cfg_name != "results/config.yaml" and "results/config.yaml" not in files:
        notes.append("workload read from profile.yaml (no resolved results/config.yaml)")
    if not engine["gpu"]:
        raise BenchmarkError("the GPU type is not given", file=eng_name or "engine settings", field="gpu",
                             hint="say which GPU the server ran on (upload option gpu, e.g. h100-80gb)")
    payload = {
        "name": name or (eng_name and raw_engine.get("name")) or "inference-perf run",
        "source_format": "inference-perf",
        "engine": engine, "workload": workload,
        "load": {"type": load_type, "stages": stages_cfg}, "stages": stages, "notes": notes,
    }
    return validate_run(payload, cfg_name)


def validate_run(payload: dict, file: str) -> BenchmarkRun:
    try:
        return BenchmarkRun.model_validate(payload)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise BenchmarkError(err["msg"], file=file, field=field) from None
