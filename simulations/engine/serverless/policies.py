"""Dispatch and scheduling policies of the shared-node executor: SLINFER and the ServerlessLLM baselines.

SLINFER (spec 2.3-2.13): CPU first when the CPU profile can meet the request's TTFT; among a model's instances
the largest batch first (reactive consolidation); admission by shadow validation (x1.1) and the memory check
(M_recommend, else the compromise M_require); proactive consolidation (preempt smaller-batch neighbours,
smallest first); a new instance on the best-fit node; else queue. After each iteration the memory subsystem
handles underestimation (grow, else evict the request with the longest headroom) and the lazy scale-down.

sllm / sllm+c / sllm+c+s (spec 5.2): exclusive whole-node instances (or two fixed half-node slots for +s) with
the measured concurrency limits, CPU first for the +c variants, queue when no node (slot) is free.
Django-free.
"""

from __future__ import annotations

from simulations.engine.serverless import perf
from simulations.engine.serverless.config import ServerlessConfig
from simulations.engine.serverless.state import TPOT_SLO, Instance, Node, Request


def for_system(cfg: ServerlessConfig):
    return Slinfer(cfg) if cfg.system == "slinfer" else Sllm(cfg)


class Slinfer:
    def __init__(self, cfg: ServerlessConfig):
        self.cfg = cfg

    # -------------------------------------------------------------- scheduling
    @staticmethod
    def partitioned(node: Node) -> bool:
        return False

    @staticmethod
    def pick(ex, node: Node, ready: list[Instance]) -> Instance:
        """The instance holding the request with the least headroom (Eq. 1)."""
        return min(ready, key=lambda i: min(r.deadline() for r in i.requests))

    def cpu_ok(self, ex, r: Request) -> bool:
        """The CPU profile can produce r's next token in time (TTFT reach; spec 2.13)."""
        if not self.cfg.use_cpu:
            return False
        return self.cfg.margin * ex.cpu_prof.prefill(r.context()) <= ex.headroom(r)

    # -------------------------------------------------------------- shadow validation (spec 2.6)
    def shadow(self, ex, node: Node, inst: Instance | None, r: Request, start_wait: float = 0.0) -> bool:
        """Accept r on ``inst`` (None: a new instance) of ``node`` unless one of the paper's three cases occurs.

        The virtual schedule is bounded analytically rather than replayed: r's prefill waits for the running
        iteration, the node's pending prefills and ``start_wait`` (cold start or resize); every prefilled
        request on the node must still make its next deadline after that delay plus one decode of its instance
        (one TPOT of extra slack for requests the headroom scheduler serves before r); the sum of one decode
        iteration of every instance stays within TPOT_SLO. All estimates x margin (1.1).
        """
        m, prof, now = self.cfg.margin, ex.prof(node), ex.now
        total = 0.0
        dec = {}
        for j in node.instances:
            reqs = j.requests + ([r] if j is inst else [])
            if reqs:
                dec[j] = m * prof.decode(len(reqs), sum(q.context() for q in reqs) / len(reqs))
                total += dec[j]
        if inst is None:
            total += m * prof.decode(1, r.context())
        if total > TPOT_SLO:
            return False  # case 3: steady-state decode overload
        if self.cfg.shadow == "replay":  # the paper's reading: replay the node's future (shadow.py)
            from simulations.engine.serverless.shadow import replay  # noqa: PLC0415

            return replay(ex, node, inst, r, start_wait, m)
        pending = sum(m * prof.prefill(q.context()) for j in node.instances for q in j.requests if not q.prefilled)
        running = max(0.0, (node.busy_until if node.running_inst is not None else now) - now)
        own = m * prof.prefill(r.context())
        delay = running + pending + own
        if now + max(running + pending, start_wait) + own > r.deadline():
            return False  # case 1: r's TTFT
        rd = r.deadline()
        for j in node.instances:
            for q in j.requests:
                if q.prefilled:
                    slack = q.deadline() - now + (TPOT_SLO if q.deadline() < rd else 0.0)
                    if slack < delay + dec[j]:
                        return False  # case 2: an earlier request's token deadline
        return True

    # -------------------------------------------------------------- memory check (spec 2.8, 2.10)
    def fits_memory(self, ex, inst: Instance, r: Request) -> bool:
        if inst.node.kind == "cpu":  # the artefact's fixed CPU KV pool
            return ex.m_require(inst.requests, r) <= inst.kv
        need = ex.m_require(inst.requests, r)
        if need <= inst.target_kv:
            return True
        return ex.resize(inst, need * (1 + self.cfg.watermark)) or ex.resize(inst, need)  # compromise

    def try_join(self, ex, inst: Instance, r: Request) -> bool:
        if inst.limit is not None and inst.batch() >= inst.limit:
            return False
        wait = max(0.0, inst.ready_at - ex.now, inst.resizing_until - ex.now)
        if not self.shadow(ex, inst.node, inst, r, wait):
            return False
        if not self.fits_memory(ex, inst, r):
            return False
        if inst.ready_at > ex.now:
            r.grace = max(r.grace, ex.cold_start)
        ex.join(inst, r)
        return True

    # -------------------------------------------------------------- dispatch (spec 2.3)
    def candidates(self, ex, r: Request) -> list[Instance]:
        cpu = self.cpu_ok(ex, r)
        insts = [i for i in ex.instances.get(r.model, []) if cpu or i.node.kind == "gpu"]
        if self.cfg.consolidation:
            insts.sort(key=lambda i: (i.node.kind != "cpu", -i.batch()))
        else:
            insts.sort(key=lambda i: i.node.kind != "cpu")
        return insts

    def dispatch(self, ex, r: Request) -> bool:
        insts = self.candidates(ex, r)
        for inst in insts:
            if self.try_join(ex, inst, r):
                return True
        if self.cfg.consolidation:
            for inst in insts:
                if self.try_preempt(ex, inst, r):
                    return True
        return self.try_new(ex, r)

    def new_kv(self, ex, node: Node, r: Request) -> float:
        if node.kind == "cpu":
            return ex.cpu_kv
        if not self.cfg.sharing:
            return node.capacity - ex.weights
        return ex.m_require([], r) * (1 + self.cfg.watermark)

    def nodes_for_new(self, ex, r: Request) -> list[Node]:
        cpu = self.cpu_ok(ex, r)
        nodes = [n for n in ex.nodes if (cpu or n.kind == "gpu") and (self.cfg.sharing or not n.instances)]
        return sorted(nodes, key=lambda n: (n.kind != "cpu", n.free_budget()))  # CPU first, best fit

    def try_new(self, ex, r: Request) -> bool:
        for node in self.nodes_for_new(ex, r):
            kv = self.new_kv(ex, node, r)
            if node.kind == "cpu" and ex.m_require([], r) > kv:
                continue
            if not ex.can_allocate(node, ex.weights + kv):
                continue
            grace = r.grace
            r.grace = max(r.grace, ex.cold_start)
            if self.shadow(ex, node, None, r, ex.cold_start):
                ex.join(ex.create_instance(node, r.model, kv), r)
                return True
            r.grace = grace
        return False

    # -------------------------------------------------------------- proactive consolidation (spec 2.11)
    def try_preempt(self, ex, inst: Instance, r: Request) -> bool:
        node = inst.node
        if not self.cfg.sharing or ex.op_in_flight(inst) or inst.busy(ex.now):
            return False
        victims = sorted((j for j in node.instances if j is not inst and j.batch() < inst.batch()
                          and node.running_inst is not j and not ex.op_in_flight(j)), key=Instance.batch)
        if not victims:
            return False
        chosen: list[Instance] = []
        keep = node.instances
        for v in victims:
            if not all(ex.headroom(q) >= ex.cold_start + self.cfg.margin * ex.gpu_prof.prefill(q.context())
                       for q in v.requests):
                break  # the victim's requests could not meet their SLO after rescheduling
            chosen.append(v)
            node.instances = [j for j in keep if j not in chosen]
            freed = sum(ex.weights + j.kv for j in chosen)
            ok = self.shadow(ex, node, inst, r)
            if ok and node.kind == "gpu":
                need = ex.m_require(inst.requests, r)
                ok = need <= inst.target_kv or node.budget - freed + (need - inst.kv) <= node.capacity
            node.instances = keep
            if ok:
                ex.counters["preemptions"] += len(chosen)
                moved = []
                for j in chosen:
                    moved += j.requests
                    j.requests = []
                    ex.remove_instance(j)
                if not self.try_join(ex, inst, r):
                    ex.enqueue(r)
                for q in moved:
                    q.instance = None
                    q.prefilled = False
                    q.migrations += 1
                    if not self.dispatch(ex, q):
                        ex.enqueue(q)
                return True
        return False

    # -------------------------------------------------------------- after an iteration (spec 2.8, 2.10)
    def after_iteration(self, ex, inst: Instance) -> None:
        if inst.reclaimed_at is not None:
            return
        while inst.requests and inst.used_tokens() > inst.kv_tokens():
            if inst.node.kind == "gpu" and not ex.op_in_flight(inst):
                need = ex.m_require(inst.requests)
                if ex.resize(inst, need * (1 + self.cfg.watermark)) or ex.resize(inst, need):
                    break
            if inst.node.kind == "gpu" and ex.op_in_flight(inst) and inst.target_kv / inst.kv_bytes_per_token \
                    >= inst.used_tokens():
                break  # a grow is under way; the instance waits for it
            ex.counters["evictions"] += 1
            ex.evict(inst, max(inst.requests, key=Request.deadline))  # the longest headroom
        if inst.node.kind == "gpu" and self.cfg.sharing and not ex.op_in_flight(inst):
            rec = ex.m_require(inst.requests) * (1 + self.cfg.watermark)
            if rec * (1 + self.cfg.watermark) < inst.kv:  # lazy scale-down
                ex.resize(inst, rec)


