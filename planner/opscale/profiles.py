"""Per-operator profiles T_v(b, L, p, phase), memory M_v and output bytes, from Vidur's tables (Django-free).

Two sources, always labelled:

* ``measured``: Vidur's per-operator medians for (gpu, model, tp), interpolated over ``num_tokens``
  (linear between profiled points, proportional beyond the largest one).
* ``derived``: a roofline fit ``T = c0 + max(FLOPs / F, bytes / BW)`` per GPU for the GEMMs and
  ``T = c0 + bytes / BW`` for the element-wise operators, fitted on every measured model of that GPU and
  evaluated on the target model's dimensions (the paper's Qwen2 family, or any model without a table).
  Attention has one public table (A100, Llama-2-70B dimensions, TP 2); it is always fitted
  (prefill ``c0 + FLOPs / F``, decode ``c0 + c1 * b + KV bytes / BW``) and rescaled by heads, so it is
  derived for every model; on other GPUs it is further scaled by the GEMM roofline ratio.

``fit_report()`` gives the held-out error of each fit (leave-one-model-out for the GEMMs, a 20 % split
for attention), which docs/opscale.md quotes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

DATA_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "opscale"
BYTES = 2  # fp16 / bf16 weights and activations

# Operator nodes of one decoder layer, in dataflow order (Vidur's names; ``attn`` is the attention kernel).
OPS = (
    "emb",
    "input_layernorm",
    "attn_pre_proj",
    "attn_rope",
    "attn",
    "attn_post_proj",
    "post_attention_layernorm",
    "mlp_up_proj",
    "mlp_act",
    "mlp_down_proj",
    "add",
)
GEMMS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
ELEMENTWISE = ("emb", "input_layernorm", "attn_rope", "post_attention_layernorm", "mlp_act", "add")


@dataclass(frozen=True)
class Arch:
    """Public model configuration (HF config.json; spec section 4.1 [EXTERNAL])."""

    name: str
    layers: int
    hidden: int
    ffn: int
    q_heads: int
    kv_heads: int
    vocab: int
    gated: bool = True

    @property
    def head_dim(self) -> int:
        return self.hidden // self.q_heads


ARCHS = {
    a.name: a
    for a in (
        Arch("llama-2-7b", 32, 4096, 11008, 32, 32, 32000),
        Arch("llama-2-70b", 80, 8192, 28672, 64, 8, 32000),
        Arch("llama-3-8b", 32, 4096, 14336, 32, 8, 128256),
        Arch("llama-3-70b", 80, 8192, 28672, 64, 8, 128256),
        Arch("qwen2-0.5b", 24, 896, 4864, 14, 2, 151936),
        Arch("qwen2-1.5b", 28, 1536, 8960, 12, 2, 151936),
        Arch("qwen2-7b", 28, 3584, 18944, 28, 4, 152064),
        Arch("qwen2-72b", 80, 8192, 29568, 64, 8, 152064),
    )
}


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_gb: float
    idle_w: float  # [EXTERNAL/OURS] typical idle draw; configurable per plan
    max_w: float  # board power (TDP)
    supports_sharing: bool = True  # MPS / MIG / green contexts


GPUS = {
    g.name: g
    for g in (
        Gpu("a100", 80.0, 60.0, 400.0),
        Gpu("h100", 80.0, 70.0, 700.0),
        Gpu("a40", 48.0, 30.0, 300.0),
    )
}


def _gemm_shape(op: str, a: Arch, p: int) -> tuple[int, int]:
    """(K, N) of the operator's weight matrix on one of ``p`` tensor-parallel workers."""
    hd = a.head_dim
    if op == "attn_pre_proj":
        return a.hidden, (a.q_heads + 2 * a.kv_heads) * hd // p
    if op == "attn_post_proj":
        return a.q_heads * hd // p, a.hidden
    if op == "mlp_up_proj":
        return a.hidden, (2 if a.gated else 1) * a.ffn // p
    if op == "mlp_down_proj":
        return a.ffn // p, a.hidden
    raise KeyError(op)


