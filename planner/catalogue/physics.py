"""A physics-informed latency model for any model on any GPU (Django-free).

One engine iteration of a tensor-parallel instance (TP GPUs) that decodes B sequences holding C context tokens
in total and prefills T prompt tokens (chunks of prompts P_i) costs, per GPU:

    weights read once per step        W / (TP * BW * eta_mem)
    KV read per decode context token  kv_bytes / (TP * BW * eta_mem)          (x C)
    GEMM compute per token            2 * N_active / (TP * F * eta_flop)      (x (B + T))
    attention compute                 2 * L * d_attn * P^2 / (TP * F * eta_flop) per prompt (causal), and
                                      4 * L * d_attn / (TP * F * eta_flop) per decode context token
    LM head per decoded token         2 * V * d / (TP * F * eta_flop)
    TP all-reduce per layer           2 per layer, each a ring all-reduce (alpha-beta model: 2 (TP-1) latency
                                      hops and 2 (TP-1)/TP of the tensor per GPU): latency (TP-1) * alpha
                                      (alpha = allreduce_s, one all-reduce at TP 2), and 2 (TP-1)/TP * d * bytes
                                      per token sent one way over the GPU link: the datasheet's link figure is
                                      both directions summed (H100 SXM NVLink 900 GB/s = 450 each way), so
                                      link_gbs / 2 x eta_link (the share of it an all-reduce of a decode step's
                                      size reaches)
    fixed per-step overhead           step_s + layers * layer_s (scheduler, sampling; kernel launches and
                                      synchronisation per layer)

with W the weight bytes, BW the HBM bandwidth, F the dense 16-bit tensor FLOP/s, L layers, d the hidden size,
d_attn = heads x head_dim, V the vocabulary. Memory and compute terms are added (not max'ed): the efficiencies
absorb their overlap. The terms are linear in (1, B, C, T, sum P^2), so they map exactly onto the engine's
latency contract (``prefill c0 + c1 T + c_sq sum P^2``, ``decode c0 + c_batch B + c_ctx C``; the engine counts
the shared fixed cost of a mixed chunked-prefill step once). ``client_s`` is time the engine does not see (HTTP,
tokenisation, streaming): it is added to every simulated TTFT and E2E by the validation, not to the engine.

MoE (experts > 1): GEMM compute counts the active experts (top_k) only; every expert's weights are read each
step (true once a step holds more than a few tokens: with 8 experts and top-2, 10 tokens touch all experts with
probability > 0.9).

The efficiencies are per GPU type (one ``Efficiency`` fits every model on it): fitted from benchmark runs by
simulate-and-fit (planner/benchmarks/core/calibrate.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path

from planner.catalogue.errors import ProfileError

DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Architecture:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    experts: int = 1
    top_k: int = 1
    gated_mlp: bool = True
    tied_embeddings: bool = False
    dtype_bytes: float = 2.0
    head_dim: int = 0  # 0 = hidden / heads
    hf_id: str = ""
    max_position_embeddings: int = 0
    source: str = ""

    @property
    def hd(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def attn_params_per_layer(self) -> int:
        d, hd = self.hidden, self.hd
        return d * self.heads * hd * 2 + d * self.kv_heads * hd * 2  # q, o; k, v

    @property
    def expert_params(self) -> int:
        return (3 if self.gated_mlp else 2) * self.hidden * self.ffn

    @property
    def layer_params_total(self) -> int:
        router = self.hidden * self.experts if self.experts > 1 else 0
        return self.attn_params_per_layer + self.experts * self.expert_params + router

    @property
    def layer_params_active(self) -> int:
        router = self.hidden * self.experts if self.experts > 1 else 0
        return self.attn_params_per_layer + self.top_k * self.expert_params + router

    @property
    def parameters(self) -> int:
        emb = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return self.layers * self.layer_params_total + emb

    @property
    def weight_bytes(self) -> float:
        return self.parameters * self.dtype_bytes

    @property
    def kv_bytes_per_token(self) -> float:
        return 2 * self.layers * self.kv_heads * self.hd * self.dtype_bytes


@dataclass(frozen=True)
class Datasheet:
    name: str
    dense_tflops: float
    hbm_tbs: float
    memory_gb: float
    link_gbs: float
    display_name: str = ""
    source: str = ""


@dataclass(frozen=True)
class Efficiency:
    """The fitted coefficients of one GPU type (and serving engine): shares of the datasheet's bandwidth and
    FLOP/s reached, the fixed overhead per step and per layer and step, the latency of one all-reduce, the share
    of the link's one-way bandwidth an all-reduce reaches, and the client-side overhead per request."""

    eta_mem: float = 0.80
    eta_flop: float = 0.55
    step_s: float = 0.0
    layer_s: float = 50e-6
    allreduce_s: float = 10e-6
    client_s: float = 0.0
    eta_link: float = 1.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict, where: str = "efficiency") -> Efficiency:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ProfileError(f"unknown coefficient(s) {sorted(unknown)}", where=where,
                               hint=f"known: {sorted(names)}")
        eff = cls(**{k: float(v) for k, v in d.items()})
        # effective shares: above 1 where the additive form counts compute that really overlaps the weight read
        if not (0 < eff.eta_mem <= 3.0 and 0 < eff.eta_flop <= 3.0):
            raise ProfileError("eta_mem and eta_flop must be in (0, 3]", where=where)
        if not 0 < eff.eta_link <= 1.0:
            raise ProfileError("eta_link must be in (0, 1]", where=where)
        if min(eff.step_s, eff.layer_s, eff.allreduce_s, eff.client_s) < 0:
            raise ProfileError("step_s, layer_s, allreduce_s and client_s must be >= 0", where=where)
        return eff


