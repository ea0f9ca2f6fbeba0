"""Stage 1: Alg. 1 greedy operator-level autoscaling, and the model-level autoscaling baseline. Django-free."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from planner.opscale.model import Config, Evaluator
from planner.opscale.placement import device_factor

MAX_PREFILL_TOKENS = 32768  # largest batch Vidur profiled (num_tokens); bigger prefill batches extrapolate


@dataclass
class ScalingResult:
    config: Config
    latency_s: float
    slo_s: float
    feasible: bool
    cost: int
    iterations: int
    moves: list[dict] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict:
        return {
            "config": {v: {"r": r, "b": b, "p": p} for v, (r, b, p) in self.config.items()},
            "latency_s": self.latency_s,
            "slo_s": self.slo_s,
            "feasible": self.feasible,
            "cost": self.cost,
            "iterations": self.iterations,
            "moves": self.moves[-50:],
            "reason": self.reason,
        }


def _parallelisms(ev: Evaluator) -> tuple[int, ...]:
    return tuple(sorted(ev.options.parallelism))


def _batches(ev: Evaluator) -> tuple[int, ...]:
    return ev.options.batches(ev.workload.phase, ev.workload.length, MAX_PREFILL_TOKENS)


def seed(ev: Evaluator) -> Config:
    """Alg. 1 lines 1-6: start parallelism (A1), then per operator the batch minimising its sojourn at the
    smallest stable replica count (A3: floor(lambda/mu) + 1)."""
    ps = _parallelisms(ev)
    p0 = ev.options.model_tp if ev.options.init_parallelism == "model_plan" else min(ps)
    config: Config = {}
    for v in ev.ops:
        best = None
        for b in _batches(ev):
            r = ev.min_replicas(v, b, p0)
            s = ev.sojourn(v, r, b, p0)[1]
            if best is None or s < best[0]:
                best = (s, (r, b, p0))
        config[v] = best[1]
    return config


def _try(ev: Evaluator, config: Config, j: str, cand: tuple[int, int, int]) -> float:
    trial = dict(config)
    trial[j] = cand
    return ev.latency(trial)


def _cost_of(cand: tuple[int, int, int]) -> int:
    return cand[0] * cand[2]


def _efficiency_key(ct: tuple[tuple[int, int, int], float], lat: float, cost_now: int) -> tuple:
    """Sort key of an upscale move under ``upscale="efficiency"``: moves adding no GPU first (the larger
    latency reduction first), then the largest latency reduction per GPU added. An infinite current latency
    (an unstable seed) ranks moves by the GPUs they add, then by their latency."""
    (cand, t2) = ct
    added = _cost_of(cand) - cost_now
    if added <= 0:
        return (0, t2)
    if not math.isfinite(lat):
        return (1, added, t2)
    return (1, 0, -(lat - t2) / added)


def _best_downscale(ev: Evaluator, config: dict, targets: list, slo_s: float, ps: list, bs: list):
    """A7: among the targets' cheaper, stable configurations that keep the latency within the SLO, the one that
    saves the most (then the fastest): (key, op, configuration, latency), or None."""
    best = None
    for j in targets:
        r, b, p = config[j]
        if r <= 1 and p <= min(ps):
            continue
        cands = {(r - 1, b2, p2) for b2 in bs if b2 >= b for p2 in ps if r - 1 >= 1}
        cands |= {(r2, b2, p2) for b2 in bs if b2 >= b for p2 in ps if p2 < p for r2 in range(1, r + 1)}
        for cand in cands:
            if _cost_of(cand) >= r * p:
                continue
            lam, mu = ev.rates(j, cand[1], cand[2])
            if lam >= cand[0] * mu:  # line 14: stability
                continue
            t2 = _try(ev, config, j, cand)
            if t2 > slo_s:
                continue
            key = (_cost_of(cand) - r * p, t2)
            if best is None or key < best[0]:
                best = (key, j, cand, t2)
    return best


def _upscale(ev: Evaluator, config: dict, j, lat: float, slo_s: float, ps: list, bs: list):
    """A8: one more replica of the bottleneck ``j`` (any batch and parallelism): the cheapest meeting the SLO, else
    the largest latency reduction (or the best efficiency, ``upscale="efficiency"``). None: nothing helps."""
    r, _b, p = config[j]
    scored = [(cand, _try(ev, config, j, cand)) for cand in {(r + 1, b2, p2) for b2 in bs for p2 in ps}]
    meeting = [(c, t) for c, t in scored if t <= slo_s]
    if ev.options.upscale == "efficiency":
        better = [(c, t) for c, t in scored if t < lat]
        if not better:
            return None
        return min(better, key=lambda ct: (_efficiency_key(ct, lat, r * p), _cost_of(ct[0])))
    if meeting:
        return min(meeting, key=lambda ct: (_cost_of(ct[0]), ct[1]))
    cand, t2 = min(scored, key=lambda ct: (ct[1], _cost_of(ct[0])))
    return (cand, t2) if t2 < lat else None


def greedy(ev: Evaluator, slo_s: float) -> ScalingResult:
    """Alg. 1 with the spec's resolutions: A7 downscale over every operator (``every_op``, default) or the
    bottleneck only (``bottleneck``, as printed); A8 upscale picks the cheapest move meeting the SLO, else the
    largest latency reduction, and stops when nothing reduces the latency."""
    opts = ev.options
    eps = opts.eps_frac * slo_s
    ps, bs = _parallelisms(ev), _batches(ev)
    config = seed(ev)
    lat = ev.latency(config)
    floor = min(ev.latency_floor(b, p) for b in bs for p in ps)
    if floor > slo_s:  # no replica count can help: say so instead of upscaling to the cap
        return ScalingResult(
            config,
            lat,
            slo_s,
            False,
            ev.cost(config),
            0,
            [],
            f"the SLO ({slo_s:.4g} s) is below the fastest possible iteration ({floor:.4g} s, no queueing)",
        )
    moves: list[dict] = []
    it = 0
    reason = ""
    while it < opts.max_iterations:
        it += 1
        s = ev.sojourns(config)
        _total, path = ev.critical_path(s)
        if lat <= slo_s - eps or (opts.band == "refine" and lat <= slo_s):
            targets = [max(path, key=lambda v: s[v])] if opts.downscale == "bottleneck" else list(ev.ops)
            best = _best_downscale(ev, config, targets, slo_s, ps, bs)
            if best is None:
                reason = "no further safe downscale"
                break
            _key, j, cand, t2 = best
            moves.append({"move": "down", "op": j, "from": list(config[j]), "to": list(cand), "latency_s": t2})
        elif lat > slo_s:
            j = max(path, key=lambda v: s[v])
            up = _upscale(ev, config, j, lat, slo_s, ps, bs)
            if up is None:
                reason = "the bottleneck cannot be improved: SLO infeasible"
                break
            cand, t2 = up
            moves.append({"move": "up", "op": j, "from": list(config[j]), "to": list(cand), "latency_s": t2})
            if config[j][0] + 1 > opts.max_replicas:
                config[j], lat = cand, t2
                reason = "replica cap reached"
                break
        else:
            reason = "within the buffer epsilon of the SLO"
            break
        config[j] = cand
        lat = t2
    else:
        reason = "iteration cap reached"
    return ScalingResult(config, lat, slo_s, math.isfinite(lat) and lat <= slo_s, ev.cost(config), it, moves, reason)


@dataclass
class ModelLevelResult:
    replicas: int
    batch: int
    tp: int
    latency_s: float
    feasible: bool
    gpus: int
    memory_bytes: float
    device_busy: float
    reason: str = ""

    def config(self, ops) -> Config:
        return {v: (self.replicas, self.batch, self.tp) for v in ops}

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def model_level(ev: Evaluator, slo_s: float, *, fixed_replicas: int | None = None) -> ModelLevelResult:
    """Model-level autoscaling (spec 2.7 / 6.3): one R and one B for every operator, P = the model plan; the
        smallest R (then the B with the lowest latency) meeting the SLO, every replica on its own P GPUs, each GPU
        carrying the SM load of all operators of its replica (slowing them by the same interference factor as
    Stage 2; a hard limit with ``enforce_capacity``) and their memory (<= the GPU's).
        ``fixed_replicas`` evaluates a given R (static provisioning)."""
    p = ev.options.model_tp
    cap_bytes = ev.profile.gpu.memory_gb * 1e9
    best_reason = "no replica count up to the cap meets the SLO"
    rng = [fixed_replicas] if fixed_replicas else range(1, ev.options.max_replicas + 1)
    floor = min(ev.latency_floor(b, p) for b in _batches(ev))
    if floor > slo_s and not fixed_replicas:
        return ModelLevelResult(
            0,
            0,
            p,
            math.inf,
            False,
            0,
            0.0,
            math.inf,
            f"the SLO ({slo_s:.4g} s) is below the fastest model-level iteration ({floor:.4g} s, no queueing)",
        )
    for r in rng:
        options = []
        for b in _batches(ev):
            busy = sum(ev.sm_load(v, r, b, p) for v in ev.ops)
            mem = sum(ev.memory(v, b, p) for v in ev.ops)
            if mem > cap_bytes:
                best_reason = "one replica does not fit the GPU memory at any batch"
                continue
            if ev.options.enforce_capacity and busy > ev.options.capacity:
                continue
            # the same interference model as Stage 2: a replica's GPUs run all its operators
            factor = device_factor(ev, busy)
            lat = ev.latency({v: (r, b, p) for v in ev.ops}, {v: factor for v in ev.ops})
            options.append((lat, b, busy, mem))
        feasible = [o for o in options if o[0] <= slo_s]
        if feasible or (fixed_replicas and options):
            lat, b, busy, mem = min(feasible or options)
            return ModelLevelResult(r, b, p, lat, bool(feasible), r * p, r * p * mem, busy)
        if fixed_replicas:
            break
    return ModelLevelResult(
        fixed_replicas or 0, 0, p, math.inf, False, (fixed_replicas or 0) * p, 0.0, math.inf, best_reason
    )