def gemm_flops_bytes(op: str, a: Arch, p: int, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k, n = _gemm_shape(op, a, p)
    m = np.asarray(tokens, dtype=float)
    return 2.0 * m * k * n, BYTES * (m * k + k * n + m * n)


def elementwise_bytes(op: str, a: Arch, p: int, tokens: np.ndarray) -> np.ndarray:
    m = np.asarray(tokens, dtype=float)
    hd = a.head_dim
    per_token = {
        "emb": a.hidden,
        "input_layernorm": 2 * a.hidden,
        "post_attention_layernorm": 2 * a.hidden,
        "attn_rope": 2 * (a.q_heads + a.kv_heads) * hd / p,
        "mlp_act": 3 * a.ffn / p,
        "add": 3 * a.hidden,
    }[op]
    return BYTES * m * per_token


def attention_prefill_flops(a: Arch, p: int, batch, chunk, kv) -> np.ndarray:
    """QK^T and PV over a causal chunk of ``chunk`` tokens after ``kv`` earlier ones, per worker."""
    c = np.asarray(chunk, dtype=float)
    keys = np.asarray(kv, dtype=float) + (c + 1.0) / 2.0
    return 4.0 * np.asarray(batch, dtype=float) * c * keys * (a.q_heads / p) * a.head_dim


def attention_decode_bytes(a: Arch, p: int, batch, kv) -> np.ndarray:
    return np.asarray(batch, dtype=float) * np.asarray(kv, dtype=float) * 2.0 * (a.kv_heads / p) * a.head_dim * BYTES


# ----------------------------------------------------------------------------------------------- data + fits


@cache
def linear_table() -> pd.DataFrame:
    return pd.read_csv(DATA_DIR / "linear_ops.csv")


@cache
def attention_table() -> pd.DataFrame:
    return pd.read_csv(DATA_DIR / "attention_a100.csv")


@cache
def _collective_curve(collective: str, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Vidur's A100 DGX timings of one collective among ``workers`` GPUs of one node: (fp16 elements, ms)."""
    t = pd.read_csv(DATA_DIR / "network_a100_dgx.csv")
    t = t[(t["collective"] == collective) & (t["num_workers"] == workers)]
    node = t[t["devices_per_node"] == t["devices_per_node"].max()]
    node = node.groupby("size", as_index=False)["ms"].median().sort_values("size")
    return node["size"].to_numpy(float), node["ms"].to_numpy(float)


def collective_ms(collective: str, workers: int, nbytes: float) -> float:
    """Time of an all_reduce or send_recv of ``nbytes`` (interpolated; proportional beyond the table)."""
    if workers < 2 or nbytes <= 0:
        return 0.0
    x, y = _collective_curve(collective, min(workers, 16) if collective == "all_reduce" else 2)
    elements = nbytes / BYTES
    if elements <= x[-1]:
        return float(np.interp(elements, x, y))
    return float(y[-1] * elements / x[-1])


TP_ALL_REDUCE = ("attn_post_proj", "mlp_down_proj")  # row-parallel layers end with an all-reduce


VIDUR_ATTENTION_ARCH = ARCHS["llama-2-70b"]
VIDUR_ATTENTION_TP = 2


def _mape(pred: np.ndarray, actual: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - actual) / actual))


@dataclass(frozen=True)
class GemmFit:
    c0_ms: float
    tflops: float
    tbps: float

    def predict_ms(self, flops, nbytes):
        return self.c0_ms + np.maximum(flops / (self.tflops * 1e9), nbytes / (self.tbps * 1e9))


@dataclass(frozen=True)
class BwFit:
    c0_ms: float
    tbps: float

    def predict_ms(self, nbytes):
        return self.c0_ms + nbytes / (self.tbps * 1e9)


