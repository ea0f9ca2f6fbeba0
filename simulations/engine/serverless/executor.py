"""Shared-node executor: one small event loop over CPU/GPU nodes, each a single time-multiplexed compute unit.

A node runs one iteration at a time (spec 2.4): SLINFER picks the instance holding the request with the least
headroom (Eq. 1) and runs a prefill of that request if it is not prefilled yet, else one decode iteration of the
instance's prefilled requests; the sllm+c+s baseline runs each of its two slots on its own half of the node at
half speed (static partition; slot_compute "shared": the slots alternate on the whole node); the exclusive baselines
have one instance per node. Iteration times come from the measured tables (perf.py). Instances cold-start (no
compute), serve, go idle and are reclaimed after the keep-alive. Memory operations go through the node's
hazard-aware budget (state.py) and every change re-checks the no-OOM invariant. Dispatch is in policies.py.
Django-free; independent of the fleet loop (simulations/engine/simulator/loop.py).
"""

from __future__ import annotations

import heapq
from itertools import count

from simulations.engine.serverless import perf
from simulations.engine.serverless.config import ServerlessConfig
from simulations.engine.serverless.state import Instance, Node, Request

GB = 1e9
ARRIVE, ITER, LOADED, RESIZED, KEEPALIVE, DROP, STATION = range(7)


