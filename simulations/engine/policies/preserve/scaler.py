"""PreServe's proactive instance scaler (paper 4.3.2, spec 3.4) and the scaling baselines of its RQ2, as one
autoscaler class per registered name, sharing the window clock, the cold start (``scale_out``: the deployment's
start-up delay) and the router.

Registered autoscalers (``strategy.autoscaler``; params in ``strategy.params``):

- ``preserve``: at each window start, forecast P and D two windows ahead (``forecaster``), set the target
  N = ceil(max(P/mu_p, D/mu_d, (P+D)/mu_t)) clipped to the endpoint's [min, max] from the larger of the two
  forecasts, pre-start the missing instances or isolate (drain) the surplus; inside the window, +1 instance per
  potentially overloaded instance (credited once per overload episode), and at most once per window isolate
  N_c - ceil(sum of projected peaks / T_f) instances when every instance stays under T_f = 30 % for the next l
  iterations, never below the window's own target (ours: the paper's formula alone fires at start-up on empty
  instances and isolates, the same second, the instances the window start pre-started; its stated aim is to
  trim over-provisioning, i.e. the intra-window additions). Routes with the load-aware router (``router: "preserve"``, default) or leaves routing to the
  scenario's instance router (``router: "scenario"``).
- ``preserve-router``: the load-aware router alone on the scenario's fleet (RQ3: a static fleet).
- ``preserve-forecast``: forecast-only proactive (window targets, no intra-window rule, no router).
- ``preserve-hybrid``: window targets as a floor + reactive KV thresholds inside the window.
- ``preserve-reactive``: reactive on KV thresholds only: +1 instance when the endpoint's KV use exceeds
  ``up_kv`` (0.8) and nothing is provisioning, -1 when under ``down_kv`` (0.3), at most one scale-in per
  ``down_cooldown_s`` (60 s). The paper gives no thresholds for its reactive baseline; these are ours.

Window params: ``window_s`` (600 s), ``forecaster`` (``oracle-noise`` or a ``forecasts.core`` method, see
forecast.py), capacity ``mu_p`` / ``mu_d`` / ``mu_t`` (tokens/s per instance: profile.py measures them), ``t_f``
(0.3), ``horizon`` (100). All scaling uses the public fleet API (``scale_out``, ``scale_in``, ``drain``).
"""

from __future__ import annotations

import math

import numpy as np

from simulations.engine.policies.autoscalers import Autoscaler
from simulations.engine.policies.preserve.anticipator import Projection, instance_count
from simulations.engine.policies.preserve.forecast import make_forecaster
from simulations.engine.policies.preserve.knobs import PreServeParams
from simulations.engine.policies.preserve.router import LoadAwareRouter
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.scenario.config import ScenarioError


