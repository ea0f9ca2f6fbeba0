"""The catalogue JSON format (built-in and user files), its validation, and the engine spec (Django-free).

A catalogue file is one JSON object with any of three lists::

    {"gpu_types":   [{"name", "memory_gb", "bf16_tflops"?, "memory_bandwidth_tbs"?, "gpus_per_vm"?,
                      "vendor"?, "display_name"?, "source"?, "device_kind"? (gpu|cpu),
                      "idle_w"?, "busy_w"?, "power_source"?, "power_assumed"? (watts per device),
                      "prices": [{"cloud", "region", "kind": on_demand|spot|reserved,
                                  "usd_per_gpu_hour", "source", "as_of": "YYYY-MM-DD", "assumed"?}]}],
     "models":      [{"name", "parameters_billion", "layers", "kv_bytes_per_token"? (or kv_heads+head_dim),
                      "weights_gb"?, "kv_heads"?, "head_dim"?, "dtype_bytes"?, "aliases"?, "source"?,
                      "max_model_len"? (context limit, tokens), "max_model_len_source"?}],
     "deployments": [{"model", "gpu", "tp", "prefill": {c0,c1,c2[,c_sq,c_req]}, "decode": {c0,c_batch,c_ctx},
                      "gpus_per_instance"?, "kv_capacity_tokens"?, "theta_tps"?, "startup"?,
                      "idle_w"?, "busy_w"?, "power_source"?, "power_assumed"? (override the device's),
                      "max_model_len"? (<= the model's; default the model's), "fitted_range"? (see
                      ``complete_fitted_range``; default the fit report's "range"), ...}]}

Missing computed fields (weights, KV bytes, KV capacity, theta) are derived; see ``complete_*``.
"""

from __future__ import annotations

import datetime as dt
import math

from planner.catalogue.capacity import (
    DEFAULT_MEMORY_UTILISATION,
    ThetaTarget,
    kv_bytes_per_token,
    kv_capacity_tokens,
    theta_tps,
    weights_gb,
)
from planner.catalogue.errors import ProfileError

PRICE_KINDS = ("on_demand", "spot", "reserved")
DEVICE_KINDS = ("gpu", "cpu")
BASES = ("fitted", "derived", "estimated", "manual")
# Start-up times (seconds). vm_acquire 155 s and spot reclaim 65 s: SageServe's public code
# (configs/arbiter_repo/arbiters/*.yaml spin_up / reclaim_spot); model load 10 min in the same
# region, 2 h from another region; spot reclaim median 1 min, max 5 min: SageServe paper section 7.1.
DEFAULT_STARTUP = {
    "vm_acquire_s": 155.0,
    "load_same_region_s": 600.0,
    "load_cross_region_s": 7200.0,
    "spot_reclaim_s": 65.0,
    "spot_reclaim_median_s": 60.0,
    "spot_reclaim_max_s": 300.0,
}
ENGINE_STARTUP_KEYS = ("vm_acquire_s", "load_same_region_s", "load_cross_region_s", "spot_reclaim_s")
DEFAULT_MAX_BATCH_SIZE = 512  # SageServe public code: ORCA scheduler, max batch 512 (us3-new.yaml)
DEFAULT_MAX_BATCH_TOKENS = 8192
PREFILL_KEYS = ("c0", "c1", "c2")
DECODE_KEYS = ("c0", "c_batch", "c_ctx")


def deployment_name(model: str, gpu: str, tp: int) -> str:
    return f"{model}/{gpu}/tp{int(tp)}"


def _number(
    obj: dict,
    key: str,
    where: str,
    *,
    minimum: float | None = 0.0,
    strict: bool = False,
    required: bool = True,
    integer: bool = False,
):
    if key not in obj or obj[key] is None:
        if required:
            raise ProfileError(f"missing {key}", where=f"{where}.{key}", hint=f"add a numeric {key}")
        return None
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ProfileError(f"{key} is {value!r}, not a number", where=f"{where}.{key}", hint="use a plain number")
    if integer and value != int(value):
        raise ProfileError(f"{key} is {value!r}, not a whole number", where=f"{where}.{key}")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        op = ">" if strict else ">="
        raise ProfileError(f"{key} is {value!r}; it must be {op} {minimum:g}", where=f"{where}.{key}")
    return int(value) if integer else float(value)


