"""Richer SLOs and their metrics, evaluated after the run into ``SimulationResult.slo``.

Targets per request, from the tier's settings in ``SLOConfig`` overridden by the workload's per-request arrays:

- TTFT: the tier's ``ttft_s``, or a function of the prompt length ``min(max(min_s, L * per_token_s), max_s)``
  (``ttft_prompt``; SLINFER uses min(max(0.5, L/512), 8) s), or the request's own ``ttft_slo_s``; plus
  ``cold_start_grace_s`` for a request that waited for an instance to start (an endpoint's backlog).
- ITL / TPOT: the tier's ``itl_s`` or the request's ``tpot_slo_s``, met by the request's mean inter-token
  latency (``itl_stat: "mean"``, TPOT) or by every gap (``"max"``). Per-token deadlines (token k by
  first token + k x target) are not tracked: the engine keeps each request's mean and longest gap only.
- Normalised latency (E2E / output tokens): met when E2E <= ``normalised_latency_x`` x the request's E2E run
  alone on an idle instance of the deployment that served it (prefill(L) + the decode iterations of a batch
  of one; computed from the latency model, not simulated).

A request meets its SLO when it completed and meets every target set for it; dropped requests (any reason,
e.g. a policy's queue timeout) and unfinished ones miss. Metrics per tier and overall: attainment (all
targets, and per target), normalised latency and ITL percentiles and the peak of their windowed means
(``window_s`` windows by arrival), per-request TTFT lateness (TTFT - target), drops by reason.

This module only reads the finished run; the default outputs (``summary``, ``tiers``) are unchanged.
"""

from __future__ import annotations

import math

import numpy as np

from simulations.engine.scenario.config import TIERS

_PCTS = (50, 90, 95, 99)


def _pcts(x: np.ndarray) -> dict:
    x = x[~np.isnan(x)]
    if x.size == 0:
        return {f"p{p}": None for p in _PCTS} | {"mean": None}
    q = np.percentile(x, _PCTS)
    return {f"p{p}": float(v) for p, v in zip(_PCTS, q, strict=True)} | {"mean": float(x.mean())}


def isolated_e2e(spec, inp: np.ndarray, out: np.ndarray) -> np.ndarray:
    """E2E of each request alone on an idle instance: prefill(L) + (O-1) decode iterations of a batch of one at
    contexts L, L+1, ..., L+O-2."""
    L = inp.astype(np.float64)
    k = np.maximum(out.astype(np.float64) - 1.0, 0.0)
    pre = spec.prefill
    prefill = pre.c0 + pre.c1 * L + pre.c2 * L * L + pre.c_sq * L * L + pre.c_req
    dec = spec.decode
    return prefill + k * (dec.c0 + dec.c_batch) + dec.c_ctx * (k * L + k * (k - 1) / 2.0)


def _window_peak(arrival: np.ndarray, values: np.ndarray, mask: np.ndarray, window_s: float):
    sel = mask & ~np.isnan(values)
    if not sel.any():
        return None
    bins = np.floor_divide(arrival[sel], window_s).astype(np.int64)
    sums = np.bincount(bins, weights=values[sel])
    counts = np.bincount(bins)
    nz = counts > 0
    return float((sums[nz] / counts[nz]).max())


def rich_slo_wanted(sim) -> bool:
    w = sim.workload
    return bool(sim.scenario.slo.rich or w.ttft_slo_s is not None or w.tpot_slo_s is not None)


