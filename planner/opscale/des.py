"""A small discrete-event check of an analytic plan (spec 6.4). Django-free, numpy only.

The analytic planner (Eqs. 1-3) treats every operator as an M/M/R_v queue and adds the mean sojourns along the
critical path. ``check_plan`` simulates exactly that network, job by job, and compares:

* per operator: the simulated mean wait against Erlang-C's W_v (Eq. 1);
* end to end: the simulated mean iteration latency (first arrival to last completion) against Eq. (3).

Jobs are what the plan's units say they are (``Options.units``): batches arriving at lambda / b with
exponential service of mean T_v(b) (``physical``), or requests at lambda with mean T_v(b) / b (``paper``);
interference factors stretch the service time as in the analytic model. Jobs arrive as one Poisson stream and
visit the operators in dataflow order; a node starts a job once all its predecessors finished it (the residual
edges of the decoder graph are shortcuts of the chain, so this is a tandem of FCFS multi-server queues). By
Burke's theorem each stage of such a tandem sees Poisson arrivals, so Eq. (3)'s sum of M/M/R means is exact
for the network, and the simulation must agree within sampling error: a disagreement means a bug in the
Erlang-C code, the units or the critical path, not in the queueing assumptions. ``service="deterministic"``
replaces the exponential service by its mean (M/D/R), which shows how conservative the analytic plan is for
kernels whose run time barely varies.

The tolerance is stated, not tuned: |W_sim - W| <= REL_TOL W + ABS_TOL_FRAC T_v per operator, and the
end-to-end mean within REL_TOL. Sampling error is reported as a 95 % half-width from 10 batch means.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from planner.opscale.model import Config, Evaluator

REL_TOL = 0.10  # relative error allowed on a mean wait / the end-to-end mean
ABS_TOL_FRAC = 0.02  # plus 2 % of the operator's service time (near-zero waits)
N_BATCHES = 10


def _fcfs(arrivals: np.ndarray, services: np.ndarray, servers: int) -> np.ndarray:
    """Start times of jobs served FCFS (in arrival order) by ``servers`` identical servers."""
    order = np.argsort(arrivals, kind="stable")
    free = [0.0] * servers
    start = np.empty_like(arrivals)
    for i in order:
        t = arrivals[i]
        s = max(t, heapq.heappop(free))
        heapq.heappush(free, s + services[i])
        start[i] = s
    return start


def _half_width(samples: np.ndarray) -> float:
    """95 % half-width of the mean from N_BATCHES batch means (normal approximation)."""
    if len(samples) < N_BATCHES * 2:
        return math.inf
    means = np.array([b.mean() for b in np.array_split(samples, N_BATCHES)])
    return float(1.96 * means.std(ddof=1) / math.sqrt(N_BATCHES))


def check_plan(
    ev: Evaluator,
    config: Config,
    factors: dict[str, float] | None = None,
    *,
    jobs: int = 40_000,
    seed: int = 7,
    service: str = "exponential",
) -> dict:
    """Simulate the plan's operator network and compare it with the analytic waits and latency."""
    if service not in ("exponential", "deterministic"):
        raise ValueError("service must be 'exponential' or 'deterministic'")
    f = factors or {}
    rng = np.random.default_rng(seed)
    rates = {v: ev.rates(v, config[v][1], config[v][2], f.get(v, 1.0)) for v in ev.ops}
    lam = {v: rates[v][0] for v in ev.ops}
    if len({round(x, 12) for x in lam.values()}) != 1:
        # in physical units lambda_b = lambda / b_v differs per operator: the batch of one operator is not the
        # job of the next, so each operator is checked as its own M/M/R queue fed by a Poisson stream
        return _per_operator(ev, config, f, rates, rng, jobs, service)
    warm = jobs // 10
    arrivals = np.cumsum(rng.exponential(1.0 / lam[ev.ops[0]], jobs))
    done: dict[str, np.ndarray] = {}
    ops_out = {}
    for v in ev.ops:
        r, b, p = config[v]
        mu = rates[v][1]
        ready = arrivals if not ev.preds[v] else np.max([done[u] for u in ev.preds[v]], axis=0)
        svc = rng.exponential(1.0 / mu, jobs) if service == "exponential" else np.full(jobs, 1.0 / mu)
        start = _fcfs(ready, svc, r)
        done[v] = start + svc + ev.comm(v, b, p)
        ops_out[v] = _compare(ev, v, config[v], rates[v], (start - ready)[warm:], f.get(v, 1.0))
    end = np.max([done[v] for v in ev.ops], axis=0)
    lat = (end - arrivals)[warm:]
    out = _summary(ev, config, f, ops_out, lat, service, jobs)
    out["mode"] = "network"
    return out


