"""Per-endpoint indexes that make the stock routing path's cost independent of the fleet size.

Two signals used to scan every serving instance of an endpoint for every request:

* **join-the-shortest-queue by tokens**: the instance with the least remaining work ``w(t) = work - B*k(t)``
  (``k(t)`` = decode iterations of the current fast-mode run completed by ``t``), ties to the first instance in
  the endpoint's serving order;
* **the effective memory utilisation** ``(kv_sum + sum B*k(t)) * sig / cap_sum`` read by the region router and
  the reactive autoscaler.

``EndpointIndex`` keeps, per endpoint:

* an indexed binary min-heap of the serving instances keyed by ``(lb, seq)``: ``lb`` is a lower bound of the
  instance's remaining work over its current segment (``work - B*n`` inside an ``n``-iteration decode run, else
  ``work``, which is then exact) and ``seq`` the instance's position in the serving order. ``jsq(t)`` walks the
  heap from its root and skips every subtree whose key exceeds the best exact work found so far: only instances
  whose lower bound is within reach of the minimum are evaluated exactly. The answer is exactly the linear scan's
  (minimum work, then the smallest ``seq``: the first in serving order);
* incremental sums over the instances inside a decode run of ``B/d0``, ``B*t0/d0``, ``B/dmax``, ``B*t0/dmax``,
  ``B`` and ``B*n`` (``d0`` the run's first and ``dmax`` its longest iteration): ``B*k(t)`` lies in
  ``[B*(t-t0)/dmax - B, B*(t-t0)/d0]``, so ``bounds(t)`` gives an integer interval around the true
  ``sum B*k(t)`` in O(1). A decision that the interval settles (utilisation under a threshold, or inside the
  autoscaler's band) is the exact decision; otherwise the caller computes the exact value (``Endpoint.util_at``).
  The sums are re-centred and rebuilt from scratch every ``2n + 64`` updates (amortised O(1)), and the interval
  is widened by a float-error margin, so rounding can only make it undecided, never wrong.

The simulator keeps the index current: ``touch(inst, t)`` after every event of the instance and after every
request joins it or leaves it (the loop, the arrival path and the policy API call it), ``add`` / ``remove`` when
the instance starts or stops serving. Only the fused arrival path (the stock policy stack) builds indexes.
``PLANNER_ENGINE_INDEX_CHECK=1`` makes every indexed decision also run the old scan and raise on a difference
(used by the tests).
"""

from __future__ import annotations

import cython
from cython.cimports.libc.math import ceil, floor  # C when compiled (math as Python): same values

from simulations.engine.core.entities import Endpoint, Instance, decode_iters_done

if not cython.compiled:  # compiled: C constants from codes.pxd
    from simulations.engine.core.entities import DECODE


