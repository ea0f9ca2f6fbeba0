"""Prefill/decode disaggregation: a disaggregated endpoint is a prefill pool and a decode pool, and a request's
KV cache moves from its prefill instance to a decode instance over the link between them (Splitwise, ISCA'24;
DistServe, OSDI'24; NVIDIA Dynamo).

The simulator holds one ``Disaggregation`` (``sim._pd``; None when no endpoint is disaggregated) as an owned
part. The two pools are ordinary endpoints (``pool`` "prefill" / "decode", same region and model): arrivals are
routed to the prefill pool only (the decode pool is not a routing candidate), whose instance router balances
queued prompt tokens (join-the-shortest-queue by tokens: a prefill instance's remaining work is its queued and
running prompt tokens, since a request's decode is never its work). The decode pool's instances are chosen here,
by KV headroom. What happens to one request:

1. prefill on a prefill instance (its batching engine, unchanged); the first token is produced there;
2. hand-off (``hand_off``, called by the KV manager at the first token): the request leaves the prefill batch but
   its KV (prompt + tokens generated before) stays held on the prefill instance; the decode instance with the
   most free KV (capacity - KV in use - KV reserved) reserves the same tokens; the transfer takes
   ``latency + tokens x kv_bytes_per_token / bandwidth`` (``KVLinkConfig``);
3. landing (``land``, an ``EV_KV`` event of the loop): both reservations end; the request joins the decode
   instance as a resumed request (the KV manager's swap-in path at zero cost: its KV is already there), before
   any waiting request, as soon as its KV fits above the watermark; it decodes there to the end.

Both sides hold the request's memory during the transfer, so a slow link costs prefill admissions and decode
room. A request of one output token finishes at its prefill and moves nothing. Metrics per request: the
transfer time and the decode-side wait (landing to joining the decode batch); the prefill-side wait is the
queueing time every run reports (arrival to admission).

Splitwise's mixed pool (``mixed_pool``, optional per endpoint; Splitwise sec. 4.3, splitwise-sim's
``MixedPoolScheduler``): instances move from either pool into a mixed pool that serves both kinds of work while
the other pool is overloaded, and return to their pool when found idle (no request queued, running, in transfer)
at the next overload decision.

- Prefill overload (``route``, at routing): the prefill instance the router chose has a queue and its queued
  tokens plus the request's exceed ``prefill_queue_tokens``. The request goes to the decode-pool member of the
  mixed pool with the fewest queued tokens unless that one is overloaded by the same test, else the decode
  instance with the most free KV joins the mixed pool and takes it (none serving: the prefill instance keeps
  it). A prompt on a decode instance is prefilled and decoded there: its KV is already where it decodes.
- Decode overload (``hand_off``): no decode instance has free KV for the whole request (prompt and output
  tokens): its prefill instance joins the mixed pool and decodes it in place (no transfer).

Link classes (per-GPU figures; an instance pair moves KV over min(GPUs of the two instances) links in parallel,
each GPU holding its tensor-parallel shard of the cache):

- ``nvlink``: both pools in one node; NVLink per direction = half the datasheet's bidirectional figure of the
  slower GPU (A100: 600 GB/s -> 300; H100 SXM: 900 -> 450; planner/catalogue/data/datasheets.json ``link_gbs``).
- ``infiniband``: NDR 400 Gb/s per GPU = 50 GB/s (NVIDIA ConnectX-7; the DGX H100 has one per GPU, as the
  Splitwise paper's H100 machines, sec. 5.1); latency 5 us per transfer.
- ``infiniband-hdr``: HDR 200 Gb/s per GPU = 25 GB/s (ConnectX-6, DGX A100); latency 5 us.
- ``ethernet``: 100 GbE per node = 12.5 GB/s shared by the node's GPUs (not per GPU); latency 50 us (TCP).

``bandwidth_gb_s`` / ``latency_s`` in a scenario override the class's figures (the instance-pair bandwidth).

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

import cython
import numpy as np

from simulations.engine.core.entities import Endpoint, Instance, decode_iters_done

if not cython.compiled:  # compiled: C constants from codes.pxd
    from simulations.engine.core.entities import DECODE, DRAINING, IDLE, SERVING
from simulations.engine.core.state import EV_KV

# class -> (GB/s per GPU or per node, latency s, per_gpu)
LINK_CLASSES = {
    "nvlink": (None, 2e-6, True),  # bandwidth from the GPU datasheet (link_gbs / 2 per direction)
    "infiniband": (50.0, 5e-6, True),
    "infiniband-hdr": (25.0, 5e-6, True),
    "ethernet": (12.5, 50e-6, False),
}


def link_bandwidth(link_class: str, prefill_spec, decode_spec, nvlink_gbs=None) -> float:
    """Instance-pair bandwidth (GB/s) of a link class for the two pools' deployments. ``nvlink_gbs``: the slower
    GPU's datasheet NVLink figure (bidirectional GB/s), required for ``nvlink``."""
    per, _lat, per_gpu = LINK_CLASSES[link_class]
    gpus = min(prefill_spec.gpus_per_instance, decode_spec.gpus_per_instance)
    if per is None:
        if not nvlink_gbs:
            raise ValueError("nvlink needs the GPUs' NVLink bandwidth")
        per = nvlink_gbs / 2.0
    return per * gpus if per_gpu else per