def _rows(gpu: str, models=None) -> pd.DataFrame:
    t = linear_table()
    t = t[t["gpu"] == gpu]
    return t if models is None else t[t["model"].isin(models)]


def _gemm_features(rows: pd.DataFrame):
    flops, nbytes, actual = [], [], []
    for model, group in rows.groupby("model"):
        a = ARCHS[model]
        for tp, g in group.groupby("tp"):
            for op in GEMMS:
                f, b = gemm_flops_bytes(op, a, int(tp), g["num_tokens"].to_numpy())
                flops.append(f)
                nbytes.append(b)
                actual.append(g[op].to_numpy(dtype=float))
    return np.concatenate(flops), np.concatenate(nbytes), np.concatenate(actual)


def _ew_features(rows: pd.DataFrame):
    nbytes, actual = [], []
    for model, group in rows.groupby("model"):
        a = ARCHS[model]
        for tp, g in group.groupby("tp"):
            for op in ELEMENTWISE:
                nbytes.append(elementwise_bytes(op, a, int(tp), g["num_tokens"].to_numpy()))
                actual.append(g[op].to_numpy(dtype=float))
    return np.concatenate(nbytes), np.concatenate(actual)


def _fit_gemm(rows: pd.DataFrame) -> GemmFit:
    flops, nbytes, actual = _gemm_features(rows)

    def resid(x):
        fit = GemmFit(math.exp(x[0]), math.exp(x[1]), math.exp(x[2]))
        return np.log(fit.predict_ms(flops, nbytes)) - np.log(actual)

    sol = least_squares(resid, x0=[math.log(0.01), math.log(200.0), math.log(1.5)])
    return GemmFit(*(math.exp(v) for v in sol.x))


def _fit_bw(rows: pd.DataFrame) -> BwFit:
    nbytes, actual = _ew_features(rows)

    def resid(x):
        return np.log(BwFit(math.exp(x[0]), math.exp(x[1])).predict_ms(nbytes)) - np.log(actual)

    sol = least_squares(resid, x0=[math.log(0.005), math.log(1.0)])
    return BwFit(*(math.exp(v) for v in sol.x))


@cache
def gemm_fit(gpu: str, exclude: str | None = None) -> GemmFit:
    models = [m for m in linear_table()["model"].unique() if m != exclude]
    return _fit_gemm(_rows(gpu, models))


@cache
def bw_fit(gpu: str, exclude: str | None = None) -> BwFit:
    models = [m for m in linear_table()["model"].unique() if m != exclude]
    return _fit_bw(_rows(gpu, models))


@dataclass(frozen=True)
class AttentionFit:
    prefill_c0_ms: float
    prefill_tflops: float
    decode_c0_ms: float
    decode_per_seq_ms: float
    decode_tbps: float

    def prefill_ms(self, flops):
        return self.prefill_c0_ms + flops / (self.prefill_tflops * 1e9)

    def decode_ms(self, batch, nbytes):
        return self.decode_c0_ms + self.decode_per_seq_ms * batch + nbytes / (self.decode_tbps * 1e9)


def _attention_split(seed: int = 7):
    t = attention_table()
    test = np.random.default_rng(seed).random(len(t)) < 0.2
    return t[~test], t[test]