class EndpointIndex:
    """JSQ heap and utilisation bounds of one endpoint's serving instances (see the module docstring)."""

    def __init__(self, ep: Endpoint, t: float) -> None:
        self.ep = ep
        self.heap: list = []
        self.next_seq = 0
        self.t_ref = t
        self.r = 0.0
        self.rt = 0.0
        self.q = 0.0
        self.qt = 0.0
        self.b = 0
        self.bn = 0
        self.updates = 0
        self._best = None  # jsq's walk state
        self._best_w = self._best_k = self._best_seq = 0
        for inst in ep.serving:
            self.add(inst, t)

    # -- heap on (ix_lb, ix_seq) ---------------------------------------------------------------------------------
    @cython.locals(a=Instance, b=Instance)
    def _less(self, a, b):
        return a.ix_lb < b.ix_lb or (a.ix_lb == b.ix_lb and a.ix_seq < b.ix_seq)

    @cython.locals(p=cython.Py_ssize_t, parent=cython.Py_ssize_t, inst=Instance, other=Instance, heap=list)
    def _up(self, p):
        heap = self.heap
        inst = heap[p]
        while p > 0:
            parent = (p - 1) >> 1
            other = heap[parent]
            if not self._less(inst, other):
                break
            heap[p] = other
            other.ix_pos = p
            p = parent
        heap[p] = inst
        inst.ix_pos = p

    @cython.locals(p=cython.Py_ssize_t, c=cython.Py_ssize_t, n=cython.Py_ssize_t, inst=Instance,
                   child=Instance, heap=list)
    def _down(self, p):
        heap = self.heap
        n = len(heap)
        inst = heap[p]
        while True:
            c = 2 * p + 1
            if c >= n:
                break
            if c + 1 < n and self._less(heap[c + 1], heap[c]):
                c += 1
            child = heap[c]
            if not self._less(child, inst):
                break
            heap[p] = child
            child.ix_pos = p
            p = c
        heap[p] = inst
        inst.ix_pos = p

    # -- per-instance contribution -------------------------------------------------------------------------------
    @cython.locals(inst=Instance, n=cython.longlong, B=cython.longlong, d0=cython.double, dmax=cython.double,
                   x0=cython.double)
    def _set(self, inst, run):
        """Compute ``inst``'s key and (if ``run``) its run's contribution, and add the contribution."""
        if run:
            n = inst.seg_n
            B = inst.seg_B
            d0 = inst.seg_d0
            dmax = d0 + 2.0 * inst.seg_a * (n - 1)  # the run's last (longest) iteration
            if dmax < d0:  # a negative context coefficient: iterations shorten; swap the bounds' roles
                d0, dmax = dmax, d0
            x0 = inst.seg_t0 - self.t_ref
            inst.ix_lb = inst.work - B * n
            inst.ix_run = True
            inst.ix_r = B / d0
            inst.ix_rt = inst.ix_r * x0
            inst.ix_q = B / dmax
            inst.ix_qt = inst.ix_q * x0
            inst.ix_b = B
            inst.ix_bn = B * n
            self.r += inst.ix_r
            self.rt += inst.ix_rt
            self.q += inst.ix_q
            self.qt += inst.ix_qt
            self.b += B
            self.bn += inst.ix_bn
        else:
            inst.ix_lb = inst.work
            inst.ix_run = False

    @cython.locals(inst=Instance)
    def _unset(self, inst):
        if inst.ix_run:
            self.r -= inst.ix_r
            self.rt -= inst.ix_rt
            self.q -= inst.ix_q
            self.qt -= inst.ix_qt
            self.b -= inst.ix_b
            self.bn -= inst.ix_bn
            inst.ix_run = False

    @cython.locals(inst=Instance)
    def _rebuild(self, t):
        """Re-centre the sums on ``t`` and recompute them from scratch (drops accumulated rounding)."""
        self.t_ref = t
        self.r = self.rt = self.q = self.qt = 0.0
        self.b = self.bn = 0
        self.updates = 0
        for inst in self.heap:
            inst.ix_run = False
            self._set(inst, inst.phase == DECODE and inst.seg_n > 1)

    # -- updates -------------------------------------------------------------------------------------------------
    @cython.locals(inst=Instance)
    def add(self, inst, t):
        """``inst`` starts serving (it is last in the serving order)."""
        inst.ix_seq = self.next_seq
        self.next_seq += 1
        inst.ix_run = False
        self._set(inst, inst.phase == DECODE and inst.seg_n > 1)
        self.heap.append(inst)
        self._up(len(self.heap) - 1)
        self._count(t)

    @cython.locals(inst=Instance, last=Instance, p=cython.Py_ssize_t)
    def remove(self, inst, t):
        """``inst`` stops serving."""
        p = inst.ix_pos
        if p < 0:
            return
        self._unset(inst)
        last = self.heap.pop()
        inst.ix_pos = -1
        if last is not inst:
            self.heap[p] = last
            last.ix_pos = p
            self._up(p)
            self._down(last.ix_pos)
        self._count(t)

    @cython.locals(inst=Instance, p=cython.Py_ssize_t, old=cython.longlong)
    def touch(self, inst, t):
        """``inst``'s work or decode run may have changed: update its key and contribution."""
        p = inst.ix_pos
        if p < 0:
            return
        old = inst.ix_lb
        self._unset(inst)
        self._set(inst, inst.phase == DECODE and inst.seg_n > 1)
        if inst.ix_lb < old:
            self._up(p)
        elif inst.ix_lb > old:
            self._down(p)
        self._count(t)

    def _count(self, t):
        self.updates += 1
        if self.updates > 2 * len(self.heap) + 64:
            self._rebuild(t)

    # -- queries -------------------------------------------------------------------------------------------------
    @cython.locals(x=cython.double, up=cython.double, lo=cython.double, err=cython.double, s_hi=cython.longlong,
                   s_lo=cython.longlong)
    def bounds(self, t):
        """``(lo, hi)``: integers with lo <= sum over serving instances of B*k(t) <= hi."""
        if self.b == 0:
            return 0, 0
        x = t - self.t_ref
        up = self.r * x - self.rt
        lo = self.q * x - self.qt - self.b
        err = 1e-6 * (abs(self.r * x) + abs(self.rt) + abs(self.q * x) + abs(self.qt) + self.b) + 1.0
        s_hi = self.bn
        if up + err < s_hi:
            s_hi = cython.cast(cython.longlong, floor(up + err))
        s_lo = 0
        if lo - err > 0:
            s_lo = cython.cast(cython.longlong, ceil(lo - err))
        if s_lo > s_hi:  # cannot happen with exact sums; be safe
            s_lo = 0
            s_hi = self.bn
        return s_lo, s_hi

    @cython.locals(ep=Endpoint, cap=cython.longlong, kv=cython.longlong, s_lo=cython.longlong,
                   s_hi=cython.longlong)
    def util_bounds(self, t):
        """``(lo, hi)`` around ``ep.util_at(t)``, computed with the same float expression, so monotone."""
        ep = self.ep
        cap = ep.cap_sum
        if not cap:
            return 1.0, 1.0
        kv = ep.kv_sum
        s_lo, s_hi = self.bounds(t)
        return (kv + s_lo) * ep.sig / cap, (kv + s_hi) * ep.sig / cap

    @cython.locals(inst=Instance)
    def jsq(self, t):
        """``(instance, k)``: the serving instance with the least remaining work at ``t`` (first in serving order at
        ties) and the decode iterations of its current run done by ``t``. Exactly the linear scan's choice."""
        if not self.heap:
            return None, 0
        self._best = None
        self._best_w = 0
        self._best_k = 0
        self._best_seq = 0
        self._visit(0, t)
        inst = self._best
        self._best = None
        return inst, self._best_k

    @cython.locals(inst=Instance, w=cython.longlong, k=cython.longlong, e=cython.double, c=cython.Py_ssize_t)
    def _visit(self, p, t):
        """Depth-first walk of the heap from node ``p``, skipping every subtree whose key cannot beat the best."""
        inst = self.heap[p]
        if self._best is not None and (inst.ix_lb > self._best_w
                                       or (inst.ix_lb == self._best_w and inst.ix_seq > self._best_seq)):
            return  # the subtree's keys are >= (lb, seq) > (best work, its seq): none can win
        w = inst.work
        k = 0
        if inst.phase == DECODE and inst.seg_n > 1:
            # at most e/d0 iterations are done by t: if even that leaves more work than the best, skip the exact
            # count (its square root) but still look below this node
            e = t - inst.seg_t0
            k = inst.seg_n
            if inst.seg_a >= 0 and e < (k - 1) * inst.seg_d0:
                k = cython.cast(cython.longlong, e / inst.seg_d0) + 1 if e > 0 else 0  # +1: float rounding of e/d0
            if self._best is None or w - inst.seg_B * k < self._best_w or (
                    w - inst.seg_B * k == self._best_w and inst.ix_seq < self._best_seq):
                k = decode_iters_done(inst, t)
                w -= inst.seg_B * k
            else:
                w = self._best_w + 1  # cannot win
        if self._best is None or w < self._best_w or (w == self._best_w and inst.ix_seq < self._best_seq):
            self._best = inst
            self._best_w = w
            self._best_k = k
            self._best_seq = inst.ix_seq
        c = 2 * p + 1
        if c < len(self.heap):
            self._visit(c, t)
            if c + 1 < len(self.heap):
                self._visit(c + 1, t)


def jsq_scan(serving: list, t: float):
    """The linear scan the index replaces (kept for ``PLANNER_ENGINE_INDEX_CHECK``)."""
    best = None
    best_w = 0
    best_k = 0
    for inst in serving:
        w = inst.work
        k = 0
        if inst.phase == DECODE and inst.seg_n > 1:
            k = decode_iters_done(inst, t)
            w -= inst.seg_B * k
        if best is None or w < best_w:
            best, best_w, best_k = inst, w, k
    return best, best_k