def _name(obj: dict, key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(f"missing or empty {key}", where=f"{where}.{key}", hint=f"give a text {key}")
    if len(value) > 120:
        raise ProfileError(f"{key} longer than 120 characters", where=f"{where}.{key}")
    return value.strip()


def complete_price(p: dict, where: str) -> dict:
    if not isinstance(p, dict):
        raise ProfileError("a price must be an object", where=where)
    kind = p.get("kind")
    if kind not in PRICE_KINDS:
        raise ProfileError(f"kind is {kind!r}", where=f"{where}.kind", hint="use on_demand, spot or reserved")
    as_of = p.get("as_of")
    try:
        dt.date.fromisoformat(str(as_of))
    except ValueError:
        raise ProfileError(f"as_of is {as_of!r}", where=f"{where}.as_of", hint="give the date as YYYY-MM-DD") from None
    source = p.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ProfileError(
            "every price needs a source", where=f"{where}.source", hint="say where the figure comes from"
        )
    return {
        "cloud": _name(p, "cloud", where),
        "region": _name(p, "region", where),
        "kind": kind,
        "usd_per_gpu_hour": _number(p, "usd_per_gpu_hour", where),
        "source": source.strip(),
        "as_of": str(as_of),
        "assumed": bool(p.get("assumed", False)),
    }


def complete_gpu(g: dict, where: str) -> dict:
    if not isinstance(g, dict):
        raise ProfileError("a GPU type must be an object", where=where)
    prices = g.get("prices", [])
    if not isinstance(prices, list):
        raise ProfileError("prices must be a list", where=f"{where}.prices")
    out = {
        "name": _name(g, "name", where),
        "display_name": str(g.get("display_name") or g["name"]),
        "vendor": str(g.get("vendor", "")),
        "memory_gb": _number(g, "memory_gb", where, strict=True),
        "bf16_tflops": _number(g, "bf16_tflops", where, required=False, strict=True),
        "memory_bandwidth_tbs": _number(g, "memory_bandwidth_tbs", where, required=False, strict=True),
        "gpus_per_vm": _number(g, "gpus_per_vm", where, required=False, strict=True, integer=True) or 8,
        "source": str(g.get("source", "")),
        "prices": [complete_price(p, f"{where}.prices[{i}]") for i, p in enumerate(prices)],
        "device_kind": _device_kind(g, where),
        **_power(g, where),
    }
    seen = set()
    for i, p in enumerate(out["prices"]):
        key = (p["cloud"], p["region"], p["kind"])
        if key in seen:
            raise ProfileError(f"two {p['kind']} prices for {p['cloud']}/{p['region']}", where=f"{where}.prices[{i}]")
        seen.add(key)
    return out


def _device_kind(g: dict, where: str) -> str:
    kind = g.get("device_kind", "gpu")
    if kind not in DEVICE_KINDS:
        raise ProfileError(f"device_kind {kind!r}", where=f"{where}.device_kind", hint="use gpu or cpu")
    return kind


def _power(d: dict, where: str) -> dict:
    """Idle and busy watts per device (both or neither), their source, and whether they are assumed."""
    idle = _number(d, "idle_w", where, required=False)
    busy = _number(d, "busy_w", where, required=False)
    if (idle is None) != (busy is None):
        raise ProfileError("give both idle_w and busy_w (watts per device) or neither", where=f"{where}.idle_w")
    if busy is not None and busy < idle:
        raise ProfileError(f"busy_w {busy} is below idle_w {idle}", where=f"{where}.busy_w")
    assumed = d.get("power_assumed", True)
    if not isinstance(assumed, bool):
        raise ProfileError("power_assumed must be true or false", where=f"{where}.power_assumed")
    return {"idle_w": idle, "busy_w": busy, "power_source": str(d.get("power_source", "")), "power_assumed": assumed}


def device_power(deployment: dict, gpu: dict) -> dict | None:
    """The engine's ``device`` block: the deployment's own watts if it has them, else its device type's."""
    own = deployment.get("busy_w") is not None
    src = deployment if own else gpu
    if src.get("busy_w") is None:
        return None
    return {"kind": gpu.get("device_kind", "gpu"), "idle_w": float(src["idle_w"]), "busy_w": float(src["busy_w"]),
            "source": str(src.get("power_source", "")), "assumed": bool(src.get("power_assumed", True))}


def complete_model(m: dict, where: str) -> dict:
    if not isinstance(m, dict):
        raise ProfileError("a model must be an object", where=where)
    params = _number(m, "parameters_billion", where, strict=True)
    layers = _number(m, "layers", where, strict=True, integer=True)
    dtype_bytes = _number(m, "dtype_bytes", where, required=False, strict=True) or 2.0
    kvb = _number(m, "kv_bytes_per_token", where, required=False, strict=True, integer=True)
    kv_heads = _number(m, "kv_heads", where, required=False, strict=True, integer=True)
    head_dim = _number(m, "head_dim", where, required=False, strict=True, integer=True)
    if kvb is None:
        if kv_heads is None or head_dim is None:
            raise ProfileError(
                "missing kv_bytes_per_token",
                where=f"{where}.kv_bytes_per_token",
                hint="give kv_bytes_per_token, or kv_heads and head_dim to compute it",
            )
        kvb = kv_bytes_per_token(layers, kv_heads, head_dim, int(dtype_bytes))
    aliases = m.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ProfileError("aliases must be a list of names", where=f"{where}.aliases")
    return {
        "name": _name(m, "name", where),
        "max_model_len": _number(m, "max_model_len", where, required=False, strict=True, integer=True),
        "max_model_len_source": str(m.get("max_model_len_source", "")),
        "display_name": str(m.get("display_name") or m["name"]),
        "parameters_billion": params,
        "layers": layers,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "dtype_bytes": dtype_bytes,
        "kv_bytes_per_token": kvb,
        "weights_gb": _number(m, "weights_gb", where, required=False, strict=True)
        or round(weights_gb(params, dtype_bytes), 3),
        "aliases": aliases,
        "source": str(m.get("source", "")),
    }


OPTIONAL_COEFFICIENTS = ("c2", "c_ctx", "c_sq", "c_req")  # default 0: a linear prefill, a context-free decode
PREFILL_RICH_KEYS = ("c_sq", "c_req")  # the richer prefill form's terms (kept only when non-zero)


def _coefficients(d: dict, key: str, names: tuple[str, ...], where: str) -> dict:
    block = d.get(key)
    if not isinstance(block, dict):
        raise ProfileError(
            f"missing {key} coefficients",
            where=f"{where}.{key}",
            hint=f"give {{{', '.join(names)}}} in seconds, or fit them from a perf_model.csv table",
        )
    unknown = set(block) - set(names)
    if unknown:
        raise ProfileError(
            f"unknown {key} coefficient(s) {sorted(unknown)}", where=f"{where}.{key}", hint=f"use {', '.join(names)}"
        )
    return {n: _number(block, n, f"{where}.{key}", required=n not in OPTIONAL_COEFFICIENTS) or 0.0 for n in names}


RANGE_KEYS = ("batch_size", "prompt_tokens", "batch_prompt_tokens", "context_tokens", "batch_context_tokens")


def complete_fitted_range(value, where: str) -> dict:
    """The measured range a latency model was fitted on: {key: [min, max] or null} for RANGE_KEYS (planner/
    catalogue/fit.py fitted_range), plus the training row counts; {} when unknown (entered by hand)."""
    if value is None or value == {}:
        return {}
    if not isinstance(value, dict):
        raise ProfileError("fitted_range must be an object", where=where, hint="use {\"prompt_tokens\": [lo, hi], ...}")
    unknown = set(value) - set(RANGE_KEYS) - {"rows"}
    if unknown:
        raise ProfileError(f"unknown fitted_range key(s) {sorted(unknown)}", where=where, hint="use " + ", ".join(RANGE_KEYS))
    out: dict = {}
    for key in RANGE_KEYS:
        span = value.get(key)
        if span is None:
            out[key] = None
            continue
        ok = (isinstance(span, list) and len(span) == 2
              and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
                      for x in span) and span[0] <= span[1])
        if not ok:
            raise ProfileError(f"{key} is {span!r}", where=f"{where}.{key}", hint="give [min, max] with 0 <= min <= max")
        out[key] = [float(span[0]), float(span[1])]
    rows = value.get("rows")
    if isinstance(rows, dict):
        out["rows"] = {k: int(v) for k, v in rows.items() if isinstance(v, int) and not isinstance(v, bool)}
    return out


