"""The request window of a streamed run: one continuous simulation whose per-request arrays hold
only the requests in flight (and those not arrived yet of the current chunk).

A streamed run (stream.py) is one ``Simulator`` run chunk by chunk: ``sim.run(until=t1)`` processes every event
before ``t1`` (the next chunk's first instant); then the finished requests (completed or dropped) are folded into
the accumulator and ``extend(sim, chunk, keep)`` keeps only the other rows of every per-request array, renumbered
in order, and appends the next chunk's requests. Request ids are window positions: every id the engine holds is
renumbered (instances' waiting queues, running sets, finish heaps, prefill / swap / eviction lists, endpoint
backlogs, queued cross-region deliveries, the drop log). The renumbering is increasing, so every comparison
between ids stands and heap orders and tie-breaks are those of the unstreamed run; times are never shifted
(absolute simulated seconds throughout), so the arithmetic is the same; a request's network delay is drawn from
its global id (``GlobalDelays``). The loop is the default one (``run(until)`` stops before the first event at or
after ``until``, so arrivals at that instant still come first, as in one run).

**Bound.** After each chunk the window holds the requests in flight plus the next chunk's: memory follows the
number of requests in flight (deep overload queues, deferred batch work), not the horizon; a request that stays in
flight long costs its own row only (about 100 bytes of arrays plus its queue entry), not the rows after it.

**Policies.** Ids may only be renumbered where the engine knows them. A policy that keeps request ids across
events must define ``rebase(sim, remap)`` (``remap[old id]`` = new id, -1 = gone) or the run keeps every row
(exact, memory as an unstreamed run); one that keeps none says ``stream_safe = True``. A policy reading
``observed()`` history declares how far back (``observed_history_s``): those arrivals stay in the window
(``observed()`` then starts at the oldest row kept, finished rows before the history cut are gone).
"""

from __future__ import annotations

import numpy as np

from simulations.engine.core.entities import RELEASED
from simulations.engine.core.state import EV_DELIVER
from simulations.engine.instance.kvcache import FIN_RID
from simulations.engine.scenario.config import TIER_INDEX

# per-request arrays of the Simulator: (attribute, dtype, initial value for a new request or None = workload column)
REQUEST_ARRAYS = (
    ("req_arr", np.float64, "arrival_s"), ("req_inp", np.int64, "input_tokens"),
    ("req_out", np.int64, "output_tokens"), ("req_tier", np.int8, "tier"), ("req_model", np.int32, "model"),
    ("req_region", np.int32, "region"),
)
STATE_ARRAYS = (
    ("gen", np.int32, 0), ("join", np.int32, 0), ("fin", np.int32, 0), ("t_first", np.float64, np.nan),
    ("t_done", np.float64, np.nan), ("t_admit", np.float64, np.nan), ("served_ep", np.int32, -1),
    ("served_inst", np.int32, -1), ("preempted", np.int32, 0), ("tok_t", np.float64, np.nan),
    ("tbt_max", np.float64, 0.0),
)
OPTIONAL_COLUMNS = ("deadline_s", "predicted_output_tokens", "ttft_slo_s", "tpot_slo_s", "class_id")


