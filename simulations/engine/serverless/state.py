"""State of the shared-node executor: requests, instances, nodes with hazard-aware memory budgets (spec 2.7-2.9).

Memory per node is tracked three ways (spec 2.9): ``budget`` (optimistic: sum of targets, reduced at once on a
scale-down, checked against capacity on a scale-up), ``pess`` (pessimistic: an instance shrinking is counted at
its old size until the shrink completes; a scale-up runs only if ``pess + delta <= capacity``, else it waits in
the reservation station) and ``actual`` (bytes held now). ``check()`` asserts actual <= pess <= capacity and
budget <= capacity; the executor calls it after every memory operation, so an OOM cannot go unnoticed.
Django-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TPOT_SLO = 0.25


class OutOfMemory(AssertionError):
    """The no-OOM invariant broke (a bug, never a result)."""


@dataclass(eq=False)
class Request:
    rid: int
    model: str
    arrival: float
    input_tokens: int
    output_tokens: int
    ttft_slo: float
    grace: float = 0.0
    generated: int = 0  # O: output tokens produced so far
    prefilled: bool = False
    first_token_at: float | None = None
    done_at: float | None = None
    on_time_tokens: int = 0
    late_tokens: int = 0
    migrations: int = 0
    dropped: bool = False
    instance: Instance | None = None
    queued_at: float | None = None

    def deadline(self) -> float:
        """Deadline of the next token: ST + TTFT_SLO (+ cold-start grace) + TPOT_SLO * O (Eq. 1 without -CT)."""
        return self.arrival + self.ttft_slo + self.grace + TPOT_SLO * self.generated

    def context(self) -> int:
        return self.input_tokens + self.generated

    def slo_met_per_token(self) -> bool:
        """Eq. 1 semantics: every token, the first included, by its deadline ST + TTFT_SLO (+ grace) + (k-1) TPOT."""
        return not self.dropped and self.done_at is not None and self.late_tokens == 0

    def slo_met(self) -> bool:
        """TTFT within TTFT_SLO (+ grace) and average TPOT over the decode tokens within TPOT_SLO."""
        if self.dropped or self.done_at is None or self.first_token_at is None:
            return False
        if self.first_token_at - self.arrival > self.ttft_slo + self.grace + 1e-9:
            return False
        if self.output_tokens <= 1:
            return True
        return (self.done_at - self.first_token_at) / (self.output_tokens - 1) <= TPOT_SLO + 1e-9


@dataclass(eq=False)
class Instance:
    iid: int
    model: str
    node: Node
    weights: float  # bytes
    kv: float  # bytes of KV pool currently held (after the in-flight operation: see pending_kv)
    kv_bytes_per_token: int
    created: float
    ready_at: float
    limit: int | None = None  # concurrency limit (baselines) or None
    slot: int = 0  # sllm+c+s half-node slot (-1 = whole node)
    requests: list[Request] = field(default_factory=list)
    resizing_until: float = 0.0
    target_kv: float = 0.0
    idle_token: int = 0
    reclaimed_at: float | None = None
    resize_time: float = 0.0
    running: bool = False  # an iteration of this instance is under way

    def batch(self) -> int:
        return len(self.requests)

    def kv_tokens(self) -> float:
        return self.kv / self.kv_bytes_per_token

    def used_tokens(self) -> int:
        return sum(r.context() for r in self.requests)

    def busy(self, now: float) -> bool:
        """Loading or resizing: holds memory, runs no iteration."""
        return now < self.ready_at or now < self.resizing_until


@dataclass(eq=False)
class Node:
    nid: int
    kind: str  # "cpu" or "gpu"
    capacity: float  # bytes
    idle_w: float
    busy_w: float
    instances: list[Instance] = field(default_factory=list)
    busy_until: float = 0.0
    running_inst: object = None  # instance whose iteration runs now
    budget: float = 0.0
    pess: float = 0.0
    actual: float = 0.0
    station: list = field(default_factory=list)
    rr: int = 0  # round-robin pointer (sllm+c+s)
    busy_time: float = 0.0
    in_use_since: float | None = None
    in_use_time: float = 0.0

    def check(self) -> None:
        eps = 1.0
        if not (self.actual <= self.pess + eps and self.pess <= self.capacity + eps and self.budget <= self.capacity + eps):
            raise OutOfMemory(f"node {self.nid} ({self.kind}): actual {self.actual / 1e9:.2f} GB, pessimistic "
                              f"{self.pess / 1e9:.2f} GB, budget {self.budget / 1e9:.2f} GB, capacity "
                              f"{self.capacity / 1e9:.2f} GB")

    def free_budget(self) -> float:
        return self.capacity - self.budget