def _max_model_len(d: dict, model: dict, where: str) -> int | None:
    own = _number(d, "max_model_len", where, required=False, strict=True, integer=True)
    limit = model.get("max_model_len")
    if own is not None and limit is not None and own > limit:
        raise ProfileError(f"max_model_len {own} is above the model's context ({limit} tokens)",
                           where=f"{where}.max_model_len", hint=f"use at most {limit}, or leave it out")
    return own if own is not None else limit


def _model_and_gpu(d: dict, where: str, gpus: dict, models: dict) -> tuple[str, str]:
    model_name, gpu_name = _name(d, "model", where), _name(d, "gpu", where)
    if model_name not in models:
        raise ProfileError(
            f"unknown model {model_name!r}",
            where=f"{where}.model",
            hint="define it in the models list or use a catalogue model name",
        )
    if gpu_name not in gpus:
        raise ProfileError(
            f"unknown GPU type {gpu_name!r}",
            where=f"{where}.gpu",
            hint="define it in the gpu_types list or use a catalogue GPU name",
        )
    return model_name, gpu_name


def _startup(d: dict, where: str) -> dict:
    startup = dict(DEFAULT_STARTUP)
    given = d.get("startup") or {}
    if not isinstance(given, dict):
        raise ProfileError("startup must be an object", where=f"{where}.startup")
    for k in given:
        if k not in DEFAULT_STARTUP:
            raise ProfileError(
                f"unknown startup key {k!r}", where=f"{where}.startup.{k}", hint="use " + ", ".join(DEFAULT_STARTUP)
            )
        startup[k] = _number(given, k, f"{where}.startup")
    return startup