class GlobalDelays:
    """The run's ``NetworkDelays`` read by global request id (``gid[rid]``: the request's position in the whole
    replay), so a request's delay does not depend on where the window put it."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.gid = np.zeros(0, dtype=np.int64)

    def __getitem__(self, rid: int) -> float:
        return self.inner[int(self.gid[rid])]


POLICY_SLOTS = ("autoscaler", "scheduler", "region_router", "endpoint_router", "instance_router")


def stream_safe(sim) -> bool:
    """Whether the run may drop finished requests' rows: every policy holds no request id across events (or
    renumbers its own by ``rebase``)."""
    for slot in POLICY_SLOTS:
        policy = getattr(sim, slot)
        if hasattr(policy, "rebase"):
            continue
        if not getattr(policy, "stream_safe", False):
            return False
    return True


def history_s(sim) -> float:
    """The longest ``observed()`` history (seconds before now) a policy declares it reads (``observed_history_s``)."""
    return max(float(getattr(getattr(sim, slot), "observed_history_s", 0.0) or 0.0) for slot in POLICY_SLOTS)


def prepare(sim) -> None:
    """Before the first ``run``: global-id network delays, later chunks announced (ticks and samples go on)."""
    sim.state.net_delay = GlobalDelays(sim.state.net_delay)
    sim.state.net_delay.gid = np.arange(int(sim.state.n), dtype=np.int64)
    sim.next_gid = int(sim.state.n)
    sim.rows_dropped = 0
    sim.more_arrivals = True


def finished(sim) -> np.ndarray:
    """Per arrived window row: finished (completed or dropped)."""
    k = int(sim.state.n_arrived)
    fin = ~np.isnan(np.asarray(sim.state.t_done)[:k])
    if sim.state.dropped:
        ids = np.fromiter(sim.state.dropped.keys(), dtype=np.int64, count=len(sim.state.dropped))
        fin[ids[ids < k]] = True
    return fin


def keep_mask(sim) -> np.ndarray:
    """Window rows to keep now: requests not finished (or not arrived yet), and the arrivals a policy still reads
    through ``observed()`` (``history_s``)."""
    n, k = int(sim.state.n), int(sim.state.n_arrived)
    keep = np.ones(n, dtype=bool)
    keep[:k] = ~finished(sim)
    h = history_s(sim)
    if h > 0:
        cut = int(np.searchsorted(np.asarray(sim.state.req_arr)[:k], sim.state.now - h, side="left"))
        keep[cut:k] = True
    return keep


def in_flight(sim) -> int:
    """Requests arrived and not finished (completed or dropped)."""
    return int((~finished(sim)).sum())


def prepare_chunk(sim, chunk):
    """A chunk's workload as the run needs it: remapped to the fleet's names, context limits applied (counted into
    ``sim.context_limits``), the scenario's output-length predictor applied (drawn per chunk: with a noisy
    predictor the draws differ from an unstreamed run's)."""
    from dataclasses import replace

    from simulations.engine.workload.limits import apply_context_limits

    sc = sim.scenario
    if sc.policy.predictor:
        from simulations.engine.workload.predictors import predict_output_lengths

        chunk = replace(chunk, predicted_output_tokens=predict_output_lengths(
            chunk, sc.policy.predictor, sc.policy.predictor_params, sc.engine.seed))
    chunk = chunk.remap(sim.model_names, sim.region_names)
    chunk, info = apply_context_limits(sim.fleet, chunk, sim.model_names, sc.engine.over_context)
    total = sim.context_limits
    for k, v in info.items():
        if isinstance(v, int) and isinstance(total.get(k), int):
            total[k] += v
    return chunk