def _per_operator(ev, config, f, rates, rng, jobs, service) -> dict:
    warm = jobs // 10
    ops_out = {}
    for v in ev.ops:
        lam, mu = rates[v]
        r = config[v][0]
        arrivals = np.cumsum(rng.exponential(1.0 / lam, jobs))
        svc = rng.exponential(1.0 / mu, jobs) if service == "exponential" else np.full(jobs, 1.0 / mu)
        start = _fcfs(arrivals, svc, r)
        ops_out[v] = _compare(ev, v, config[v], rates[v], (start - arrivals)[warm:], f.get(v, 1.0))
    out = _summary(ev, config, f, ops_out, None, service, jobs)
    # Eq. (3) with the simulated waits in place of Erlang-C's (the batches of one operator are not the jobs of
    # the next, so there is no end-to-end job to follow)
    s_sim = {
        v: ev.sojourn(v, *config[v], f.get(v, 1.0))[1] - o["wait_analytic_s"] + o["wait_simulated_s"]
        for v, o in ops_out.items()
    }
    analytic = ev.latency(config, f)
    sim = ev.critical_path(s_sim)[0]
    out.update(
        mode="per_operator",
        latency_analytic_s=analytic,
        latency_simulated_s=sim,
        latency_rel_error=(sim - analytic) / analytic if analytic else None,
        latency_ok=bool(math.isfinite(analytic) and abs(sim - analytic) <= REL_TOL * analytic),
    )
    return out


def _compare(ev: Evaluator, v: str, cfg, rate, waits: np.ndarray, factor) -> dict:
    r, b, p = cfg
    w_an = ev.sojourn(v, r, b, p, factor if factor is not None else 1.0)[0]
    t_v = 1.0 / rate[1]
    w_sim = float(waits.mean())
    tol = REL_TOL * w_an + ABS_TOL_FRAC * t_v
    return {
        "r": r,
        "b": b,
        "p": p,
        "rho": rate[0] / (r * rate[1]),
        "service_s": t_v,
        "wait_analytic_s": w_an,
        "wait_simulated_s": w_sim,
        "half_width_s": _half_width(waits),
        "tolerance_s": tol,
        "ok": bool(math.isfinite(w_an) and abs(w_sim - w_an) <= tol),
    }


def _summary(ev, config, factors, ops_out, lat, service, jobs) -> dict:
    out = {
        "service": service,
        "jobs": jobs,
        "rel_tol": REL_TOL,
        "abs_tol_frac": ABS_TOL_FRAC,
        "operators": ops_out,
        "operators_ok": all(o["ok"] for o in ops_out.values()),
        "worst_rel_error": max(
            (abs(o["wait_simulated_s"] - o["wait_analytic_s"]) / o["wait_analytic_s"])
            for o in ops_out.values()
            if o["wait_analytic_s"] > 0 and math.isfinite(o["wait_analytic_s"])
        )
        if any(o["wait_analytic_s"] > 0 for o in ops_out.values())
        else 0.0,
    }
    if lat is not None:
        analytic = ev.latency(config, factors)
        sim = float(lat.mean())
        out.update(
            latency_analytic_s=analytic,
            latency_simulated_s=sim,
            latency_half_width_s=_half_width(lat),
            latency_p99_simulated_s=float(np.quantile(lat, 0.99)),
            latency_rel_error=(sim - analytic) / analytic if analytic else None,
            latency_ok=bool(math.isfinite(analytic) and abs(sim - analytic) <= REL_TOL * analytic),
        )
    return out