def _sync(inst: Instance):
    """An instance's KV in use after a reservation changed (the KV manager's ``_sync``, which compiled code keeps
    to itself): the running batch's context + reserved tokens; inside a decode run, as at the run's start."""
    kv = inst.S + inst.B * inst.it + inst.kv_prefill
    if inst.state == SERVING:
        inst.endpoint.kv_sum += kv - inst.kv
    inst.kv = kv


def _touch(inst: Instance, t: float):
    ix = inst.endpoint.ix
    if ix is not None and inst.state == SERVING:
        ix.touch(inst, t)


class Disaggregation:
    """The disaggregated endpoints of one run: prefill -> decode hand-off, KV transfers and their metrics."""

    def __init__(self, sim) -> None:
        self.sim = sim
        by_key = {(ep.region_idx, ep.model_idx): ep for ep in sim.endpoints if ep.pool == "decode"}
        self.decode_of = {}  # prefill endpoint id -> (decode endpoint, link, bytes per token)
        self.mixed_of = {}  # prefill endpoint id -> MixedPoolConfig (Splitwise's mixed pool, when asked for)
        self.members = {}  # prefill endpoint id -> the instances now in its mixed pool (both pools'), in join order
        self.mixed_prompts = 0  # prompts a decode instance of the mixed pool took
        self.mixed_decodes = 0  # decodes a prefill instance of the mixed pool kept
        self.mixed_joins = 0  # moves of an instance into a mixed pool
        for ep in sim.endpoints:
            if ep.pool == "prefill":
                dec = by_key.get((ep.region_idx, ep.model_idx))
                if dec is None or ep.config.kv_link is None:
                    raise ValueError(f"endpoint {ep.name}: a prefill pool needs a decode pool and a KV link")
                self.decode_of[ep.eid] = (dec, ep.config.kv_link)
                if ep.config.mixed_pool is not None:
                    self.mixed_of[ep.eid] = ep.config.mixed_pool
                    self.members[ep.eid] = []
                # a request the decode pool could never hold is refused at routing, as any over-long request
                if dec.adm < ep.adm:
                    ep.adm = dec.adm
        self._any_mixed = bool(self.mixed_of)
        n = sim.state.n
        self.t_xfer = np.full(n, np.nan)  # transfer duration
        self.t_land = np.full(n, np.nan)  # landing time on the decode instance
        self.t_join = np.full(n, np.nan)  # joined the decode batch
        self._xfer, self._land, self._joinv = memoryview(self.t_xfer), memoryview(self.t_land), memoryview(self.t_join)
        self._inp, self._out, self._gen = sim.state.req_inp, sim.state.req_out, sim.state.gen
        self._served_inst = sim.state.served_inst
        self.xfer_tokens = 0
        self.xfer_bytes = 0.0
        self.inflight = {}  # rid -> (src instance, dst instance or None, tokens)
        self.parked = {}  # decode endpoint id -> [rid] waiting for a serving decode instance
        if sim.instance_engine._mig_down is None:
            sim.instance_engine._mig_down = {}  # the swap-in path's "KV already here" marks (kvcache._swap_in)
        self._mig_down = sim.instance_engine._mig_down
        self._push = sim.state.push
        self._boundary = sim.instance_engine._boundary

    def beyond_decode(self, inst, need) -> bool:
        """Whether ``need`` tokens exceed what the decode pool of prefill instance ``inst`` can ever hold."""
        pair = self.decode_of.get(inst.endpoint.eid)
        return pair is not None and need >= pair[0].adm

    # ------------------------------------------------------------------ hand-off
    @cython.locals(rid=cython.longlong, inp=cython.longlong, out=cython.longlong, gen=cython.longlong,
                   tokens=cython.longlong)
    def hand_off(self, inst: Instance, rid, t: float):
        """Request ``rid`` has its first token on prefill instance ``inst`` at ``t``: start its KV transfer.
        False if ``inst`` is not a prefill instance (the request then decodes where it is)."""
        pair = self.decode_of.get(inst.endpoint.eid)
        if pair is None:
            return False
        inp = self._inp[rid]
        out = self._out[rid]
        gen = self._gen[rid]
        dec = pair[0]
        found = self._choose(dec, t)
        if self._any_mixed and inst.endpoint.eid in self.mixed_of and (
                found is None or self._free(found, t) < inp + out):
            self._keep(inst, t)  # the decode pool is overloaded: the prefill instance decodes it (mixed pool)
            return False
        tokens = inp + gen
        inst.S -= inst.running.pop(rid)
        inst.B -= 1
        inst.res_tok -= inp + out
        inst.work -= out - gen  # its remaining decode is not this instance's work
        inst.kv_prefill += tokens  # held until the transfer completes
        self._gen[rid] = gen + 1  # the first token is out
        _sync(inst)
        if found is None:  # no decode instance serves yet: the request waits here, its KV held
            self.parked.setdefault(dec.eid, []).append(rid)
            self.inflight[rid] = (inst, None, tokens)
            return True
        self._send(rid, inst, found, tokens, pair[1], t)
        return True

    @cython.locals(d=Instance, best=Instance, free=cython.longlong, best_free=cython.longlong,
                   found=cython.bint)
    def _choose(self, dec: Endpoint, t: float):
        """The serving decode instance with the most free KV at ``t`` (capacity - KV in use, with a decode run's
        progress, and reserved; the first at ties)."""
        best = None
        best_free = 0
        found = False
        for d in dec.serving:
            free = self._free(d, t)
            if not found or free > best_free:
                best, best_free, found = d, free, True
        return best if found else None

    @cython.locals(free=cython.longlong)
    def _free(self, d: Instance, t: float):
        """Free KV tokens of instance ``d`` at ``t``: capacity - KV in use (with a decode run's progress) - reserved."""
        free = d.cap - d.kv
        if d.phase == DECODE and d.seg_n > 1:
            free -= d.seg_B * decode_iters_done(d, t)
        return free

    # ------------------------------------------------------------------ mixed pool
    @cython.locals(need=cython.longlong, thr=cython.longlong, m=Instance, best=Instance)
    def route(self, inst: Instance, rid, need, t: float):
        """The instance that takes request ``rid`` (``need`` tokens) the router sent to prefill instance ``inst``:
        ``inst``, or a decode instance of the mixed pool when the prefill pool is overloaded."""
        if not self._any_mixed:
            return inst
        cfg = self.mixed_of.get(inst.endpoint.eid)
        if cfg is None:
            return inst
        thr = cfg.prefill_queue_tokens
        if not inst.waiting or inst.q_tok + need <= thr:
            return inst
        members = self._members(inst.endpoint.eid)
        best = None
        for m in members:
            if m.endpoint.pool == "decode" and (best is None or m.q_tok < best.q_tok):
                best = m
        if best is not None and best.waiting and best.q_tok + need > thr:
            best = None
        if best is None:
            best = self._choose_outside(self.decode_of[inst.endpoint.eid][0], members, t)
            if best is None:  # no decode instance serves: the prefill instance keeps it
                return inst
            members.append(best)
            self.mixed_joins += 1
        self.mixed_prompts += 1
        return best

    @cython.locals(d=Instance, best=Instance, free=cython.longlong, best_free=cython.longlong)
    def _choose_outside(self, dec: Endpoint, members: list, t: float):
        """The serving decode instance outside the mixed pool with the most free KV (the first at ties), or None."""
        best = None
        best_free = 0
        for d in dec.serving:
            if d in members:
                continue
            free = self._free(d, t)
            if best is None or free > best_free:
                best, best_free = d, free
        return best

    def _members(self, eid) -> list:
        """The mixed pool of prefill endpoint ``eid`` after the idle (or released) members return to their pool."""
        members = self.members[eid]
        if members:
            kept = [m for m in members if m.state == SERVING and (m.waiting or m.running or m.swapped or m.kv_prefill)]
            if len(kept) != len(members):
                members[:] = kept
        return members

    def _keep(self, inst: Instance, t: float):
        """Prefill instance ``inst`` decodes the request it just prefilled: it joins the mixed pool if not in it."""
        members = self._members(inst.endpoint.eid)
        if inst not in members:
            members.append(inst)
            self.mixed_joins += 1
        self.mixed_decodes += 1

    @cython.locals(dur=cython.double)
    def _send(self, rid, src: Instance, dst: Instance, tokens, link, t: float):
        dst.kv_prefill += tokens  # the decode side reserves the request's KV for the transfer
        _sync(dst)
        if dst.phase == DECODE and dst.seg_n > 1 and dst.kv + dst.seg_B * dst.seg_n > dst.cap:
            self._boundary(dst, t)  # the run would outgrow the KV left: end it where reference mode re-checks
        _touch(dst, t)
        dur = link.transfer_s(tokens, src.spec.kv_bytes_per_token)
        self._xfer[rid] = dur
        self.xfer_tokens += tokens
        self.xfer_bytes += tokens * src.spec.kv_bytes_per_token
        self.inflight[rid] = (src, dst, tokens)
        self._push(t + dur, EV_KV, rid, dst.iid)

    # ------------------------------------------------------------------ landing
    @cython.locals(rid=cython.longlong, src=Instance, dst=Instance, tokens=cython.longlong)
    def land(self, rid, t: float):
        """The KV of ``rid`` reached its decode instance at ``t``: free both reservations, resume it there."""
        entry = self.inflight.pop(rid)
        src = entry[0]
        dst = entry[1]
        tokens = entry[2]
        self._release(src, tokens, t)
        self._release(dst, tokens, t)
        if dst.state != SERVING and dst.state != DRAINING:  # released meanwhile (rare): the best one serving
            found = self._choose(dst.endpoint, t)
            if found is None:  # none: the source holds the KV again until a decode instance is ready
                src.kv_prefill += tokens
                _sync(src)
                self.parked.setdefault(dst.endpoint.eid, []).append(rid)
                self.inflight[rid] = (src, None, tokens)
                return
            dst = found
        self._land[rid] = t
        self._served_inst[rid] = dst.iid
        dst.swapped.append(rid)
        dst.work += self._out[rid] - self._gen[rid]
        self._mig_down[rid] = 0.0
        self._boundary(dst, t)
        _touch(dst, t)

    def _release(self, inst: Instance, tokens, t: float):
        inst.kv_prefill -= tokens
        _sync(inst)
        if inst.phase == IDLE and inst.waiting:
            self._boundary(inst, t)  # requests held back by the reservation may now be admitted
        _touch(inst, t)

    @cython.locals(rid=cython.longlong)
    def joined(self, rid, t: float):
        """Called by the KV manager when a landed request joins its decode instance's batch."""
        if self._joinv[rid] != self._joinv[rid]:
            self._joinv[rid] = t

    def on_ready(self, inst, t: float) -> None:
        """A decode instance became ready: start the transfers of the requests parked for one."""
        parked = self.parked.pop(inst.endpoint.eid, None)
        if not parked:
            return
        for rid in parked:
            src, _none, tokens = self.inflight.pop(rid)
            self._send(rid, src, self._choose(inst.endpoint, t), tokens, self.decode_of[src.endpoint.eid][1], t)

    # ------------------------------------------------------------------ metrics
    def summary(self, done) -> dict:
        """Transfer time, decode-side wait and what moved, over the completed requests that moved KV."""
        moved = done & ~np.isnan(self.t_xfer)
        wait = self.t_join - self.t_land

        def pcts(x):
            if not len(x):
                return {"p50": None, "p90": None, "p99": None, "mean": None}
            q = np.percentile(x, [50, 90, 99])
            return {"p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2]), "mean": float(x.mean())}

        pools = {}
        for ep in self.sim.endpoints:
            if ep.eid in self.decode_of:
                dec, link = self.decode_of[ep.eid]
                pools[ep.name] = {"decode_pool": dec.name, "link": {"class": link.link_class,
                                  "bandwidth_gb_s": link.bandwidth_gb_s, "latency_s": link.latency_s}}
        out = {"transfers": int(moved.sum()), "kv_tokens_moved": int(self.xfer_tokens),
               "kv_gb_moved": self.xfer_bytes / 1e9, "transfer_s": pcts(self.t_xfer[moved]),
               "decode_wait_s": pcts(wait[moved & ~np.isnan(wait)]), "pools": pools}
        if self._any_mixed:  # only then: runs without the option keep their summaries (and digests)
            out["mixed_pool"] = {"prompts_on_decode_instances": self.mixed_prompts,
                                 "decodes_on_prefill_instances": self.mixed_decodes,
                                 "instance_moves": self.mixed_joins,
                                 "prefill_queue_tokens": {self._name(e): c.prefill_queue_tokens
                                                          for e, c in self.mixed_of.items()}}
        return out

    def _name(self, eid) -> str:
        for ep in self.sim.endpoints:
            if ep.eid == eid:
                return ep.name
        return str(eid)
