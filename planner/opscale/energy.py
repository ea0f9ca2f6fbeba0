"""Energy: the paper's per-request attribution (Eq. 9) and a device-level model with idle power. Django-free.

Eq. (9): ``E_v = alpha_v P_v R_v (W_v + T_v) + beta_v T_v`` per request (per token iteration in decode).
The paper gives no coefficients; defaults (spec 2.5 [OURS]): alpha_v = P_idle / |V| (a GPU's idle power shared
by the |V| operator replicas of a full instance), beta_v = P_max - P_idle, T_v = the request's share of its
batch's service time T_v(b) / b, W_v + T_v = the sojourn s_v. Multiplied by the arrival rate it is a power (W).

Device model: ``GPUs x P_idle + sum over replicas of busy x (P_max - P_idle)``: every provisioned GPU draws
its idle power whether or not the paper's attribution charges it.
"""

from __future__ import annotations

from planner.opscale.model import Config, Evaluator


def eq9_power_w(ev: Evaluator, config: Config, factors: dict[str, float] | None = None) -> float:
    gpu = ev.profile.gpu
    alpha = gpu.idle_w / len(ev.ops)
    beta = gpu.max_w - gpu.idle_w
    f = factors or {}
    per_request = 0.0
    for v, (r, b, p) in config.items():
        w, s = ev.sojourn(v, r, b, p, f.get(v, 1.0))
        t_share = ev.service(v, b, p) * f.get(v, 1.0) / b
        per_request += alpha * p * r * s + beta * p * t_share
    return ev.workload.lam * per_request


def device_power_w(ev: Evaluator, config: Config, gpus: int) -> float:
    gpu = ev.profile.gpu
    dynamic = sum(p * r * ev.busy(v, r, b, p) for v, (r, b, p) in config.items())
    return gpus * gpu.idle_w + dynamic * (gpu.max_w - gpu.idle_w)