def rich_slo(sim, *, ttft, e2e, itl_mean, itl_max, done, dropped) -> tuple[dict, dict]:
    """(result.slo block, extra per-request arrays) for a finished run."""
    cfg = sim.scenario.slo
    w = sim.workload
    n = len(w)
    arr, inp, out, tier = w.arrival_s, w.input_tokens, w.output_tokens, w.tier
    # TTFT target
    ttft_t = np.array([sim.ttft_slo[t] for t in range(len(TIERS))], dtype=np.float64)[tier] if n else np.zeros(0)
    for name, f in cfg.ttft_prompt.items():
        sel = tier == TIERS.index(name)
        ttft_t[sel] = np.minimum(np.maximum(f["min_s"], inp[sel] * f["per_token_s"]), f["max_s"])
    if w.ttft_slo_s is not None:
        own = ~np.isnan(w.ttft_slo_s)
        ttft_t[own] = w.ttft_slo_s[own]
    if cfg.cold_start_grace_s and sim.state.cold_started:
        cold = np.fromiter(sim.state.cold_started, dtype=np.int64)
        ttft_t[cold] += cfg.cold_start_grace_s
    # ITL target
    itl_t = np.full(n, np.nan)
    for name, v in cfg.itl_s.items():
        itl_t[tier == TIERS.index(name)] = v
    if w.tpot_slo_s is not None:
        own = ~np.isnan(w.tpot_slo_s)
        itl_t[own] = w.tpot_slo_s[own]
    itl = itl_max if cfg.itl_stat == "max" else itl_mean
    # normalised latency and its target
    norm = e2e / out
    x_t = np.full(n, np.nan)
    for name, v in cfg.normalised_latency_x.items():
        x_t[tier == TIERS.index(name)] = v
    iso = np.full(n, np.nan)
    if not np.isnan(x_t).all():
        ep_of = np.asarray(sim.state.served_ep)
        for ep in sim.endpoints:  # a request never routed is judged against the first endpoint of its model
            sel = (ep_of == ep.eid) | ((ep_of < 0) & (w.model == ep.model_idx) & np.isnan(iso))
            iso[sel] = isolated_e2e(ep.spec, inp[sel], out[sel])
    with np.errstate(invalid="ignore"):
        ok_ttft = done & (ttft <= ttft_t)
        ok_itl = done & (np.isnan(itl_t) | (out <= 1) | (itl <= itl_t))
        ok_norm = done & (np.isnan(x_t) | (e2e <= x_t * iso))
    met = ok_ttft & ok_itl & ok_norm
    lateness = ttft - ttft_t

    def block(mask) -> dict:
        total = int(mask.sum())
        d = done & mask
        reasons: dict[str, int] = {}
        for rid, why in sim.state.dropped.items():
            if mask[rid]:
                reasons[why] = reasons.get(why, 0) + 1
        late = d & (lateness > 0)
        frac = (lambda m: float(m[mask].sum() / total)) if total else (lambda m: None)
        return {
            "requests": total, "met": int(met[mask].sum()), "attainment": frac(met),
            "ttft_attainment": frac(ok_ttft), "itl_attainment": frac(ok_itl), "normalised_attainment": frac(ok_norm),
            "normalised_latency_s_per_token": _pcts(np.where(d, norm, np.nan)),
            "normalised_latency_peak_window_mean": _window_peak(arr, norm, d, cfg.window_s),
            "itl_s": _pcts(np.where(d & (out > 1), itl_mean, np.nan)),
            "itl_peak_window_mean": _window_peak(arr, itl_mean, d & (out > 1), cfg.window_s),
            "ttft_lateness_s": _pcts(np.where(d, lateness, np.nan)), "late_requests": int(late.sum()),
            "dropped": int((dropped & mask).sum()), "drop_reasons": reasons,
        }

    out_block = {"itl_stat": cfg.itl_stat, "window_s": cfg.window_s, "overall": block(np.ones(n, dtype=bool)),
                 "tiers": {name: block(tier == i) for i, name in enumerate(TIERS) if (tier == i).any()}}
    if not math.isfinite(cfg.window_s):
        out_block["window_s"] = None
    arrays = {"ttft_target_s": ttft_t, "itl_target_s": itl_t, "normalised_latency": norm,
              "isolated_e2e_s": iso, "ttft_lateness_s": lateness, "slo_met": met}
    return out_block, arrays
