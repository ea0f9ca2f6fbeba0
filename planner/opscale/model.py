"""The latency model of one operator graph under one workload point (Eqs. 1-3). Django-free.

A configuration maps each operator to ``(r, b, p)``: replicas, batch size, parallelism. ``Evaluator``
computes every operator's waiting time W_v and sojourn s_v, the critical-path iteration latency (Eq. 3),
the cost sum P_v R_v (Eq. 8), per-replica device busy fractions and memory.

Units (spec A2), a switch:
* ``physical`` (default): jobs are batches. lambda_b = lambda / b, mu = 1 / T_v(b, p), s_v = W_v + T_v(b, p).
  A request's iteration latency includes the whole batch's service time, which is what TTFT / TBT measure.
* ``paper``: Alg. 1 lines 4-8 literally: lambda in requests/s, mu = b / T_v(b, p), s_v = W_v + T_v(b, p) / b.
Both give the same utilisation; W differs by a factor of b.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from planner.opscale.profiles import OperatorProfile
from planner.opscale.queueing import min_stable_servers, wait_time

Config = dict[str, tuple[int, int, int]]  # op -> (r, b, p)


@dataclass(frozen=True)
class Workload:
    """One planning point. prefill: ``qps`` requests of ``length`` input tokens; decode: ``qps * out_tokens``
    token iterations per second, each attending over ``length`` tokens of context (spec A6)."""

    phase: str
    qps: float
    length: float
    out_tokens: float = 1.0

    @property
    def lam(self) -> float:
        return self.qps if self.phase == "prefill" else self.qps * self.out_tokens


@dataclass(frozen=True)
class Options:
    """Every switch of spec A1-A10 plus the free parameters the paper does not give (documented defaults)."""

    units: str = "physical"  # A2: physical | paper
    init_parallelism: str = "model_plan"  # A1: model_plan | min
    downscale: str = (
        "every_op"  # A7: every_op (default: as printed it stops at the first un-downscalable bottleneck) | bottleneck
    )
    # Alg. 1 line 24 (A8): ``cheapest`` (the cheapest single move that restores the SLO, else the largest
    # latency reduction: the prose's "minimally increases resource usage while restoring T_total <= SLO") |
    # ``efficiency`` (the largest latency reduction per GPU added: the prose's "smallest change that most
    # effectively reduces T_total"; a move that adds no GPU ranks first)
    upscale: str = "cheapest"
    # Alg. 1 lines 11 / 28: ``stop`` (as printed: within epsilon below the SLO the loop ends) | ``refine`` (the
    # prose's stopping rule, "terminates when no local move can improve the objective without violating the
    # SLO": cost-reducing moves that keep T <= SLO are still tried inside the buffer)
    band: str = "stop"
    # the product's fallback (not in the paper): an operator-level plan whose placement needs more GPUs than the
    # model-level plan (or misses the SLO where model-level meets it) is replaced by the model-level placement.
    # Off here, so the paper's algorithm is what the reproduction measures; on by default in the plan spec.
    fallback_model_level: bool = False
    # decode iterations: ``context`` (attention reads the KV cache of input + output / 2 tokens, as Fig. 2's
    # decode curves grow with the sequence length) | ``one`` (Section 4.1's "decode iterations (i.e. length = 1)"
    # read literally: every operator, attention included, sees a 1-token sequence and no KV cache)
    decode_length: str = "context"
    communication: bool = False  # A4: add C_v (Vidur's send/recv of the operator's output) to every s_v
    batch_grid: tuple[int, ...] = (1, 2, 4, 8, 16, 32)  # prefill B_v grid (B^max = 32)
    decode_batch_grid: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # decode B_v grid (B^max = 256)
    parallelism: tuple[int, ...] = (1, 2, 4, 8)
    model_tp: int = 1
    eps_frac: float = 0.05  # the buffer epsilon as a fraction of the SLO
    max_iterations: int = 5000
    capacity: float = 1.0  # U_d: busy fraction one GPU can carry
    enforce_capacity: bool = False  # paper: U_d only scores placements; True: a hard limit (both strategies)
    # placed (as printed, line 14): a colocated extra runs 1 + kappa u_v slower | load: every replica sharing a
    # GPU with other instances' replicas, scaled by their SM load | sm_sum: max(1, SM load / U_d) on everything
    interference: str = "placed"
    kappa: float = 1.0
    max_replicas: int = 4096

    def batches(self, phase: str, length: float, max_tokens: float) -> tuple[int, ...]:
        """The batch grid, capped so one prefill batch stays within ``max_tokens`` tokens (b = 1 always allowed)."""
        if phase != "prefill":
            return self.decode_batch_grid
        allowed = tuple(b for b in self.batch_grid if b == 1 or b * length <= max_tokens)
        return allowed or (1,)


# Residual skips of a decoder layer (emb -> add carries the residual stream around attention and the MLP).
EDGES_EXTRA = (("emb", "add"), ("input_layernorm", "add"))


@dataclass
class Evaluator:
    profile: OperatorProfile
    workload: Workload
    options: Options = field(default_factory=Options)
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        ops = self.profile.ops
        self.ops = ops
        self.preds: dict[str, list[str]] = {v: [] for v in ops}
        for u, v in zip(ops, ops[1:], strict=False):
            self.preds[v].append(u)
        for u, v in EDGES_EXTRA:
            if u in self.preds and v in self.preds:
                self.preds[v].append(u)

    # ---- per operator
    def service(self, op: str, b: int, p: int) -> float:
        return self.profile.time_s(op, self.workload.phase, b, self.workload.length, p)

    def comm(self, op: str, b: int, p: int) -> float:
        if not self.options.communication:
            return 0.0
        return self.profile.handoff_s(op, self.workload.phase, b, self.workload.length, p)

    def rates(self, op: str, b: int, p: int, factor: float = 1.0) -> tuple[float, float]:
        """(lambda, mu) in the chosen units, service time stretched by ``factor`` (interference)."""
        t = self.service(op, b, p) * factor
        lam = self.workload.lam
        if self.options.units == "paper":
            return lam, b / t
        return lam / b, 1.0 / t

    def min_replicas(self, op: str, b: int, p: int, factor: float = 1.0) -> int:
        lam, mu = self.rates(op, b, p, factor)
        return min_stable_servers(lam, mu)

    def sojourn(self, op: str, r: int, b: int, p: int, factor: float = 1.0) -> tuple[float, float]:
        """(W_v, s_v) in seconds; s_v = inf when unstable."""
        key = (op, r, b, p, factor)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        lam, mu = self.rates(op, b, p, factor)
        w = wait_time(lam, r, mu)
        t = self.service(op, b, p) * factor
        s = w + (t / b if self.options.units == "paper" else t) + self.comm(op, b, p)
        self._cache[key] = (w, s)
        return w, s

    def busy(self, op: str, r: int, b: int, p: int) -> float:
        """Busy fraction of ONE replica (each of its p GPUs): lambda T_v(b) / (b r)."""
        return self.workload.lam * self.service(op, b, p) / (b * r)

    def sm_load(self, op: str, r: int, b: int, p: int) -> float:
        """Share of one GPU's compute/bandwidth a replica uses on average: busy x the kernel's SM utilisation."""
        return self.busy(op, r, b, p) * self.profile.sm_util(op, self.workload.phase, b, self.workload.length, p)

    def memory(self, op: str, b: int, p: int) -> float:
        """Bytes one replica holds on each of its p GPUs."""
        return self.profile.memory_bytes(op, self.workload.phase, b, self.workload.length, p)

    # ---- whole graph
    def sojourns(self, config: Config, factors: dict[str, float] | None = None) -> dict[str, float]:
        f = factors or {}
        return {v: self.sojourn(v, *config[v], f.get(v, 1.0))[1] for v in self.ops}

    def critical_path(self, s: dict[str, float]) -> tuple[float, list[str]]:
        """Eq. (3): longest path through the DAG with node weights s_v (ops are in topological order)."""
        dist: dict[str, float] = {}
        back: dict[str, str | None] = {}
        for v in self.ops:
            best, arg = 0.0, None
            for u in self.preds[v]:
                if dist[u] > best or arg is None:
                    best, arg = dist[u], u
            dist[v] = best + s[v]
            back[v] = arg
        end = max(self.ops, key=lambda v: dist[v])
        path, node = [], end
        while node is not None:
            path.append(node)
            node = back[node]
        return dist[end], path[::-1]

    def latency(self, config: Config, factors: dict[str, float] | None = None) -> float:
        return self.critical_path(self.sojourns(config, factors))[0]

    @staticmethod
    def cost(config: Config) -> int:
        """Eq. (8): sum of P_v R_v."""
        return sum(r * p for r, _b, p in config.values())

    def total_memory(self, config: Config) -> float:
        return sum(r * p * self.memory(v, b, p) for v, (r, b, p) in config.items())

    def latency_floor(self, b: int, p: int) -> float:
        """Iteration latency with no queueing at all (infinitely many replicas) at batch b."""
        tot = 0.0
        for v in self.ops:
            t = self.service(v, b, p)
            tot += (t / b if self.options.units == "paper" else t) + self.comm(v, b, p)
        return tot

    def unloaded_latency(self, p: int = 1) -> float:
        """Iteration latency of one request alone (b = 1, no queueing): the base of relative SLOs."""
        return sum(self.service(v, 1, p) for v in self.ops)


def is_finite(x: float) -> bool:
    return math.isfinite(x)