def _fit_attention(t: pd.DataFrame) -> AttentionFit:
    a, p = VIDUR_ATTENTION_ARCH, VIDUR_ATTENTION_TP
    pre = t[t["is_prefill"] == 1]
    flops = attention_prefill_flops(a, p, pre["batch_size"], pre["prefill_chunk_size"], pre["kv_cache_size"])
    y = pre["attn_ms"].to_numpy()
    # relative least squares, non-negative: weights 1/y
    coef, *_ = np.linalg.lstsq(np.c_[np.ones_like(y), flops] / y[:, None], np.ones_like(y), rcond=None)
    c0, slope = max(coef[0], 1e-4), max(coef[1], 1e-15)
    dec = t[t["is_prefill"] == 0]
    nbytes = attention_decode_bytes(a, p, dec["batch_size"], dec["kv_cache_size"])
    y2 = dec["attn_ms"].to_numpy()
    x2 = np.c_[np.ones_like(y2), dec["batch_size"].to_numpy(float), nbytes]
    coef2, *_ = np.linalg.lstsq(x2 / y2[:, None], np.ones_like(y2), rcond=None)
    d0, d1, d2 = max(coef2[0], 1e-4), max(coef2[1], 0.0), max(coef2[2], 1e-15)
    return AttentionFit(c0, 1.0 / slope / 1e9, d0, d1, 1.0 / d2 / 1e9)


@cache
def attention_fit(held_out: bool = False) -> AttentionFit:
    train, _ = _attention_split()
    return _fit_attention(train if held_out else attention_table())


def _attention_predict(fit: AttentionFit, t: pd.DataFrame) -> np.ndarray:
    a, p = VIDUR_ATTENTION_ARCH, VIDUR_ATTENTION_TP
    pre = t["is_prefill"].to_numpy() == 1
    out = np.empty(len(t))
    f = attention_prefill_flops(a, p, t["batch_size"], t["prefill_chunk_size"], t["kv_cache_size"])
    out[pre] = fit.prefill_ms(f[pre])
    nb = attention_decode_bytes(a, p, t["batch_size"], t["kv_cache_size"])
    out[~pre] = fit.decode_ms(t["batch_size"].to_numpy(float)[~pre], nb[~pre])
    return out


@cache
def fit_report() -> dict:
    """Held-out mean absolute percentage errors of every fit (fractions, not percent)."""
    out: dict = {"gemm": {}, "elementwise": {}}
    t = linear_table()
    for gpu in sorted(t["gpu"].unique()):
        models = sorted(t[t["gpu"] == gpu]["model"].unique())
        for model in models:
            held = _rows(gpu, [model])
            if len(models) > 1:
                g, bw = gemm_fit(gpu, exclude=model), bw_fit(gpu, exclude=model)
                how = "leave-one-model-out"
            else:
                g, bw = gemm_fit(gpu), bw_fit(gpu)
                how = "in-sample (only one model profiled on this GPU)"
            f, b, y = _gemm_features(held)
            nb, y2 = _ew_features(held)
            out["gemm"][f"{gpu}/{model}"] = {"mape": _mape(g.predict_ms(f, b), y), "how": how, "rows": int(len(y))}
            out["elementwise"][f"{gpu}/{model}"] = {
                "mape": _mape(bw.predict_ms(nb), y2),
                "how": how,
                "rows": int(len(y2)),
            }
    train, test = _attention_split()
    fit = attention_fit(held_out=True)
    pre = test["is_prefill"].to_numpy() == 1
    pred = _attention_predict(fit, test)
    y = test["attn_ms"].to_numpy()
    out["attention"] = {
        "prefill_mape": _mape(pred[pre], y[pre]),
        "decode_mape": _mape(pred[~pre], y[~pre]),
        "how": "random 20 % of rows held out (seed 7)",
        "rows": int(len(test)),
    }
    out["gpus"] = {
        gpu: {"gemm": gemm_fit(gpu).__dict__, "elementwise": bw_fit(gpu).__dict__} for gpu in sorted(t["gpu"].unique())
    }
    out["attention_fit"] = attention_fit().__dict__
    return out


# ------------------------------------------------------------------------------------------------ the profile