@lru_cache(maxsize=1)
def architectures() -> dict[str, Architecture]:
    data = json.loads((DATA / "architectures.json").read_text())
    out = {}
    for m in data["models"]:
        arch = Architecture(**m)
        out[arch.name] = arch
        if arch.hf_id:
            out[arch.hf_id] = arch
            out[arch.hf_id.split("/")[-1]] = arch
            out[arch.hf_id.split("/")[-1].lower()] = arch
    return out


@lru_cache(maxsize=1)
def datasheets() -> dict[str, Datasheet]:
    data = json.loads((DATA / "datasheets.json").read_text())
    return {g["name"]: Datasheet(**g) for g in data["gpus"]}


def architecture(name: str) -> Architecture:
    try:
        return architectures()[name]
    except KeyError:
        raise ProfileError(f"no architecture for model {name!r}", where="model",
                           hint=f"known: {sorted({a.name for a in architectures().values()})}") from None


def datasheet(name: str) -> Datasheet:
    try:
        return datasheets()[name]
    except KeyError:
        raise ProfileError(f"no datasheet for GPU type {name!r}", where="gpu",
                           hint=f"known: {sorted(datasheets())}") from None


def coefficients(arch: Architecture, gpu: Datasheet, tp: int, eff: Efficiency) -> tuple[dict, dict]:
    """The engine contract's (prefill, decode) coefficients, seconds, for one instance of ``tp`` GPUs."""
    if tp < 1:
        raise ProfileError("tp must be >= 1", where="tp")
    bw = gpu.hbm_tbs * 1e12 * eff.eta_mem * tp  # bytes/s over the instance
    flops = gpu.dense_tflops * 1e12 * eff.eta_flop * tp
    link = gpu.link_gbs * 1e9 / 2 * eff.eta_link  # one way (the datasheet sums both directions)
    d_attn = arch.heads * arch.hd
    gemm_per_token = 2.0 * arch.layers * arch.layer_params_active / flops
    comm_per_token = 0.0
    comm_fixed = 0.0
    if tp > 1:  # two all-reduces per layer (attention out, MLP out), ring: 2 (tp-1)/tp of the tensor per GPU and
        # 2 (tp-1) latency hops (Thakur, Rabenseifner & Gropp 2005), so (tp-1) x the TP-2 latency allreduce_s
        comm_per_token = 2 * arch.layers * 2 * (tp - 1) / tp * arch.hidden * arch.dtype_bytes / link
        comm_fixed = 2 * arch.layers * (tp - 1) * eff.allreduce_s
    fixed = eff.step_s + arch.layers * eff.layer_s + arch.weight_bytes / bw + comm_fixed
    lm_head = 2.0 * arch.vocab * arch.hidden / flops
    prefill = {
        "c0": fixed,
        "c1": gemm_per_token + comm_per_token,
        "c2": 0.0,
        "c_sq": 2.0 * arch.layers * d_attn / flops,  # causal QK^T and AV: 2 * 2 * d * P^2 / 2 per layer
        "c_req": lm_head,  # logits of the prompt's last token
    }
    # a decode step's GEMMs are added to its weight read as a prefill's are (eta_flop absorbs their overlap): below
    # the roofline crossover (B ~ F / BW ~ 300 tokens) a perfect kernel would hide them under the read, but real
    # GEMMs at a few dozen rows do not, and the measured step time grows with the batch beyond the KV it reads
    decode = {
        "c0": fixed,
        "c_batch": comm_per_token + gemm_per_token + lm_head,
        "c_ctx": arch.kv_bytes_per_token / bw + 4.0 * arch.layers * d_attn / flops,
    }
    return prefill, decode


def kv_capacity(arch: Architecture, gpu: Datasheet, tp: int, memory_utilisation: float = 0.9) -> int:
    """KV tokens next to the weights: (tp * memory * utilisation - weights) / KV bytes per token (GB = 1e9 B)."""
    free = tp * gpu.memory_gb * 1e9 * memory_utilisation - arch.weight_bytes
    if free <= 0:
        raise ProfileError(f"the weights of {arch.name} ({arch.weight_bytes / 1e9:.0f} GB) do not fit in {tp} x "
                           f"{gpu.name} at {memory_utilisation:.0%} memory", where="tp",
                           hint="use a higher tensor-parallel degree or a GPU with more memory")
    return int(free // arch.kv_bytes_per_token)


def deployment_spec(model: str, gpu: str, tp: int, eff: Efficiency, *, max_num_seqs: int = 256,
                    max_num_batched_tokens: int = 8192, memory_utilisation: float = 0.9,
                    max_model_len: int = 0, name: str = "") -> dict:
    """An engine deployment dict (the contract: ``simulations.engine.scenario.config.DeploymentSpec.from_dict``)."""
    arch, sheet = architecture(model), datasheet(gpu)
    prefill, decode = coefficients(arch, sheet, tp, eff)
    return {
        "name": name or f"{arch.name}/{sheet.name}/tp{tp}/physics",
        "model": arch.name, "gpu": sheet.name, "tp": tp, "gpus_per_instance": tp,
        "weights_gb": round(arch.weight_bytes / 1e9, 3),
        "kv_capacity_tokens": kv_capacity(arch, sheet, tp, memory_utilisation),
        "max_batch_size": int(max_num_seqs), "max_batch_tokens": int(max_num_batched_tokens),
        "prefill": prefill, "decode": decode,
        "kv_bytes_per_token": arch.kv_bytes_per_token,
        **({"max_model_len": int(max_model_len)} if max_model_len else {}),
    }