class PreServeBase(Autoscaler):
    tick_s = 1.0
    window_mode = True      # window-level targets from forecasts
    intra_window = True     # +1 per potentially overloaded instance, once-per-window low-load scale-down
    reactive = False        # KV-threshold rules
    default_router = "preserve"

    Params = PreServeParams  # knobs.py (kept apart: this module is compiled with Cython)

    def __init__(self, params, rng):
        super().__init__(params, rng)
        p = self.params
        k = self.knobs
        self.tick_s = k.tick_s
        self.window_s = k.window_s
        self.horizon = k.horizon
        self.t_f = k.t_f
        self.up_kv = k.up_kv
        self.down_kv = k.down_kv
        self.down_cooldown_s = k.down_cooldown_s
        self.donate = k.donate_to_spot
        router = k.router or self.default_router
        self.router = LoadAwareRouter(p) if router == "preserve" else None
        self.wants_arrival_hook = self.router is not None
        self.wants_completion_hook = self.router is not None
        self.forecaster = None
        self.capacity = self._per_endpoint(k.capacity) if self.window_mode and k.capacity else None
        self.forecasters: dict = {}
        if self.window_mode and self.capacity is not None:
            if k.forecaster != "oracle-noise":
                raise ScenarioError("strategy.params.forecaster", "the per-endpoint capacity works with the "
                                    "'oracle-noise' forecaster only", hint="drop capacity or use oracle-noise")
            self.mu = None
            self.forecaster = _PerEndpoint(self)
        elif self.window_mode:
            for key in ("mu_p", "mu_d", "mu_t"):
                if getattr(k, key) is None:
                    raise ScenarioError(f"strategy.params.{key}", "the capacity profile (tokens/s per instance) "
                                        "must be > 0: measure it with simulations.engine.policies.preserve.profile")
            self.mu = (k.mu_p, k.mu_d, k.mu_t)
            try:
                self.forecaster = make_forecaster(k.forecaster,
                                                  dict(p, window_s=self.window_s), rng)
            except (ValueError, KeyError) as exc:
                raise ScenarioError("strategy.params.forecaster", str(exc)) from None
        self.window = -1
        self.down_used = False
        self.last_down = -1e300
        self.decisions: list = []  # (t, window, action, detail): shown in tests and the reproduction
        self.targets: list = []    # (window, P^, D^, N target)
        self.window_target: dict = {}  # endpoint id -> this window's target N (the low-load rule's floor)
        self._obs_k = 0
        self._origin: dict = {}  # (region index, model index) -> endpoint
        self._win_p = self._win_d = 0.0

    # ---------------------------------------------------------------- life cycle
    @staticmethod
    def _per_endpoint(capacity: dict) -> dict:
        out = {}
        for name, mu in capacity.items():
            if len(mu) != 3 or not all(float(x) > 0 for x in mu):
                raise ScenarioError(f"strategy.params.capacity.{name}", "must be [mu_p, mu_d, mu_t], each > 0",
                                    hint="tokens/s of one instance: prefill, decode, total")
            out[name] = tuple(float(x) for x in mu)
        return out

    def prepare_fleet(self, fleet, workload):
        if workload.predicted_output_tokens is None and (self.router is not None or self.intra_window):
            raise ScenarioError("strategy.predictor", f"{self.policy_name} needs predicted output lengths: set "
                                "strategy.predictor (oracle, table2-noise, noisy-oracle or bucket-median)")
        if self.capacity is not None:
            self._prepare_per_endpoint(workload)
        elif self.forecaster is not None:
            self.forecaster.prepare(workload, self.window_s)  # only the oracle forecaster reads it
        return fleet

    def on_start(self, sim, now):
        self._origin = {}
        if self.window_mode:
            self._window_start(sim, now, 0)

    def on_arrival(self, sim, rid, now):
        ep = self._endpoint(sim, rid)
        self.router.arrive(sim, ep, rid, now)
        return True

    def on_complete(self, sim, inst, rid, now):
        if self.router.held:
            self.router.release(sim, inst.endpoint, now)

    def on_instance_ready(self, sim, instance, now):
        if self.router is not None and self.router.held:
            self.router.release(sim, instance.endpoint, now)

    def on_tick(self, sim, now):
        if self.window_mode:
            w = int(now // self.window_s)
            if w > self.window:
                self._window_start(sim, now, w)
        for ep in sim.endpoints:
            if not ep.serving:
                continue
            if self.intra_window or self.reactive:
                self._intra(sim, ep, now)
            if self.router is not None and self.router.held:
                self.router.release(sim, ep, now)

    # ---------------------------------------------------------------- helpers
    def _endpoint(self, sim, rid):
        """The endpoint of a request's origin (region, model): looked up once per pair (the fleet's endpoints are
        fixed for the run)."""
        key = (sim.region_of(rid), sim.model_of(rid))
        ep = self._origin.get(key)
        if ep is None:
            ep = self._origin[key] = sim.endpoints_for(sim.region_names[key[0]], sim.model_names[key[1]])[0]
        return ep

    def _observe_until(self, sim, w: int) -> None:
        """Feed the forecaster the observed P and D (tokens/s) of every window that ended before window ``w``."""
        obs = sim.observed()
        arr, inp, out = obs["arrival_s"], obs["input_tokens"], obs["output_tokens"]
        k = self._obs_k
        while k < len(arr) and arr[k] < w * self.window_s:
            win = int(arr[k] // self.window_s)
            while self.window < win:  # close windows without arrivals
                self._close(self.window)
                self.window += 1
            self._win_p += inp[k]
            self._win_d += out[k]
            k += 1
        while self.window < w:
            self._close(self.window)
            self.window += 1
        self._obs_k = k

    def _close(self, win: int) -> None:
        if win >= 0 and self.capacity is None:
            self.forecaster.observe(win, self._win_p / self.window_s, self._win_d / self.window_s)
        self._win_p = self._win_d = 0.0

    def _window_start(self, sim, now: float, w: int) -> None:
        self._observe_until(sim, w)
        self.window = w
        self.down_used = False
        if self.capacity is None:
            p1, d1 = self.forecaster.forecast(w)
            p2, d2 = self.forecaster.forecast(w + 1)
        for ep in sim.endpoints:
            lo, hi = max(1, ep.min_instances), ep.max_instances
            mu = self.mu
            if self.capacity is not None:  # the endpoint's own traffic and deployment
                key = f"{ep.region}/{ep.model}"
                if key not in self.capacity:
                    raise ScenarioError("strategy.params.capacity", f"no capacity profile for endpoint {key!r}",
                                        hint="give [mu_p, mu_d, mu_t] for every endpoint")
                f, mu = self.forecasters[key], self.capacity[key]
                p1, d1 = f.forecast(w)
                p2, d2 = f.forecast(w + 1)
            n = max(instance_count(p1, d1, *mu, lo, hi), instance_count(p2, d2, *mu, lo, hi))
            self.targets.append((w, round(p2, 2), round(d2, 2), n))
            self.window_target[ep.eid] = n
            cur = ep.n_active
            for _ in range(n - cur):
                if sim.scale_out(ep, now) is None:
                    break
            if n < len(ep.serving):
                for _ in range(len(ep.serving) - n):
                    if sim.scale_in(ep, now, donate=self.donate) is None:
                        break
            if n != cur:
                self.decisions.append((now, w, "window_target", n - cur))

    def _intra(self, sim, ep, now: float) -> None:
        if self.reactive:
            used = sum(sim.kv_used(i, now) for i in ep.serving)
            cap = sum(i.cap for i in ep.serving)
            u = used / cap if cap else 0.0
            if u > self.up_kv and not ep.provisioning and ep.n_active < ep.max_instances:
                if sim.scale_out(ep, now) is not None:
                    self.decisions.append((now, self.window, "reactive_out", 1))
            elif (u < self.down_kv and now - self.last_down >= self.down_cooldown_s
                  and len(ep.serving) > max(1, ep.min_instances, self._floor(ep))):
                if sim.scale_in(ep, now, donate=self.donate) is not None:
                    self.last_down = now
                    self.decisions.append((now, self.window, "reactive_in", -1))
            return
        if self.router is not None:  # shares the router's projection cache (exact, see router.projection)
            projs = self.router.projections(sim, list(ep.serving), now)
        else:
            projs = [Projection.of(sim, inst, now, self.horizon) for inst in ep.serving]
        for inst, proj in zip(list(ep.serving), projs, strict=True):
            over = proj.overloaded()
            state = inst.policy_state
            if over and not state.get("credited"):
                state["credited"] = True
                if ep.n_active < ep.max_instances and sim.scale_out(ep, now) is not None:
                    self.decisions.append((now, self.window, "overload_out", 1))
            elif not over:
                state["credited"] = False
        if not self.down_used and projs and all(p.peak() < self.t_f for p in projs):
            # floor: this window's forecast target (ours, see the module docstring): without it the rule fires at
            # start-up on empty instances and isolates what the window start has just pre-started
            keep = max(1, ep.min_instances, math.ceil(sum(p.peak() for p in projs) / self.t_f),
                       self.window_target.get(ep.eid, 0))
            self.down_used = True
            n = len(ep.serving) - keep
            for _ in range(max(0, n)):
                if sim.scale_in(ep, now, donate=self.donate) is None:
                    break
            if n > 0:
                self.decisions.append((now, self.window, "low_load_in", -n))

    def _floor(self, ep) -> int:
        return 0

    def _prepare_per_endpoint(self, workload) -> None:
        """One oracle-noise forecaster per endpoint, over the requests that originate at its (region, model)."""
        code = np.asarray(workload.region, dtype=np.int64) * len(workload.model_names) + np.asarray(workload.model)
        names = {f"{r}/{m}": i * len(workload.model_names) + j for i, r in enumerate(workload.region_names)
                 for j, m in enumerate(workload.model_names)}
        for key in sorted(self.capacity):
            if key not in names:
                raise ScenarioError(f"strategy.params.capacity.{key}", "no such region/model in the workload",
                                    hint=f"one of {', '.join(sorted(names))}")
            f = make_forecaster("oracle-noise", dict(self.params, window_s=self.window_s), self.rng)
            f.prepare(workload, self.window_s, select=code == names[key])
            self.forecasters[key] = f


class _PerEndpoint:
    """Stands in for the global forecaster in the per-endpoint mode (observations are not needed: oracle-noise)."""

    def __init__(self, owner) -> None:
        self.owner = owner

    def observe(self, window: int, p: float, d: float) -> None:
        pass


@register(PolicyKind.AUTOSCALER, "preserve")
class PreServe(PreServeBase):
    """Window forecasts + intra-window anticipator rules + the load-aware router (the full PreServe)."""


@register(PolicyKind.AUTOSCALER, "preserve-router")
class PreServeRouterOnly(PreServeBase):
    """The load-aware router on the scenario's (static) fleet: RQ3."""

    window_mode = False
    intra_window = False


@register(PolicyKind.AUTOSCALER, "preserve-forecast")
class ForecastOnly(PreServeBase):
    """Forecast-only proactive baseline: window targets, nothing inside the window; routing left to the scenario."""

    intra_window = False
    default_router = "scenario"


@register(PolicyKind.AUTOSCALER, "preserve-hybrid")
class Hybrid(PreServeBase):
    """Hybrid baseline: the window target as a floor, KV-threshold scale-out / scale-in above it."""

    intra_window = False
    reactive = True
    default_router = "scenario"

    def _floor(self, ep) -> int:
        return self.window_target.get(ep.eid, 0)


@register(PolicyKind.AUTOSCALER, "preserve-reactive")
class Reactive(PreServeBase):
    """Reactive baseline on KV thresholds (no forecast)."""

    window_mode = False
    intra_window = False
    reactive = True
    default_router = "scenario"