def _kv_capacity(d: dict, where: str, *, gpu: dict, model: dict, gpi: int, util: float) -> int:
    kv = _number(d, "kv_capacity_tokens", where, required=False, integer=True)
    if kv is not None:
        return kv
    try:
        return kv_capacity_tokens(
            gpu_memory_gb=gpu["memory_gb"],
            gpus=gpi,
            weights_gb=model["weights_gb"],
            kv_bytes_per_token=model["kv_bytes_per_token"],
            memory_utilisation=util,
        )
    except ProfileError as exc:
        raise ProfileError(exc.message, where=f"{where}.tp", hint=exc.hint) from None


def _theta_target(d: dict, where: str) -> ThetaTarget:
    target_in = d.get("theta_target") or {}
    if not isinstance(target_in, dict):
        raise ProfileError("theta_target must be an object", where=f"{where}.theta_target")
    try:
        return ThetaTarget(**{**ThetaTarget().as_dict(), **target_in})
    except TypeError:
        raise ProfileError(
            "unknown theta_target key",
            where=f"{where}.theta_target",
            hint="use prompt_tokens, output_tokens, ttft_s, tbt_s",
        ) from None


def complete_deployment(d: dict, where: str, *, gpus: dict, models: dict) -> dict:
    """Validate one deployment and fill derived fields; ``gpus``/``models`` map names to completed dicts."""
    if not isinstance(d, dict):
        raise ProfileError("a deployment must be an object", where=where)
    model_name, gpu_name = _model_and_gpu(d, where, gpus, models)
    model, gpu = models[model_name], gpus[gpu_name]
    tp = _number(d, "tp", where, strict=True, integer=True)
    gpi = _number(d, "gpus_per_instance", where, required=False, strict=True, integer=True) or tp
    if gpi < tp:
        raise ProfileError(f"gpus_per_instance {gpi} < tp {tp}", where=f"{where}.gpus_per_instance")
    util = _number(d, "memory_utilisation", where, required=False, strict=True) or DEFAULT_MEMORY_UTILISATION
    if util > 1:
        raise ProfileError(f"memory_utilisation {util} > 1", where=f"{where}.memory_utilisation", hint="use 0-1")
    prefill = _coefficients(d, "prefill", PREFILL_KEYS + PREFILL_RICH_KEYS, where)
    prefill = {k: v for k, v in prefill.items() if k in PREFILL_KEYS or v}
    decode = _coefficients(d, "decode", DECODE_KEYS, where)
    if prefill["c0"] + prefill["c1"] <= 0 or decode["c0"] + decode["c_batch"] <= 0:
        raise ProfileError("latency coefficients are all zero", where=where, hint="a prefill/decode step takes time")
    startup = _startup(d, where)
    kv = _kv_capacity(d, where, gpu=gpu, model=model, gpi=gpi, util=util)
    max_b = _number(d, "max_batch_size", where, required=False, strict=True, integer=True) or DEFAULT_MAX_BATCH_SIZE
    max_t = _number(d, "max_batch_tokens", where, required=False, strict=True, integer=True) or DEFAULT_MAX_BATCH_TOKENS
    target = _theta_target(d, where)
    theta = _number(d, "theta_tps", where, required=False)
    theta_detail = d.get("theta_detail")
    if theta is None:
        theta_detail = theta_tps(prefill, decode, kv_capacity_tokens=kv, max_batch_size=max_b, target=target)
        theta = theta_detail["theta_tps"]
    basis = d.get("basis", "manual")
    if basis not in BASES:
        raise ProfileError(f"basis {basis!r}", where=f"{where}.basis", hint="use " + ", ".join(BASES))
    base = deployment_name(model_name, gpu_name, tp)
    given = d.get("name")
    # a version of the same model x GPU x TP keeps its suffix ("<model>/<gpu>/tpN/physics-v2"); any other name is
    # replaced by the derived one
    name = given if isinstance(given, str) and given.startswith(base + "/") and len(given) <= 200 else base
    return {
        "name": name,
        "model": model_name,
        "gpu": gpu_name,
        "tp": tp,
        "gpus_per_instance": gpi,
        "memory_utilisation": util,
        "max_batch_size": max_b,
        "max_batch_tokens": max_t,
        "prefill": prefill,
        "decode": decode,
        "kv_capacity_tokens": kv,
        "theta_tps": float(theta),
        "theta_target": target.as_dict(),
        "theta_detail": theta_detail or {},
        "startup": startup,
        "price_cloud": str(d.get("price_cloud") or "azure"),
        "price_region": str(d.get("price_region") or "eastus"),
        "basis": basis,
        "estimated": bool(d.get("estimated", basis in ("derived", "estimated"))),
        "estimate_rule": str(d.get("estimate_rule", "")),
        "source": str(d.get("source", "")),
        "fit_report": d.get("fit_report") or {},
        "points": d.get("points") or [],
        "max_model_len": _max_model_len(d, model, where),
        "fitted_range": complete_fitted_range(
            d.get("fitted_range") if d.get("fitted_range") is not None else (d.get("fit_report") or {}).get("range"),
            f"{where}.fitted_range"),
        **_power(d, where),
    }