@dataclass
class OperatorProfile:
    """T_v, M_v and output bytes of every operator of one model on one GPU type.

    Times are seconds for ALL layers of the model (spec A5: a node is an operator type across the layers),
    memory in bytes. ``sources[op]`` is "measured" or "derived"."""

    arch: Arch
    gpu: Gpu
    sources: dict[str, str]
    _table: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def derived(self) -> bool:
        return any(s == "derived" for s in self.sources.values())

    @property
    def ops(self) -> tuple[str, ...]:
        return OPS

    def _layers(self, op: str) -> int:
        return 1 if op == "emb" else self.arch.layers

    def _linear_ms(self, op: str, tokens: float, p: int) -> float:
        key = (op, p)
        if key in self._table:
            x, y = self._table[key]
            if tokens <= x[-1]:
                return float(np.interp(tokens, x, y))
            return float(y[-1] * tokens / x[-1])
        if op in GEMMS:
            f, b = gemm_flops_bytes(op, self.arch, p, np.array([tokens]))
            return float(gemm_fit(self.gpu.name).predict_ms(f, b)[0])
        nb = elementwise_bytes(op, self.arch, p, np.array([tokens]))
        return float(bw_fit(self.gpu.name).predict_ms(nb)[0])

    def _attention_ms(self, phase: str, b: int, length: float, p: int) -> float:
        a = self.arch
        fit = attention_fit()
        if phase == "prefill":
            ms = fit.prefill_ms(attention_prefill_flops(a, p, b, length, 0.0))
            scale = _attention_gpu_scale(self.gpu.name, "prefill")
        else:
            ms = fit.decode_ms(b, attention_decode_bytes(a, p, b, length))
            scale = _attention_gpu_scale(self.gpu.name, "decode")
        return float(ms) * scale

    def time_s(self, op: str, phase: str, b: int, length: float, p: int = 1) -> float:
        """Service time of one batch of ``b`` requests (prefill: ``length`` input tokens each; decode: one token
        each, attending over ``length`` tokens of context) on one replica with parallelism ``p``, seconds."""
        key = ("t", op, phase, b, length, p)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        tokens = b * length if phase == "prefill" else b
        if op == "attn":
            ms = self._attention_ms(phase, b, length, p)
        else:
            ms = self._linear_ms(op, float(tokens), p)
        if p > 1 and op in TP_ALL_REDUCE:  # Vidur's operator times exclude the tensor-parallel all-reduce
            ms += collective_ms("all_reduce", p, BYTES * tokens * self.arch.hidden)
        value = ms * self._layers(op) / 1e3
        self._cache[key] = value
        return value

    def handoff_s(self, op: str, phase: str, b: int, length: float, p: int = 1) -> float:
        """C_v: sending the operator's output to another GPU (Vidur's A100 DGX send/recv), all layers."""
        return collective_ms("send_recv", 2, self.out_bytes(op, phase, b, length, p)) * self._layers(op) / 1e3

    def sm_util(self, op: str, phase: str, b: int, length: float, p: int = 1) -> float:
        """Share of the GPU's compute or memory bandwidth (whichever binds) the kernel uses while it runs: the
        GEMM roofline's ideal time over the profiled time, in (0, 1]. Launch-bound small kernels score low."""
        key = ("u", op, phase, b, length, p)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        g = gemm_fit(self.gpu.name)
        tokens = np.array([float(b * length if phase == "prefill" else b)])
        a = self.arch
        if op in GEMMS:
            f, nb = gemm_flops_bytes(op, a, p, tokens)
            ideal = max(f[0] / (g.tflops * 1e9), nb[0] / (g.tbps * 1e9))
        elif op == "attn" and phase == "prefill":
            ideal = float(attention_prefill_flops(a, p, b, length, 0.0)) / (g.tflops * 1e9)
        elif op == "attn":
            ideal = float(attention_decode_bytes(a, p, b, length)) / (g.tbps * 1e9)
        else:
            ideal = float(elementwise_bytes(op, a, p, tokens)[0]) / (g.tbps * 1e9)
        measured = self.time_s(op, phase, b, length, p) * 1e3 / self._layers(op)
        value = float(min(1.0, max(1e-3, ideal / measured)))
        self._cache[key] = value
        return value

    def weight_bytes(self, op: str, p: int = 1) -> float:
        a = self.arch
        if op in GEMMS:
            k, n = _gemm_shape(op, a, p)
            return float(BYTES * k * n * a.layers)
        if op == "emb":
            return float(BYTES * a.vocab * a.hidden / p)
        if op in ("input_layernorm", "post_attention_layernorm"):
            return float(BYTES * a.hidden * a.layers)
        return 0.0

    def out_bytes(self, op: str, phase: str, b: int, length: float, p: int = 1) -> float:
        """Activation bytes one batch hands to the next operator (one layer at a time)."""
        tokens = b * length if phase == "prefill" else b
        a = self.arch
        width = {
            "attn_pre_proj": (a.q_heads + 2 * a.kv_heads) * a.head_dim / p,
            "attn_rope": (a.q_heads + 2 * a.kv_heads) * a.head_dim / p,
            "attn": a.q_heads * a.head_dim / p,
            "mlp_up_proj": (2 if a.gated else 1) * a.ffn / p,
            "mlp_act": a.ffn / p,
        }.get(op, a.hidden)
        return float(BYTES * tokens * width)

    def transient_bytes(self, op: str, phase: str, b: int, length: float, p: int = 1) -> float:
        """Activations of one batch (in + out, one layer), plus the KV cache of the batch for attention."""
        act = 2.0 * self.out_bytes(op, phase, b, length, p)
        if op == "attn":
            a = self.arch
            kv_tokens = b * length
            act += kv_tokens * 2.0 * (a.kv_heads / p) * a.head_dim * BYTES * a.layers
        return act

    def memory_bytes(self, op: str, phase: str, b: int, length: float, p: int = 1) -> float:
        return self.weight_bytes(op, p) + self.transient_bytes(op, phase, b, length, p)


