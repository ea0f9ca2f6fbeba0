"""Performance model of the SLINFER executor: interpolation over the authors' measured tables (spec 2.5).

Prefill time is a 1-D linear interpolation over prompt length (batch 1). Decode iteration time is bilinear in
(batch size, average context per request): for the two measured context lengths around the average, interpolate
(or extrapolate linearly from the last two points) over batch size, then interpolate linearly in context. The
grid of the artefact is not rectangular (long contexts were measured at smaller batches), so each context row is
interpolated on its own batch points. Beyond the last measured length or batch the last segment is extended
linearly (the paper profiles up to L_max = 4096; the trace's longer inputs go through the extension).
Django-free.
"""

from __future__ import annotations

import csv
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TABLES = ROOT / "fixtures" / "hardware" / "slinfer" / "latency_tables.csv"
CONCURRENCY = ROOT / "fixtures" / "hardware" / "slinfer" / "sllm_concurrency.csv"

GB = 1e9
# SLINFER artefact (SLINFER_core/scheduler/config*.py): weights (GB) and KV bytes per token
MODEL_FACTS = {
    "llama-3.2-3b": {"weights_gb": 6.1, "kv_bytes_per_token": 112 * 1024, "cpu_kv_gb": 16.0},
    "llama-2-7b": {"weights_gb": 12.6, "kv_bytes_per_token": 512 * 1024, "cpu_kv_gb": 32.0},
    "llama-3.1-8b": {"weights_gb": 22.0, "kv_bytes_per_token": 128 * 1024, "cpu_kv_gb": 32.0},
    "llama-2-13b": {"weights_gb": 24.3, "kv_bytes_per_token": 800 * 1024, "cpu_kv_gb": 32.0},
}


class PerfError(ValueError):
    def __init__(self, message: str, where: str = "", hint: str = ""):
        super().__init__(message)
        self.where, self.hint = where, hint


def _interp(xs: list[float], ys: list[float], x: float) -> float:
    """Piecewise-linear through (xs, ys), extended linearly beyond both ends (never below zero)."""
    if len(xs) == 1:
        return ys[0]
    i = bisect_left(xs, x)
    i = min(max(i, 1), len(xs) - 1)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    if x < xs[0]:  # below the first sample: hold the first value (tiny prompts / batch 1)
        return ys[0]
    return max(0.0, y0 + (y1 - y0) * (x - x0) / (x1 - x0))


@dataclass
class Profile:
    """Measured tables of one (model, node label): seconds per iteration."""

    model: str
    device: str
    prefill_x: list[float] = field(default_factory=list)
    prefill_y: list[float] = field(default_factory=list)
    decode_ctx: list[float] = field(default_factory=list)  # sorted context lengths
    decode_rows: list[tuple[list[float], list[float]]] = field(default_factory=list)  # (batches, seconds) per ctx

    def prefill(self, tokens: float) -> float:
        return _interp(self.prefill_x, self.prefill_y, float(tokens))

    def decode(self, batch: float, avg_ctx: float) -> float:
        if batch <= 0:
            return 0.0
        per_ctx = [_interp(b, s, float(batch)) for b, s in self.decode_rows]
        return _interp(self.decode_ctx, per_ctx, float(avg_ctx))


@lru_cache(maxsize=4)
def load_profiles(path: str = str(TABLES)) -> dict[tuple[str, str], Profile]:
    """{(model, device): Profile} for the node labels ``cpu`` (Xeon 6462C, AMX) and ``gpu`` (A100-80GB)."""
    pre: dict[tuple[str, str], dict[float, float]] = {}
    dec: dict[tuple[str, str], dict[float, dict[float, float]]] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["node_label"] not in ("cpu", "gpu"):
                continue
            key = (row["model"], row["device"])
            seconds = float(row["iteration_ms"]) / 1000.0
            if row["phase"] == "prefill":
                pre.setdefault(key, {})[float(row["prompt_tokens"])] = seconds
            else:
                dec.setdefault(key, {}).setdefault(float(row["context_tokens"]), {})[float(row["batch_size"])] = seconds
    out = {}
    for key in pre:
        p = Profile(model=key[0], device=key[1])
        p.prefill_x = sorted(pre[key])
        p.prefill_y = [pre[key][x] for x in p.prefill_x]
        p.decode_ctx = sorted(dec[key])
        for c in p.decode_ctx:
            bs = sorted(dec[key][c])
            p.decode_rows.append((bs, [dec[key][c][b] for b in bs]))
        out[key] = p
    return out


@lru_cache(maxsize=4)
def load_concurrency(path: str = str(CONCURRENCY)) -> dict[tuple[str, str], tuple[int | None, int | None]]:
    """{(model, device): (exclusive limit, limit with 2 shares)} of the ServerlessLLM baselines (node labels cpu/gpu)."""
    out = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["node_label"] not in ("cpu", "gpu"):
                continue
            excl = int(row["sllm_concurrency"]) if row["sllm_concurrency"] else None
            share = row["sllm_share_concurrency (shares:limit)"].split(":")[1]
            out[(row["model"], row["device"])] = (excl, None if share == "None" else int(share))
    return out


def profile(model: str, device: str) -> Profile:
    profiles = load_profiles()
    if (model, device) not in profiles:
        raise PerfError(f"no measured table for {model} on {device}", where="model",
                        hint=f"one of {sorted({m for m, _ in profiles})}")
    return profiles[(model, device)]


def ttft_slo(input_tokens: float) -> float:
    """TTFT_SLO(L) = min(max(0.5, L/512), 8) s (spec 2.2)."""
    return min(max(0.5, input_tokens / 512.0), 8.0)