def complete_catalogue(doc, *, known_gpus: dict | None = None, known_models: dict | None = None) -> dict:
    """Validate a whole catalogue document. ``known_*``: entries it may refer to without defining."""
    if not isinstance(doc, dict):
        raise ProfileError(
            "a catalogue file is one JSON object",
            where="$",
            hint='use {"gpu_types": [...], "models": [...], "deployments": [...]}',
        )
    unknown = set(doc) - {"gpu_types", "models", "deployments", "version", "generated", "notes", "scaling"}
    if unknown:
        raise ProfileError(
            f"unknown key(s) {sorted(unknown)}",
            where="$",
            hint="allowed: gpu_types, models, deployments (and version, generated, notes)",
        )
    out: dict = {"gpu_types": [], "models": [], "deployments": []}
    for key in out:
        if not isinstance(doc.get(key, []), list):
            raise ProfileError(f"{key} must be a list", where=f"$.{key}")
    gpus = dict(known_gpus or {})
    models = dict(known_models or {})
    for i, g in enumerate(doc.get("gpu_types", [])):
        g = complete_gpu(g, f"$.gpu_types[{i}]")
        if g["name"] in {x["name"] for x in out["gpu_types"]}:
            raise ProfileError(f"GPU type {g['name']!r} defined twice", where=f"$.gpu_types[{i}].name")
        out["gpu_types"].append(g)
        gpus[g["name"]] = g
    for i, m in enumerate(doc.get("models", [])):
        m = complete_model(m, f"$.models[{i}]")
        if m["name"] in {x["name"] for x in out["models"]}:
            raise ProfileError(f"model {m['name']!r} defined twice", where=f"$.models[{i}].name")
        out["models"].append(m)
        models[m["name"]] = m
    names = set()
    for i, d in enumerate(doc.get("deployments", [])):
        d = complete_deployment(d, f"$.deployments[{i}]", gpus=gpus, models=models)
        if d["name"] in names:
            raise ProfileError(f"deployment {d['name']!r} defined twice", where=f"$.deployments[{i}]")
        names.add(d["name"])
        out["deployments"].append(d)
    return out