@cache
def _fitted_gpus() -> frozenset[str]:
    return frozenset(linear_table()["gpu"].unique())


@cache
def _attention_gpu_scale(gpu: str, phase: str) -> float:
    """Attention was profiled on the A100 only: scale by the GEMM roofline's compute (prefill) or bandwidth
    (decode) ratio of ``gpu`` to the A100."""
    if gpu == "a100" or gpu not in _fitted_gpus():
        return 1.0
    a100, other = gemm_fit("a100"), gemm_fit(gpu)
    return a100.tflops / other.tflops if phase == "prefill" else a100.tbps / other.tbps


@cache
def load_profile(model: str, gpu: str) -> OperatorProfile:
    """The operator profile of ``model`` on ``gpu``; raises KeyError naming what exists."""
    if model not in ARCHS:
        raise KeyError(f"unknown model {model!r}; known: {sorted(ARCHS)}")
    if gpu not in GPUS:
        raise KeyError(f"unknown GPU type {gpu!r}; known: {sorted(GPUS)}")
    t = linear_table()
    rows = t[(t["gpu"] == gpu) & (t["model"] == model)]
    table: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
    for tp, g in rows.groupby("tp"):
        g = g.sort_values("num_tokens")
        for op in OPS:
            if op != "attn":
                table[(op, int(tp))] = (g["num_tokens"].to_numpy(float), g[op].to_numpy(float))
    measured = bool(table)
    sources = {op: ("measured" if measured and op != "attn" else "derived") for op in OPS}
    return OperatorProfile(ARCHS[model], GPUS[gpu], sources, table)


def available() -> list[dict]:
    """Every (model, gpu) pair the planner can use, with its source."""
    t = linear_table()
    measured = {(m, g) for g, m in t[["gpu", "model"]].drop_duplicates().itertuples(index=False)}
    return [
        {"model": m, "gpu": g, "linear_ops": "measured" if (m, g) in measured else "derived", "attention": "derived"}
        for m in sorted(ARCHS)
        for g in sorted(GPUS)
    ]
