"""KV-cache capacity and SageServe's theta (input tokens/s one instance sustains at a target latency).

Units: memory and weights in decimal GB (1e9 bytes); the "80 GB" of an A100/H100 is read as 80e9 bytes
(it is 80 GiB, so this is ~7 % conservative). Times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from planner.catalogue.errors import ProfileError
from planner.catalogue.fit import decode_time, prefill_time

DEFAULT_MEMORY_UTILISATION = 0.90  # share of GPU memory the server may use (vLLM's default)


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, dtype_bytes: int = 2) -> int:
    """K and V for every layer: 2 * layers * kv_heads * head_dim * bytes per element."""
    return 2 * int(layers) * int(kv_heads) * int(head_dim) * int(dtype_bytes)


def weights_gb(parameters_billion: float, bytes_per_parameter: float = 2.0) -> float:
    return float(parameters_billion) * float(bytes_per_parameter)


def kv_capacity_tokens(
    *,
    gpu_memory_gb: float,
    gpus: int,
    weights_gb: float,
    kv_bytes_per_token: int,
    memory_utilisation: float = DEFAULT_MEMORY_UTILISATION,
) -> int:
    """Tokens of KV cache that fit next to the weights: (gpus*memory*utilisation - weights) / bytes per token."""
    if kv_bytes_per_token <= 0:
        raise ProfileError("kv_bytes_per_token must be > 0", where="model.kv_bytes_per_token")
    free_gb = gpus * gpu_memory_gb * memory_utilisation - weights_gb
    if free_gb <= 0:
        raise ProfileError(
            f"the weights ({weights_gb:.0f} GB) do not fit in {gpus} x {gpu_memory_gb:g} GB "
            f"at {memory_utilisation:.0%} memory utilisation",
            where="deployment.tp / gpus_per_instance",
            hint="use more GPUs per instance (a higher tensor-parallel degree) or a GPU with more memory",
        )
    return int(free_gb * 1e9 // kv_bytes_per_token)


@dataclass(frozen=True)
class ThetaTarget:
    """The representative request and the latency targets theta is computed at.

    Defaults: a 1024-token prompt with 256 output tokens; TTFT within 1 s (the IW-F p95 SLO) and a
    time between tokens within 0.1 s. All configurable per deployment.
    """

    prompt_tokens: int = 1024
    output_tokens: int = 256
    ttft_s: float = 1.0
    tbt_s: float = 0.1

    def as_dict(self) -> dict:
        return asdict(self)


def theta_tps(
    prefill: dict,
    decode: dict,
    *,
    kv_capacity_tokens: int,
    max_batch_size: int,
    target: ThetaTarget | None = None,
) -> dict:
    """Largest input-token rate one instance sustains with the targets met, by a steady-state model.

    With B requests decoding together, an iteration takes ``t_d(B) = decode(B, B*(P + D/2))`` and every
    request needs one prefill ``t_p = prefill(P)``. Balancing work per unit time gives the request
    rate ``r(B) = B / (D*t_d + B*t_p)``. Prefills stall decoding for a share ``rho = r*t_p`` of the time,
    so the time between tokens is ``t_d / (1 - rho)``; the time to first token is approximated as one
    decode iteration plus the prefill inflated by queueing, ``t_d + t_p / (1 - rho)``. B ranges over
    1..max_batch_size limited by KV capacity ``B*(P+D) <= kv_capacity_tokens``; theta = max r*P over
    feasible B (0 if none is feasible).
    """
    target = target or ThetaTarget()
    p, d = int(target.prompt_tokens), int(target.output_tokens)
    t_p = float(prefill_time(prefill, p))
    b_max = min(int(max_batch_size), int(kv_capacity_tokens // max(1, p + d)))
    best = {"theta_tps": 0.0, "batch": 0, "ttft_s": None, "tbt_s": None, "requests_per_s": 0.0}
    for b in range(1, b_max + 1):
        t_d = float(decode_time(decode, b, b * (p + d / 2.0)))
        r = b / (d * t_d + b * t_p)
        rho = r * t_p
        if rho >= 1:
            continue
        tbt = t_d / (1 - rho)
        ttft = t_d + t_p / (1 - rho)
        if tbt <= target.tbt_s and ttft <= target.ttft_s and r * p > best["theta_tps"]:
            best = {"theta_tps": r * p, "batch": b, "ttft_s": ttft, "tbt_s": tbt, "requests_per_s": r}
    best["target"] = target.as_dict()
    best["max_feasible_batch_by_kv"] = b_max
    if math.isfinite(best["theta_tps"]):
        best["theta_tps"] = round(best["theta_tps"], 3)
    return best