def extend(sim, chunk, keep: np.ndarray | None = None) -> None:
    """Keep the window rows ``keep`` (None: all; the others are finished and already folded), renumbered in
    order, and append ``chunk`` (a Workload from ``prepare_chunk``, arrivals at or after the run's stop time)."""
    from simulations.engine.workload.workload import Workload

    n = int(sim.state.n)
    idx = np.flatnonzero(keep) if keep is not None and not keep.all() else None
    sel = idx if idx is not None else slice(0, n)
    n_kept = int(idx.size) if idx is not None else n
    w = sim.workload
    cols = {}
    for name in ("arrival_s", "input_tokens", "output_tokens", "tier", "model", "region"):
        cols[name] = np.concatenate([getattr(w, name)[sel], getattr(chunk, name)])
    for name in OPTIONAL_COLUMNS:
        a, b = getattr(w, name), getattr(chunk, name)
        if a is None and b is None:
            cols[name] = None
            continue
        fill = np.nan if name in ("deadline_s", "ttft_slo_s", "tpot_slo_s") else -1
        dtype = (a if a is not None else b).dtype
        a = a[sel] if a is not None else np.full(n_kept, fill, dtype=dtype)
        b = b if b is not None else np.full(len(chunk), fill, dtype=dtype)
        cols[name] = np.concatenate([a, b])
    nw = Workload(model_names=w.model_names, region_names=w.region_names, **cols)
    m = len(nw)
    sim.workload = nw
    for attr, dtype, col in REQUEST_ARRAYS:
        setattr(sim.state, attr, memoryview(np.ascontiguousarray(getattr(nw, col), dtype=dtype)))
    prio = np.asarray(sim.state.req_prio)[sel]  # may have been escalated by a queue manager
    sim.state.req_prio = memoryview(np.concatenate([prio, (chunk.tier == TIER_INDEX["NIW"]).astype(np.int8)]))
    for attr, dtype, fill in STATE_ARRAYS:
        a = np.empty(m, dtype=dtype)
        a[:n_kept] = np.asarray(getattr(sim.state, attr))[sel]
        a[n_kept:] = fill
        setattr(sim.state, attr, memoryview(a))
    delays = sim.state.net_delay
    delays.gid = np.concatenate([delays.gid[sel], np.arange(sim.next_gid, sim.next_gid + len(chunk), dtype=np.int64)])
    sim.next_gid += len(chunk)
    sim.state.req_pred_out = nw.predicted_output_tokens
    sim.state.n = m
    if idx is not None:
        remap = np.full(n, -1, dtype=np.int64)
        remap[idx] = np.arange(n_kept, dtype=np.int64)
        sim.state.n_arrived = int(np.count_nonzero(keep[:int(sim.state.n_arrived)]))
        sim.rows_dropped += n - n_kept
        _remap_ids(sim, remap)
    sim._bind_views()


def _remap_ids(sim, remap: np.ndarray) -> None:
    """Every request id the engine holds, renumbered (``remap[old]``; -1: a finished request's row, gone: only
    stale entries can name it). The map is increasing on the kept rows, so every comparison between ids stands."""
    new = remap.tolist()
    for inst in sim.instances:
        if inst.state == RELEASED:
            inst.runs.clear()  # read only for its running requests
            if not (inst.waiting or inst.running or inst.fin_heap or inst.swapped or inst.pending):
                continue
        if inst.waiting:
            inst.waiting[:] = [(k, s, new[r]) for k, s, r in inst.waiting]  # same positions: still a heap / sorted
        if inst.running:
            items = [(new[r], v) for r, v in inst.running.items()]  # same insertion order
            inst.running.clear()
            inst.running.update(items)
        if inst.fin_heap:
            fh = inst.fin_heap
            # one int per entry, fin * FIN_RID + rid (kvcache.py); entries of finished requests are stale: gone
            fh.replace([e - r + new[r] for e in fh.values() for r in (e % FIN_RID,) if new[r] >= 0])
        for entry in inst.prefilling:  # shared with a chunked-prefill step's batch: renumbered in place
            entry[0] = new[entry[0]]
        if inst.batch and not isinstance(inst.batch[0], tuple):
            inst.batch[:] = [new[r] for r in inst.batch]
        if inst.swapped:
            inst.swapped[:] = [new[r] for r in inst.swapped]
        if inst.pending:
            inst.pending[:] = [(new[r], s) for r, s in inst.pending]
    for ep in sim.endpoints:
        if ep.backlog:
            ep.backlog[:] = [new[r] for r in ep.backlog]
    heap = sim.state.heap
    for j, ev in enumerate(heap):
        if ev[2] == EV_DELIVER:  # (t, seq, kind, rid, endpoint): ordered by (t, seq), the id is never compared
            heap[j] = (ev[0], ev[1], ev[2], new[ev[3]], ev[4])
    sim.state.dropped = {new[r]: why for r, why in sim.state.dropped.items() if new[r] >= 0}
    sim.state.cold_started = {new[r] for r in sim.state.cold_started if new[r] >= 0}
    if sim.state._done_buf:
        sim.state._done_buf = [new[r] for r in sim.state._done_buf if new[r] >= 0]
    for slot in POLICY_SLOTS:
        policy = getattr(sim, slot)
        if hasattr(policy, "rebase"):
            policy.rebase(sim.policy_view, remap)
