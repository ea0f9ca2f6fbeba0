"""NVIDIA Dynamo's SLA planner (throughput-based scaling) as a pure controller (no simulator, no Django).

Every adjustment interval (``throughput_adjustment_interval_seconds`` 180 s, defaults.py ``BasePlannerDefaults``
line 29) the planner observes the interval's request count, mean ISL and OSL, mean TTFT and ITL; feeds the first
three to its load predictors (predictors.py) and computes, as ``PrefillPlanner._compute_replica_requirements`` and
``DecodePlanner._compute_replica_requirements`` (ai-dynamo/dynamo components/src/dynamo/planner/core/):

- correction factors p = observed TTFT / profiled TTFT(ISL), d = observed ITL / profiled ITL at the observed load;
- prefill: num_p = ceil(num_req x ISL / interval x min(1, p) / prefill throughput per engine at ISL);
- decode: num_d = ceil(num_req x OSL / interval / best decode throughput per engine whose ITL <= ITL target / d at
  context ISL + OSL / 2);
- each at least ``min_endpoint`` (1), the total within ``max_gpu_budget`` (8 GPUs).

Defaults: defaults.py ``SLAPlannerDefaults`` lines 74-75 (TTFT 500 ms, ITL 50 ms), 78 (predictor "arima").

Dynamo profiles each engine before deployment; we compute the same two curves from the deployment's latency model
(``Profile``): prefill throughput = ISL / prefill time of one ISL prompt; decode throughput = B / iteration time of
the largest batch B (<= max batch, KV permitting) whose iteration stays under the ITL target. Dynamo scales prefill
and decode pools separately (disaggregated serving); our endpoints aggregate both, so the planner's replica count
here is ceil(prefill load share + decode load share) with each share the fractional engine count above (ours:
``combine="sum"``; ``"max"`` takes the larger of num_p and num_d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simulations.engine.policies.dynamo_planner.predictors import make_predictor

ADJUSTMENT_INTERVAL_S = 180.0
TTFT_S = 0.5
ITL_S = 0.05


@dataclass(frozen=True)
class Profile:
    """An engine's prefill and decode curves from the contract latency form (seconds)."""
    p_c0: float
    p_c1: float
    p_c2: float
    d_c0: float
    d_cb: float
    d_cc: float
    kv_tokens: int
    max_batch: int

    def prefill_ttft(self, isl: float) -> float:
        return self.p_c0 + self.p_c1 * isl + self.p_c2 * isl * isl

    def prefill_thpt(self, isl: float) -> float:
        isl = max(isl, 1.0)
        return isl / self.prefill_ttft(isl)

    def decode_itl(self, batch: float, context: float) -> float:
        return self.d_c0 + self.d_cb * batch + self.d_cc * batch * context

    def decode_best_thpt(self, itl: float, context: float) -> float:
        """Tokens/s of the largest batch whose ITL <= ``itl`` (0 if even a batch of one is slower)."""
        context = max(context, 1.0)
        per = self.d_cb + self.d_cc * context
        b = math.floor((itl - self.d_c0) / per) if per > 0 else self.max_batch
        b = min(b, self.max_batch, int(self.kv_tokens // context))
        if b < 1:
            return 0.0
        return b / self.decode_itl(b, context)


@dataclass(frozen=True)
class PlannerSpec:
    ttft_s: float = TTFT_S
    itl_s: float = ITL_S
    interval_s: float = ADJUSTMENT_INTERVAL_S
    predictor: str = "arima"
    min_endpoint: int = 1
    max_replicas: int = 8
    combine: str = "sum"
    predictor_params: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (self.ttft_s > 0 and self.itl_s > 0 and self.interval_s > 0):
            raise ValueError("ttft_s, itl_s and interval_s must be > 0")
        if self.combine not in ("sum", "max"):
            raise ValueError(f"combine must be 'sum' or 'max', got {self.combine!r}")
        make_predictor(self.predictor, self.predictor_params)  # refuses an unknown name


@dataclass
class Observation:
    num_req: float
    isl: float
    osl: float
    ttft_s: float | None = None  # mean TTFT of the interval's requests (None: no correction)
    itl_s: float | None = None
    batch_per_engine: float | None = None  # mean running batch per engine (for the expected ITL)


@dataclass
class SLAPlanner:
    spec: PlannerSpec
    profile: Profile
    p_correction: float = 1.0
    d_correction: float = 1.0
    last: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.num_req = make_predictor(self.spec.predictor, self.spec.predictor_params)
        self.isl = make_predictor(self.spec.predictor, self.spec.predictor_params)
        self.osl = make_predictor(self.spec.predictor, self.spec.predictor_params)

    def observe(self, obs: Observation) -> None:
        self.num_req.add(obs.num_req)
        self.isl.add(obs.isl)
        self.osl.add(obs.osl)
        if obs.ttft_s and obs.isl > 0:
            self.p_correction = obs.ttft_s / self.profile.prefill_ttft(obs.isl)
        if obs.itl_s and obs.batch_per_engine:
            expect = self.profile.decode_itl(obs.batch_per_engine, obs.isl + obs.osl / 2)
            if expect > 0:
                self.d_correction = obs.itl_s / expect

    def plan(self) -> int:
        """The replica count for the next interval."""
        s = self.spec
        n, isl, osl = max(0.0, self.num_req.predict()), max(0.0, self.isl.predict()), max(0.0, self.osl.predict())
        p_load = n * isl / s.interval_s * min(1.0, self.p_correction)
        p_cap = self.profile.prefill_thpt(isl)
        itl = s.itl_s / self.d_correction if self.d_correction > 0 else s.itl_s
        d_cap = self.profile.decode_best_thpt(itl, isl + osl / 2)
        d_load = n * osl / s.interval_s
        p_share = p_load / p_cap if p_cap > 0 else float(s.max_replicas)
        d_share = d_load / d_cap if d_cap > 0 else float(s.max_replicas)
        if s.combine == "sum":
            want = math.ceil(p_share + d_share - 1e-9)
        else:
            want = max(math.ceil(p_share - 1e-9), math.ceil(d_share - 1e-9))
        self.last = {"num_req": n, "isl": isl, "osl": osl, "p_share": p_share, "d_share": d_share,
                     "p_correction": self.p_correction, "d_correction": self.d_correction}
        return min(max(want, s.min_endpoint), s.max_replicas)

    def plan_split(self) -> tuple[int, int]:
        """Disaggregated serving (Dynamo's disagg planner): the prefill and decode replica counts for the next
        interval, each from its own share (TTFT sizes the prefill pool, ITL the decode pool); ``plan`` first."""
        self.plan()
        s = self.spec
        num_p = math.ceil(self.last["p_share"] - 1e-9)
        num_d = math.ceil(self.last["d_share"] - 1e-9)
        return (min(max(num_p, s.min_endpoint), s.max_replicas), min(max(num_d, s.min_endpoint), s.max_replicas))
