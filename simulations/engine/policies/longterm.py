"""SageServe's long-term autoscalers LT-I, LT-U and LT-UA (sections 5, 6.3, 6.4), Django-free.

Every ``decision_period_s`` (1 h) of simulated time, for each (region, model) endpoint:

1. Input TPS of the IW requests that *arrived before now* from clients of that region (origin region),
   in ``resolution_s`` bins, feeds an incremental forecaster (forecasts.core.incremental; ARIMA with
   AIC orders by default, fitted once, then extended each hour, refitted daily). The forecaster only
   ever receives bins that ended at or before the decision time, so no strategy sees the future.
   Optional ``history_tps`` (bins of earlier days, given by the caller) warms it up; without history the
   first decision waits for ``min_history_s`` of observations and the initial fleet runs unchanged.
2. rho = the forecast for the next hour's bins; beta = ``beta_fraction`` (10 %) x the mean NIW input
   TPS of the past hour (spec section 8 row 14) is added by the ILP.
3. The hourly ILP (planner.optimizer.solve_hourly, published objective gamma + mu, regional and global
   coverage, endpoint min/max) gives the target instance count per endpoint. GPU "types" are the
   deployments, so alpha is each deployment's on-demand price per instance-hour and sigma = alpha x
   its same-region load time.
4. Applying the target (scale-out: ``sim.scale_out`` reclaims spot of the same model first, then spot
   of another model with a redeploy, then a new VM; scale-in donates to the spot pool):
   - LT-I: immediately, all at once.
   - LT-U: one instance at a time (15 s cooldown), only when the endpoint's effective memory
     utilisation, checked on every request it receives, is above 70 % (out, while below the target) or
     below 30 % (in, while above the target).
   - LT-UA: LT-U, plus in the last 20 minutes of the hour it keeps going past the target when the
     observed IW input TPS (trailing ``observe_window_s``) is >= 5x the forecast for this bin (out) or
     <= 0.5x (in), still gated by the 70 % / 30 % utilisation and the cooldown.
NIW requests go through the Queue Manager (niw_queue.py) unless ``niw_queue`` is false.

Every decision is logged as a scaling event with action "plan" (hour, forecast, target, solve status).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Literal

import numpy as np

from simulations.engine.policies.autoscalers import Autoscaler, ScaleLock, ScaleLockParams
from simulations.engine.policies.niw_queue import NIWQueueManager, NIWQueueParams
from simulations.engine.policies.params import knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.scenario.config import TIER_INDEX

NIW = TIER_INDEX["NIW"]


def binned_tps(arrival_s: np.ndarray, tokens: np.ndarray, start: float, end: float, resolution_s: float) -> np.ndarray:
    """Input TPS per bin of [start, end): tokens arriving in each bin / bin length (arrivals must be sorted)."""
    nb = int(round((end - start) / resolution_s))
    if nb <= 0:
        return np.zeros(0)
    lo, hi = np.searchsorted(arrival_s, [start, end], side="left")
    idx = ((arrival_s[lo:hi] - start) // resolution_s).astype(np.int64)
    idx = np.minimum(idx, nb - 1)
    return np.bincount(idx, weights=tokens[lo:hi].astype(np.float64), minlength=nb) / resolution_s


class LongTermParams(NIWQueueParams, ScaleLockParams):
    decision_period_s: float = knob(3600.0, "period of the forecast + ILP decision (s)", gt=0)
    resolution_s: int = knob(300, "forecast bin (s)", ge=1)
    forecast_method: str = knob("arima", "forecasting method (forecasts.core)")
    refit_every_s: int = knob(86400, "refit the forecaster every this many seconds", ge=1)
    min_history_s: float = knob(3600.0, "history needed before the first decision (s)", ge=0)
    beta_fraction: float = knob(0.10, "NIW capacity reserved, as a fraction of the NIW input TPS", ge=0)
    beta_basis: Literal["arrived", "released"] = knob(
        "arrived", "beta on the NIW that arrived in the past hour, or that the queue manager released to each "
                   "endpoint")
    epsilon: float = knob(1.0, "ILP scale-change cost weight", ge=0)
    forecast_value: Literal["mean", "upper"] = knob("mean", "plan on the forecast's mean or its upper bound")
    scale_out_above: float = knob(0.70, "LT-U / LT-UA: move towards the target above this utilisation", ge=0)
    scale_in_below: float = knob(0.30, "LT-U / LT-UA: move towards the target below this utilisation", ge=0)
    cooldown_s: float = knob(15.0, "wait between two scaling actions of an endpoint (s)", ge=0)
    gate_scale_in: bool = knob(True, "false: a lower hourly target is applied at the decision (authors' code)")
    beyond_target_above: float | None = knob(None, "scale past the target whenever utilisation exceeds this "
                                                   "(none: never)", ge=0)
    ua_gate_util: bool = knob(True, "LT-UA's ratio rule only when utilisation crosses the thresholds")
    ua_scale_in: bool = knob(True, "LT-UA's ratio rule may scale in")
    forecast_mode: Literal["ahead", "hindsight"] = knob(
        "ahead", "'ahead': forecast from the past; 'hindsight': the coming hour's actual IW TPS (an oracle)")
    hindsight_window_s: list[float] | None = knob(
        None, "[from, to] seconds after the decision over which the hindsight oracle takes the max (default the "
              "whole period)", min_length=2, max_length=2)
    ua_window_s: float = knob(1200.0, "LT-UA: the last seconds of the hour when the ratio rule applies", ge=0)
    ua_up_ratio: float = knob(5.0, "LT-UA: go beyond the target when traffic is this many times the forecast", gt=0)
    ua_down_ratio: float = knob(0.5, "LT-UA: go below the target when traffic is this fraction of the forecast",
                                ge=0)
    observe_window_s: float = knob(60.0, "trailing window of the observed IW input TPS (s)", gt=0)
    ilp_time_limit_s: float = knob(10.0, "time limit of each ILP solve (s)", gt=0)
    history_tps: dict[str, list[float]] | None = knob(
        None, "'region|model' -> input TPS per bin before t=0 (a first decision at t=0)")
    niw_queue: bool = knob(True, "hold NIW requests in the queue manager")
    tick_s: float = knob(60.0, "control tick without the queue manager (s)", gt=0)


class LongTerm(Autoscaler):
    mode = "immediate"
    wants_request_hook = True
    Params = LongTermParams

    def __init__(self, params, rng):
        super().__init__(params, rng)
        p = self.params
        k = self.knobs
        self.period = k.decision_period_s
        self.resolution = k.resolution_s
        self.method = k.forecast_method
        self.refit_every_s = k.refit_every_s
        self.min_history_s = k.min_history_s
        self.beta_fraction = k.beta_fraction
        # beta on the NIW that "arrived" in the past hour (default; the paper's text and the authors' code) or on
        # the NIW the queue manager "released" to each endpoint (what the fleet actually took on)
        self.beta_basis = k.beta_basis
        self.epsilon = k.epsilon
        self.use_upper = k.forecast_value == "upper"
        self.hi = k.scale_out_above
        self.lo = k.scale_in_below
        self.cooldown = k.cooldown_s
        self.lock = ScaleLock(k, self.cooldown)
        # variants (defaults = the paper's text): scale-in gated by utilisation (False: apply a lower target at the
        # decision, as the authors' code does), scale past the target above this utilisation (None: never), LT-UA's
        # ratio rule gated by utilisation / allowed to scale in
        self.gate_scale_in = k.gate_scale_in
        self.beyond_above = k.beyond_target_above
        self.ua_gate_util = k.ua_gate_util
        self.ua_scale_in = k.ua_scale_in
        # forecast_mode "ahead" (default): forecast from the past only; "hindsight": the coming hour's actual IW
        # input TPS (an oracle, as the authors' in-sample one-step ARIMA nearly is), its max over
        # hindsight_window_s (seconds after the decision, default the whole period) in every bin
        self.forecast_mode = k.forecast_mode
        win = k.hindsight_window_s or [0.0, self.period]
        self.hindsight_window = (float(win[0]), float(win[1]))
        self._oracle = None
        self.ua_window = k.ua_window_s
        self.ua_up = k.ua_up_ratio
        self.ua_down = k.ua_down_ratio
        self.observe_window = k.observe_window_s
        self.time_limit = k.ilp_time_limit_s
        self.history = dict(k.history_tps or {})  # "region|model" -> list of bin TPS (bins before t=0)
        self.queue = NIWQueueManager(p) if k.niw_queue else None
        if self.queue is not None:
            self.queue.track_released = self.beta_basis == "released"
        self.wants_arrival_hook = self.queue is not None
        self.tick_s = self.queue.period_s if self.queue else k.tick_s
        self.next_decision = 0.0
        self.forecasters: dict = {}
        self.fed_until = 0.0
        self.targets: dict[int, int] = {}  # endpoint id -> target instances
        self.forecast_bins: dict[int, tuple[float, np.ndarray]] = {}  # eid -> (start time, per-bin TPS)
        self.recent: dict[int, deque] = {}  # eid -> (t, tokens) of IW requests over observe_window
        self.recent_sum: dict[int, float] = {}
        self.decisions = 0
        self.solve_s = 0.0
        self.forecast_s = 0.0

    # ------------------------------------------------------------------ life cycle
    def prepare_fleet(self, fleet, workload):
        if self.forecast_mode == "hindsight":
            self._oracle = workload  # the labelled oracle only: "ahead" never keeps the workload
        return fleet

    # streamed runs (engine/streaming/window.py): the held NIW ids are renumbered; observed() must still cover the arrivals
    # since the last feed and the past hour (searched by time, so a window starting later than t=0 is fine)
    def rebase(self, sim, remap) -> None:
        if self.queue is not None:
            self.queue.rebase(sim, remap)

    @property
    def observed_history_s(self) -> float:
        return max(self.period, 3600.0) + self.resolution

    def on_arrival(self, sim, rid, now):
        return self.queue.offer(sim, rid, now)

    def on_start(self, sim, now):
        if self.queue is not None:
            self.queue.bind(sim)
        self.eps = [ep for ep in sim.endpoints if ep.pool != "niw"]
        missing = [ep.spec.name for ep in self.eps if ep.spec.theta_tps <= 0]
        if missing:
            from simulations.engine.scenario.config import ScenarioError

            raise ScenarioError("deployments.theta_tps", f"{self.policy_name} needs theta_tps (input TPS one instance "
                                f"sustains) > 0 for {sorted(set(missing))}; take it from the hardware catalogue")
        for ep in self.eps:
            self.targets[ep.eid] = ep.n_active
        self.next_decision = 0.0 if self.history else self.min_history_s
        if self.history:
            self._decide(sim, 0.0)

    def on_tick(self, sim, now):
        if self.queue is not None:
            self.queue.on_tick(sim, now)
        if now >= self.next_decision:
            self._decide(sim, now)

    def on_request(self, sim, ep, now, rid):
        if self.queue is not None:
            self.queue.note_request(sim, ep, rid, now)
        if sim.tier_of(rid) != NIW:
            q = self.recent.get(ep.eid)
            if q is None:
                q = self.recent[ep.eid] = deque()
                self.recent_sum[ep.eid] = 0.0
            tok = float(sim.prompt_tokens(rid))
            q.append((now, tok))
            s = self.recent_sum[ep.eid] + tok
            edge = now - self.observe_window
            while q and q[0][0] < edge:
                s -= q.popleft()[1]
            self.recent_sum[ep.eid] = s
        if self.mode != "immediate":
            self._gate(sim, ep, now)

    # ------------------------------------------------------------------ the hourly decision
    def _series_key(self, ep) -> str:
        return f"{ep.region}|{ep.model}"

    def _feed(self, sim, now: float) -> None:
        """Give each forecaster the complete bins observed since the last feed (arrivals before ``now``)."""
        from forecasts.core.incremental import IncrementalForecaster

        end = math.floor(now / self.resolution) * self.resolution
        if end <= self.fed_until and self.forecasters:
            return
        obs = sim.observed(now)
        arr = obs["arrival_s"]
        lo, hi = np.searchsorted(arr, [self.fed_until, now], side="left")  # only arrivals before ``now``
        sl = slice(lo, hi)
        arr, tier, model, region = arr[sl], obs["tier"][sl], obs["model"][sl], obs["region"][sl]
        inp = obs["input_tokens"][sl]
        mnames, rnames = obs["model_names"], obs["region_names"]
        for ep in self.eps:
            key = self._series_key(ep)
            mask = (tier != NIW) & (model == mnames.index(ep.model)) & (region == rnames.index(ep.region))
            new = binned_tps(arr[mask], inp[mask], self.fed_until, end, self.resolution)
            f = self.forecasters.get(key)
            if f is None:
                hist = np.asarray(self.history.get(key, []), dtype=float)
                values = np.concatenate([hist, new]) if hist.size else new
                if values.size == 0:
                    continue
                f = IncrementalForecaster(self.method, resolution_s=self.resolution, refit_every_s=self.refit_every_s,
                                          peak_window_s=int(self.period))
                f.fit(values, start=int(self.fed_until // self.resolution) - int(hist.size))
                self.forecasters[key] = f
            elif new.size:
                f.update(new)
        self.fed_until = end

    def _niw_past_hour(self, sim, now: float) -> dict:
        if self.beta_basis == "released" and self.queue is not None:
            return {(ep.model, ep.region): self.queue.released_tps(ep, now) for ep in self.eps}
        obs = sim.observed(now)
        arr = obs["arrival_s"]
        lo, hi = np.searchsorted(arr, [now - 3600.0, now], side="left")
        tier, model, region = obs["tier"][lo:hi], obs["model"][lo:hi], obs["region"][lo:hi]
        inp = obs["input_tokens"][lo:hi]
        out = {}
        span = max(1.0, min(3600.0, now))
        for ep in self.eps:
            mask = (tier == NIW) & (model == obs["model_names"].index(ep.model)) & (
                region == obs["region_names"].index(ep.region))
            out[(ep.model, ep.region)] = float(inp[mask].sum()) / span
        return out

    def _decide(self, sim, now: float) -> None:
        import time

        from planner.optimizer import HourlyInputs, SolverOptions, solve_hourly

        self.next_decision = now + self.period
        t0 = time.perf_counter()
        self._feed(sim, now)
        steps = max(1, int(round(self.period / self.resolution)))
        rho = {}
        used = {}
        for ep in self.eps:
            f = self.forecasters.get(self._series_key(ep))
            if f is None:
                continue
            if self._oracle is not None:
                bins = self._hindsight_bins(ep, now, steps)
                used[ep.eid] = ("hindsight", "")
            else:
                fc = f.forecast(steps)
                bins = np.asarray(fc.upper if self.use_upper else fc.mean, dtype=float)
                used[ep.eid] = (getattr(f, "used_method", self.method), getattr(f, "fallback_reason", ""))
            bins = np.where(np.isfinite(bins), np.maximum(bins, 0.0), 0.0)
            rho[(ep.model, ep.region)] = bins.tolist()
            self.forecast_bins[ep.eid] = (now, bins)
        self.forecast_s += time.perf_counter() - t0
        if not rho:
            return
        niw = self._niw_past_hour(sim, now)
        models = sorted({ep.model for ep in self.eps})
        regions = sorted({ep.region for ep in self.eps})
        gpus = sorted({ep.spec.name for ep in self.eps})
        n = {(ep.model, ep.region, ep.spec.name): ep.n_active for ep in self.eps}
        theta = {(ep.model, ep.spec.name): ep.spec.theta_tps for ep in self.eps if ep.spec.theta_tps > 0}
        alpha = {}
        startup = {}
        for ep in self.eps:
            alpha[ep.spec.name] = ep.spec.on_demand_price or 1.0
            startup[(ep.model, ep.spec.name)] = ep.spec.startup.load_same_region_s
        inputs = HourlyInputs(
            models=models, regions=regions, gpus=gpus, n=n, rho=rho, theta=theta, alpha=alpha, startup_s=startup,
            epsilon=self.epsilon, niw_past_hour_tps=niw, beta_fraction=self.beta_fraction,
            min_instances={(ep.model, ep.region): max(1, ep.min_instances) for ep in self.eps},
            max_instances={(ep.model, ep.region): ep.max_instances for ep in self.eps},
            shortfall_penalty=1e6, options=SolverOptions(time_limit_s=self.time_limit),
        )
        t1 = time.perf_counter()
        plan = solve_hourly(inputs)
        self.solve_s += time.perf_counter() - t1
        self.decisions += 1
        hour = int(round(now / self.period))
        for ep in self.eps:
            if (ep.model, ep.region) not in rho or not plan.ok or ep.spec.theta_tps <= 0:
                continue
            target = max(ep.min_instances, min(ep.max_instances, plan.target(ep.model, ep.region)))
            self.targets[ep.eid] = target
            sim.record_scaling(now, ep, "plan", **{
                "hour": hour, "region": ep.region, "model": ep.model,
                "forecast_peak_tps": round(max(rho[(ep.model, ep.region)]), 3),
                "beta_tps": round(self.beta_fraction * niw.get((ep.model, ep.region), 0.0), 3),
                "current": ep.n_active, "target": target, "status": plan.status,
                "forecast_method": used.get(ep.eid, ("", ""))[0],
                **({"forecast_fallback": used[ep.eid][1]} if used.get(ep.eid, ("", ""))[1] else {}),
            })
            if self.mode == "immediate":
                self._apply_now(sim, ep, target, now)
            elif not self.gate_scale_in and target < ep.n_active:
                self._apply_now(sim, ep, target, now)  # the authors' code: a lower target is applied at once

    # ------------------------------------------------------------------ applying targets
    def _apply_now(self, sim, ep, target: int, now: float) -> None:
        diff = target - ep.n_active
        for _ in range(max(0, diff)):
            if ep.n_active >= ep.max_instances or sim.scale_out(ep, now) is None:
                break
        for _ in range(max(0, -diff)):
            if ep.provisioning:  # cancel a pending start first: it serves nothing yet
                sim.drain(ep.provisioning[-1], now, donate=True)
                sim.record_scaling(now, ep, "scale_in", source="cancel", delay_s=0.0)
                continue
            if ep.n_serving <= max(1, ep.min_instances) or sim.scale_in(ep, now, donate=True) is None:
                break
        ep.last_scale_t = now

    def _hindsight_bins(self, ep, now: float, steps: int) -> np.ndarray:
        """The coming period's actual IW input TPS from this endpoint's origin region (oracle, labelled
        "hindsight"), maxed over ``hindsight_window_s`` and used for every bin."""
        w = self._oracle
        if ep.region not in w.region_names or ep.model not in w.model_names:
            return np.zeros(steps)
        mask = (w.tier != NIW) & (w.model == w.model_names.index(ep.model)) & (
            w.region == w.region_names.index(ep.region))
        arr, inp = w.arrival_s[mask], w.input_tokens[mask]
        bins = binned_tps(arr, inp, now, now + steps * self.resolution, self.resolution)
        lo = int(self.hindsight_window[0] // self.resolution)
        hi = max(lo + 1, int(math.ceil(self.hindsight_window[1] / self.resolution)))
        part = bins[lo:hi]
        return np.full(steps, float(part.max()) if part.size else 0.0)

    def _gate(self, sim, ep, now: float) -> None:
        if now - ep.last_scale_t < self.cooldown:
            return
        target = self.targets.get(ep.eid)
        if target is None:
            return
        u = ep.utilisation
        ua = self.mode == "utilisation+arima"
        if ua and not self.ua_gate_util and ep.n_active >= target and ep.n_active < ep.max_instances \
                and self._traffic_ratio(ep, now) > self.ua_up:
            if sim.scale_out(ep, now) is not None:  # the authors' code: ratio rule without a utilisation gate
                self.lock.after_out(sim, ep, now)
            return
        if u > self.hi or (self.beyond_above is not None and u > self.beyond_above):
            beyond = ua and self.ua_gate_util and self._traffic_ratio(ep, now) >= self.ua_up
            if self.beyond_above is not None and u > self.beyond_above:
                beyond = True
            if (ep.n_active < target or beyond) and ep.n_active < ep.max_instances:
                if sim.scale_out(ep, now) is not None:
                    self.lock.after_out(sim, ep, now)
        elif u < self.lo and self.gate_scale_in:
            beyond = ua and self.ua_scale_in and self._traffic_ratio(ep, now) <= self.ua_down
            if (ep.n_serving > target or beyond) and ep.n_serving > max(1, ep.min_instances) and not ep.provisioning:
                if sim.scale_in(ep, now, donate=True) is not None:
                    self.lock.after_in(ep, now)

    def _traffic_ratio(self, ep, now: float) -> float:
        """Observed / forecast IW input TPS for this bin, only in the last ``ua_window`` of the hour (else 1)."""
        fb = self.forecast_bins.get(ep.eid)
        if fb is None:
            return 1.0
        start, bins = fb
        into = now - start
        if into < self.period - self.ua_window or into >= self.period:
            return 1.0
        forecast = float(bins[min(len(bins) - 1, int(into // self.resolution))])
        observed = self.recent_sum.get(ep.eid, 0.0) / self.observe_window
        if forecast <= 0:
            return math.inf if observed > 0 else 1.0
        return observed / forecast


@register(PolicyKind.AUTOSCALER, "lt-i")
class LongTermImmediate(LongTerm):
    """LT-I: apply the hourly ILP target at once."""

    mode = "immediate"


@register(PolicyKind.AUTOSCALER, "lt-u")
class LongTermUtilisation(LongTerm):
    """LT-U: move towards the hourly target one instance at a time as utilisation crosses 70 % / 30 %."""

    mode = "utilisation"


@register(PolicyKind.AUTOSCALER, "lt-ua")
class LongTermUtilisationArima(LongTerm):
    """LT-UA: LT-U, plus past the target in the hour's last 20 min when traffic is >= 5x / <= 0.5x the forecast."""

    mode = "utilisation+arima"