class Sllm:
    """ServerlessLLM and its +c / +c+s variants: exclusive or half-node instances with concurrency limits."""

    def __init__(self, cfg: ServerlessConfig):
        self.cfg = cfg
        self.cpu = cfg.system in ("sllm+c", "sllm+c+s")
        self.shared = cfg.system == "sllm+c+s"
        limits = perf.load_concurrency()
        self.limits = {d: limits.get((cfg.base_model, d), (None, None)) for d in ("cpu", "gpu")}

    def slots_needed(self, node: Node) -> int:
        if not self.shared or (node.kind == "cpu" and self.cfg.base_model == "llama-2-13b"):
            return 2  # exclusive node (13B on CPU gets the whole node under +s)
        return 1

    def limit(self, node: Node) -> int | None:
        excl, share = self.limits[node.kind]
        return share if self.slots_needed(node) == 1 else excl

    def partitioned(self, node: Node) -> bool:
        """sllm+c+s with slot_compute "half": the paper's "each instance is allocated only half of the per-node
        resources" read as a static partition (an idle slot's half is wasted), not as work-conserving alternation."""
        return self.shared and self.cfg.slot_compute == "half" and self.slots_needed(node) == 1

    @staticmethod
    def pick(ex, node: Node, ready: list[Instance]) -> Instance:
        if len(ready) == 1:
            return ready[0]
        node.rr += 1  # the two static slots alternate
        return ready[node.rr % len(ready)]

    def cpu_ok(self, ex, r: Request) -> bool:
        return self.cpu and self.limits["cpu"][0] is not None and \
            ex.cpu_prof.prefill(r.context()) <= ex.headroom(r)

    def dispatch(self, ex, r: Request) -> bool:
        cpu = self.cpu_ok(ex, r)
        insts = [i for i in ex.instances.get(r.model, []) if (cpu or i.node.kind == "gpu")
                 and (i.limit is None or i.batch() < i.limit)]
        insts.sort(key=lambda i: (i.node.kind != "cpu", -i.batch()))
        for inst in insts:
            if ex.m_require(inst.requests, r) <= inst.kv:
                if inst.ready_at > ex.now:
                    r.grace = max(r.grace, ex.cold_start)
                ex.join(inst, r)
                return True
        nodes = [n for n in ex.nodes if cpu or n.kind == "gpu"]
        nodes.sort(key=lambda n: (n.kind != "cpu", -len(n.instances)))
        for node in nodes:
            need = self.slots_needed(node)
            if sum(self.slots_needed(node) for _ in node.instances) + need > 2:
                continue
            if self.limit(node) is None:
                continue
            share = node.capacity * need / 2
            kv = ex.cpu_kv if node.kind == "cpu" else share - ex.weights
            if not ex.can_allocate(node, ex.weights + kv):
                continue
            r.grace = max(r.grace, ex.cold_start)
            ex.join(ex.create_instance(node, r.model, kv, limit=self.limit(node)), r)
            return True
        return False

    def after_iteration(self, ex, inst: Instance) -> None:
        while inst.requests and inst.used_tokens() > inst.kv_tokens():
            ex.counters["evictions"] += 1
            ex.evict(inst, max(inst.requests, key=Request.deadline))