def instance_prices(gpu: dict, gpus_per_instance: int, cloud: str, region: str) -> dict:
    """USD per instance-hour for each kind at (cloud, region): per-GPU price x GPUs per instance."""
    out = {}
    for kind in PRICE_KINDS:
        match = [p for p in gpu.get("prices", []) if (p["cloud"], p["region"], p["kind"]) == (cloud, region, kind)]
        if not match:
            raise ProfileError(
                f"GPU type {gpu['name']!r} has no {kind} price for {cloud}/{region}",
                where=f"gpu {gpu['name']} prices",
                hint="add the price, or set the deployment's price_cloud/price_region to one that has all three",
            )
        out[kind] = round(match[0]["usd_per_gpu_hour"] * gpus_per_instance, 4)
    return out


def engine_spec(deployment: dict, gpu: dict, model: dict) -> dict:
    """The contract's engine deployment dict (all times in seconds)."""
    startup = {k: float(deployment["startup"][k]) for k in ENGINE_STARTUP_KEYS}
    return {
        "name": deployment["name"],
        "model": deployment["model"],
        "gpu": deployment["gpu"],
        "tp": int(deployment["tp"]),
        "gpus_per_instance": int(deployment["gpus_per_instance"]),
        "weights_gb": float(model["weights_gb"]),
        "kv_capacity_tokens": int(deployment["kv_capacity_tokens"]),
        "max_batch_size": int(deployment["max_batch_size"]),
        "max_batch_tokens": int(deployment["max_batch_tokens"]),
        "prefill": {k: float(v) for k, v in deployment["prefill"].items() if k in PREFILL_KEYS + PREFILL_RICH_KEYS},
        "decode": {k: float(deployment["decode"][k]) for k in DECODE_KEYS},
        "theta_tps": float(deployment["theta_tps"]),
        "startup": startup,
        "price_per_instance_hour": instance_prices(
            gpu, int(deployment["gpus_per_instance"]), deployment["price_cloud"], deployment["price_region"]
        ),
        "estimated": bool(deployment["estimated"]),
        **({"device": power} if (power := device_power(deployment, gpu)) else {}),
        # KV bytes per token (the model's): prices a swap-mode eviction's transfer (engine.preemption_mode "swap",
        # Chiron's swap to host memory); absent = unknown, and the engine refuses swap for the deployment
        **({"kv_bytes_per_token": int(kvb)} if (kvb := model.get("kv_bytes_per_token")) else {}),
        # context limit in force (the deployment's, else the model's; absent = unknown, no limit in the engine)
        **({"max_model_len": int(limit)} if (limit := deployment.get("max_model_len") or model.get("max_model_len"))
           else {}),
    }