class Executor:
    def __init__(self, cfg: ServerlessConfig, mean_output: dict[str, float] | None = None):
        from simulations.engine.serverless import policies  # noqa: PLC0415 - policies import this module's names

        self.cfg = cfg
        self.policy = policies.for_system(cfg)
        facts = perf.MODEL_FACTS[cfg.base_model]
        self.weights = facts["weights_gb"] * GB
        self.kv_per_token = facts["kv_bytes_per_token"]
        self.cpu_kv = facts["cpu_kv_gb"] * GB
        self.gpu_prof = perf.profile(cfg.base_model, "gpu")
        self.cpu_prof = perf.profile(cfg.base_model, "cpu")
        self.cold_start = facts["weights_gb"] * cfg.cold_start_s_per_gb
        self.mean_output = mean_output or {}
        self.nodes = [Node(i, "cpu", cfg.cpu_memory_gb * GB, cfg.cpu_idle_w, cfg.cpu_busy_w)
                      for i in range(cfg.cpu_nodes)]
        self.nodes += [Node(cfg.cpu_nodes + i, "gpu", cfg.gpu_memory_gb * GB, cfg.gpu_idle_w, cfg.gpu_busy_w)
                       for i in range(cfg.gpu_nodes)]
        self.now = 0.0
        self.heap: list = []
        self.seq = count()
        self.instances: dict[str, list[Instance]] = {}
        self.all_instances: list[Instance] = []
        self.queue: list[Request] = []
        self.node_events: list[tuple[float, str, int]] = []  # (t, kind, +1 / -1): a node starts / stops being in use
        self.requests: list[Request] = []
        self.iid = count()
        self.counters = {"iterations": 0, "decode_iterations": 0, "decode_batch_sum": 0, "resizes": 0,
                         "preemptions": 0, "evictions": 0, "station_waits": 0, "oom_checks": 0}

    # ------------------------------------------------------------------ events
    def push(self, t: float, kind: int, payload) -> None:
        heapq.heappush(self.heap, (t, next(self.seq), kind, payload))

    def run(self, requests: list[Request]) -> dict:
        from simulations.engine.serverless.metrics import summarize  # noqa: PLC0415

        self.requests = requests
        for r in requests:
            self.push(r.arrival, ARRIVE, r)
        while self.heap:
            t, _, kind, payload = heapq.heappop(self.heap)
            self.now = t
            if kind == ARRIVE:
                self.arrive(payload)
            elif kind == ITER:
                self.iteration_done(*payload)
            elif kind == LOADED:
                self.loaded(payload)
            elif kind == RESIZED:
                self.resized(*payload)
            elif kind == KEEPALIVE:
                self.keep_alive(*payload)
            elif kind == DROP:
                self.drop_check(payload)
        for inst in self.all_instances:  # end of run: close lifetimes
            if inst.reclaimed_at is None:
                inst.reclaimed_at = self.now
        for node in self.nodes:
            node.check()
            if node.in_use_since is not None:
                node.in_use_time += self.now - node.in_use_since
                node.in_use_since = None
        return summarize(self)

    # ------------------------------------------------------------------ requests
    def arrive(self, r: Request) -> None:
        if not self.policy.dispatch(self, r):
            self.enqueue(r)

    def enqueue(self, r: Request) -> None:
        r.instance = None
        r.queued_at = self.now
        self.queue.append(r)
        self.push(max(self.now, r.deadline()), DROP, r)

    def drop_check(self, r: Request) -> None:
        """Drop a request still queued past its next deadline (queueing > TTFT SLO for a fresh request)."""
        if r.queued_at is not None and r.instance is None and not r.dropped and r.done_at is None \
                and r.deadline() <= self.now + 1e-12:
            r.dropped = True
            self.queue.remove(r)

    def retry_queue(self) -> None:
        if not self.queue:
            return
        failed: set[str] = set()
        for r in list(self.queue):
            if r.model in failed:
                continue
            if r.deadline() <= self.now:
                continue  # its DROP event removes it
            self.queue.remove(r)
            r.queued_at = None
            if not self.policy.dispatch(self, r):
                failed.add(r.model)
                r.queued_at = self.now
                self.queue.append(r)
        self.queue.sort(key=lambda q: q.arrival)

    def join(self, inst: Instance, r: Request) -> None:
        inst.requests.append(r)
        inst.idle_token += 1  # cancels a pending keep-alive reclaim
        r.instance = inst
        r.queued_at = None
        self.kick(inst.node)

    # ------------------------------------------------------------------ instances and memory
    def create_instance(self, node: Node, model: str, kv: float, limit: int | None = None, slot: int = 0) -> Instance:
        inst = Instance(next(self.iid), model, node, self.weights, kv, self.kv_per_token, self.now,
                        self.now + self.cold_start, limit=limit, slot=slot, target_kv=kv)
        size = self.weights + kv
        node.budget += size
        node.pess += size
        node.actual += size
        self.check(node)
        if not node.instances:
            node.in_use_since = self.now
            self.node_events.append((self.now, node.kind, 1))
        node.instances.append(inst)
        self.instances.setdefault(model, []).append(inst)
        self.all_instances.append(inst)
        self.push(inst.ready_at, LOADED, inst)
        return inst

    def can_allocate(self, node: Node, size: float) -> bool:
        return node.budget + size <= node.capacity and node.pess + size <= node.capacity

    def remove_instance(self, inst: Instance) -> None:
        node = inst.node
        size = self.weights + inst.kv
        node.budget -= self.weights + inst.target_kv
        node.pess -= size
        node.actual -= size
        self.check(node)
        node.instances.remove(inst)
        self.instances[inst.model].remove(inst)
        inst.reclaimed_at = self.now
        if not node.instances:
            node.in_use_time += self.now - node.in_use_since
            node.in_use_since = None
            self.node_events.append((self.now, node.kind, -1))

    def op_in_flight(self, inst: Instance) -> bool:
        return self.now < inst.resizing_until or inst.target_kv != inst.kv

    def resize(self, inst: Instance, new_kv: float) -> bool:
        """Ask the node's memory subsystem for a KV pool of ``new_kv`` bytes (spec 2.9); False = refused."""
        node = inst.node
        if self.op_in_flight(inst):
            return new_kv <= inst.target_kv
        delta = new_kv - inst.kv
        if delta == 0:
            return True
        if delta > 0:
            if node.budget + delta > node.capacity:
                return False
            node.budget += delta
            inst.target_kv = new_kv
            if node.pess + delta <= node.capacity:
                self.start_resize(inst)
            else:
                node.station.append(inst)  # reservation station: waits for in-flight shrinks
                self.counters["station_waits"] += 1
            return True
        node.budget += delta  # optimistic: the budget drops at once, the memory at completion
        inst.target_kv = new_kv
        self.start_resize(inst)
        return True

    def start_resize(self, inst: Instance) -> None:
        node, new, old = inst.node, inst.target_kv, inst.kv
        grow = new > old
        if grow:
            node.pess += new - old
            node.actual += new - old
        cost = (self.cfg.resize_grow_s_per_gb if grow else self.cfg.resize_shrink_s_per_gb) * new / GB
        start = max(self.now, inst.ready_at)
        inst.resizing_until = start + cost
        inst.resize_time += cost
        self.counters["resizes"] += 1
        self.check(node)
        self.push(inst.resizing_until, RESIZED, (inst, new, old))

    def resized(self, inst: Instance, new: float, old: float) -> None:
        node = inst.node
        if new < old:  # the shrink frees its memory only now
            node.pess -= old - new
            node.actual -= old - new
        inst.kv = new
        self.check(node)
        while node.station and node.pess + (node.station[0].target_kv - node.station[0].kv) <= node.capacity:
            self.start_resize(node.station.pop(0))
        self.kick(node)
        if not inst.requests:
            self.arm_keep_alive(inst)
        self.retry_queue()

    def check(self, node: Node) -> None:
        self.counters["oom_checks"] += 1
        node.check()

    def loaded(self, inst: Instance) -> None:
        self.kick(inst.node)
        if not inst.requests:
            self.arm_keep_alive(inst)

    def arm_keep_alive(self, inst: Instance) -> None:
        inst.idle_token += 1
        self.push(self.now + self.cfg.keep_alive_s, KEEPALIVE, (inst, inst.idle_token))

    def keep_alive(self, inst: Instance, token: int) -> None:
        if token != inst.idle_token or inst.requests or inst.reclaimed_at is not None:
            return
        if self.op_in_flight(inst) or inst.running:
            self.arm_keep_alive(inst)
            return
        self.remove_instance(inst)
        self.retry_queue()

    # ------------------------------------------------------------------ memory demand (spec 2.7)
    def m_require(self, reqs: list[Request], extra: Request | None = None) -> float:
        ms = [extra] if extra is not None else []
        tokens = sum(r.input_tokens + max(r.generated, self.mean_output.get(r.model, 0.0)) for r in (*reqs, *ms))
        return self.kv_per_token * max(tokens, self.cfg.min_tokens)

    # ------------------------------------------------------------------ compute
    def prof(self, node: Node) -> perf.Profile:
        return self.cpu_prof if node.kind == "cpu" else self.gpu_prof

    def kick(self, node: Node) -> None:
        if self.policy.partitioned(node):  # sllm+c+s, slot_compute "half": each slot computes on its half alone
            for inst in node.instances:
                if inst.requests and not inst.running and not inst.busy(self.now):
                    self.start_iteration(node, inst, 2.0)
            return
        if node.running_inst is not None:
            return
        ready = [i for i in node.instances if i.requests and not i.busy(self.now)]
        if not ready:
            return
        self.start_iteration(node, self.policy.pick(self, node, ready), 1.0)

    def start_iteration(self, node: Node, inst: Instance, scale: float) -> None:
        """One iteration of ``inst``: a prefill of its most urgent request if not prefilled, else a decode of its
        prefilled requests. ``scale`` 2 = the instance owns half of the node (the iteration takes twice the table's
        time, half the node is busy meanwhile)."""
        prof = self.prof(node)
        urgent = min(inst.requests, key=Request.deadline)
        if not urgent.prefilled:
            batch = [urgent]
            dt = prof.prefill(urgent.context())
        else:
            batch = [r for r in inst.requests if r.prefilled]
            dt = prof.decode(len(batch), sum(r.context() for r in batch) / len(batch))
            self.counters["decode_iterations"] += 1
            self.counters["decode_batch_sum"] += len(batch)
        self.counters["iterations"] += 1
        dt *= scale
        if scale == 1.0:
            node.running_inst = inst
            node.busy_until = self.now + dt
        inst.running = True
        node.busy_time += dt / scale
        self.push(self.now + dt, ITER, (node, inst, batch))

    def iteration_done(self, node: Node, inst: Instance, batch: list[Request]) -> None:
        if node.running_inst is inst:
            node.running_inst = None
        inst.running = False
        finished = False
        for r in batch:
            if r.instance is not inst:
                continue  # evicted during the iteration: its token is lost
            if self.now <= r.deadline() + 1e-9:
                r.on_time_tokens += 1
            else:
                r.late_tokens += 1
            r.generated += 1
            r.prefilled = True
            if r.first_token_at is None:
                r.first_token_at = self.now
            if r.generated >= r.output_tokens:
                r.done_at = self.now
                inst.requests.remove(r)
                r.instance = None
                finished = True
        self.policy.after_iteration(self, inst)
        if not inst.requests:
            self.arm_keep_alive(inst)
        self.kick(node)
        if finished:
            self.retry_queue()

    def evict(self, inst: Instance, r: Request) -> None:
        """Take r off its instance and re-dispatch it with its state (ST, O) kept: recompute at the destination."""
        inst.requests.remove(r)
        r.instance = None
        r.prefilled = False
        r.migrations += 1
        if not self.policy.dispatch(self, r):
            self.enqueue(r)

    def headroom(self, r: Request) -> float:
        return r.deadline() - self.now



