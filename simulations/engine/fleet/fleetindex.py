# cython: boundscheck=False, wraparound=False, initializedcheck=False
"""Per-endpoint indexes that make the stock routing path's cost independent of the fleet size.

Two signals used to scan every serving instance of an endpoint for every request:

* **join-the-shortest-queue by tokens**: the instance with the least remaining work ``w(t) = work - B*k(t)``
  (``k(t)`` = decode iterations of the current fast-mode run completed by ``t``), ties to the first instance in
  the endpoint's serving order;
* **the effective memory utilisation** ``(kv_sum + sum B*k(t)) * sig / cap_sum`` read by the region router and
  the reactive autoscaler.

``EndpointIndex`` keeps, per endpoint:

* an indexed binary min-heap of the serving instances keyed by ``(lb, seq)``: ``lb`` is a lower bound of the
  instance's remaining work that holds until a time ``h`` (``work``, exact, outside a decode run; inside an
  ``n``-iteration run ``work - B*n`` for the whole run, or a tighter ``tau`` until the end of the ``m``-th iteration,
  ``m = (work - tau) // B``: the work cannot fall under ``tau`` before the next iteration ends) and ``seq`` the
  instance's position in the serving order. ``tau`` is a few tokens above the last answer's work ``w*``, so an
  instance in a long run is not evaluated again until its work can reach the minimum; a second heap on ``h``
  re-keys the bounds that expire before a query. ``jsq(t)`` walks the
  heap from its root and skips every subtree whose key exceeds the best exact work found so far: only instances
  whose lower bound is within reach of the minimum are evaluated exactly, and those that lose are re-keyed
  against the new answer. The answer is exactly the linear scan's (minimum work, then the smallest ``seq``: the
  first in serving order);
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

from array import array

import cython
from cython.cimports.libc.math import ceil, floor  # C when compiled (math as Python): same values

from simulations.engine.core.entities import Endpoint, Instance, decode_iters_done

# the decode-run keys are set this many tokens above the last answer's work: a key just above it (1) falls under
# the minimum as soon as the minimum rises, and each re-key costs more than an exact evaluation
_MARGIN = 5

if not cython.compiled:  # compiled: C constants from codes.pxd
    from simulations.engine.core.entities import DECODE


class EndpointIndex:
    """JSQ heap and utilisation bounds of one endpoint's serving instances (see the module docstring).

    Each indexed instance has a slot (``Instance.ix_pos``); per slot, C arrays (typed memoryviews over ``array``
    when compiled, the arrays themselves as Python) hold its key, serving-order ``seq``, heap position, the time its
    key expires and its position in the expiry heap, so the heaps move integers, not objects."""

    def __init__(self, ep: Endpoint, t: float) -> None:
        self.ep = ep
        self.next_seq = 0
        self.t_ref = t
        self.r = 0.0
        self.rt = 0.0
        self.q = 0.0
        self.qt = 0.0
        self.b = 0
        self.bn = 0
        self.updates = 0
        self.insts: list = []  # slot -> Instance (None: free)
        self.free: list = []  # free slots
        self.cap = 0
        self.n = 0  # instances in the heap (hs[0:n]: slots)
        self.en = 0  # keys that expire (es[0:en]: slots, a binary min-heap on h)
        self.ns = 0  # decode-run instances the last walk evaluated (seen[0:ns])
        self.g_on = False  # the last answer's work: what the decode-run keys are set above
        self.g_w = 0
        self._best = -1  # jsq's walk state (a slot)
        self._best_w = self._best_k = self._best_seq = 0
        self.a_lb = self.a_seq = self.a_pos = self.a_h = self.a_epos = self.a_hs = self.a_es = self.a_seen = None
        self._grow(16)
        for inst in ep.serving:
            self.add(inst, t)

    def _grow(self, want):
        """Room for ``want`` slots (every array doubled, contents kept)."""
        new = self.cap * 2 if self.cap else 16
        while new < want:
            new *= 2
        self.a_lb = _grown(self.a_lb, "q", new)
        self.a_seq = _grown(self.a_seq, "q", new)
        self.a_pos = _grown(self.a_pos, "q", new)
        self.a_h = _grown(self.a_h, "d", new)
        self.a_epos = _grown(self.a_epos, "q", new)
        self.a_hs = _grown(self.a_hs, "q", new)
        self.a_es = _grown(self.a_es, "q", new)
        self.a_seen = _grown(self.a_seen, "q", new)
        self.lb = self.a_lb  # compiled: memoryviews on the arrays
        self.seq = self.a_seq
        self.pos = self.a_pos
        self.h = self.a_h
        self.epos = self.a_epos
        self.hs = self.a_hs
        self.es = self.a_es
        self.seen = self.a_seen
        self.cap = new

    @property
    def heap(self) -> list:
        """The indexed instances in heap order (for inspection)."""
        return [self.insts[self.hs[p]] for p in range(self.n)]

    # -- heap of slots on (lb, seq) ------------------------------------------------------------------------------
    @cython.locals(p=cython.Py_ssize_t, parent=cython.Py_ssize_t, s=cython.Py_ssize_t, o=cython.Py_ssize_t,
                   ks=cython.longlong, qs=cython.longlong, ko=cython.longlong)
    def _up(self, p):
        s = self.hs[p]
        ks = self.lb[s]
        qs = self.seq[s]
        while p > 0:
            parent = (p - 1) >> 1
            o = self.hs[parent]
            ko = self.lb[o]
            if not (ks < ko or (ks == ko and qs < self.seq[o])):
                break
            self.hs[p] = o
            self.pos[o] = p
            p = parent
        self.hs[p] = s
        self.pos[s] = p

    @cython.locals(p=cython.Py_ssize_t, c=cython.Py_ssize_t, n=cython.Py_ssize_t, s=cython.Py_ssize_t,
                   o=cython.Py_ssize_t, o2=cython.Py_ssize_t, ks=cython.longlong, qs=cython.longlong,
                   ko=cython.longlong, k2=cython.longlong)
    def _down(self, p):
        n = self.n
        s = self.hs[p]
        ks = self.lb[s]
        qs = self.seq[s]
        while True:
            c = 2 * p + 1
            if c >= n:
                break
            o = self.hs[c]
            ko = self.lb[o]
            if c + 1 < n:
                o2 = self.hs[c + 1]
                k2 = self.lb[o2]
                if k2 < ko or (k2 == ko and self.seq[o2] < self.seq[o]):
                    c += 1
                    o = o2
                    ko = k2
            if not (ko < ks or (ko == ks and self.seq[o] < qs)):
                break
            self.hs[p] = o
            self.pos[o] = p
            p = c
        self.hs[p] = s
        self.pos[s] = p

    # -- per-instance contribution -------------------------------------------------------------------------------
    @cython.locals(inst=Instance, n=cython.longlong, B=cython.longlong, d0=cython.double, dmax=cython.double,
                   x0=cython.double)
    def _set(self, inst, run):
        """Compute (if ``run``) ``inst``'s decode run's contribution to the sums, and add it."""
        if run:
            n = inst.seg_n
            B = inst.seg_B
            d0 = inst.seg_d0
            dmax = d0 + 2.0 * inst.seg_a * (n - 1)  # the run's last (longest) iteration
            if dmax < d0:  # a negative context coefficient: iterations shorten; swap the bounds' roles
                d0, dmax = dmax, d0
            x0 = inst.seg_t0 - self.t_ref
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

    @cython.locals(inst=Instance, p=cython.Py_ssize_t)
    def _rebuild(self, t):
        """Re-centre the sums on ``t`` and recompute them from scratch (drops accumulated rounding)."""
        self.t_ref = t
        self.r = self.rt = self.q = self.qt = 0.0
        self.b = self.bn = 0
        self.updates = 0
        for p in range(self.n):
            inst = self.insts[self.hs[p]]
            inst.ix_run = False
            self._set(inst, inst.phase == DECODE and inst.seg_n > 1)

    # -- keys ----------------------------------------------------------------------------------------------------
    @cython.locals(s=cython.Py_ssize_t, inst=Instance, B=cython.longlong, lb=cython.longlong, tau=cython.longlong,
                   m=cython.longlong, h=cython.double)
    def _key(self, s, inst, t):
        """Set slot ``s``'s key (a lower bound of its instance's remaining work) and the time until which it holds."""
        h = 1e300
        if inst.phase == DECODE and inst.seg_n > 1:
            B = inst.seg_B
            lb = inst.work - B * inst.seg_n  # at the run's end: holds all run long
            if self.g_on:
                tau = self.g_w + _MARGIN  # (tau, seq) > the last answer, and still above it after a small rise
                if lb < tau <= inst.work:
                    # the work stays >= tau while at most m = (work - tau) // B < n iterations are done: until the
                    # m-th iteration ends (a whole iteration before the (m+1)-th: float rounding cannot matter)
                    m = (inst.work - tau) // B
                    h = inst.seg_t0 + m * inst.seg_d0 + inst.seg_a * m * (m - 1)
                    if h >= t and inst.seg_d0 + 2.0 * inst.seg_a * m > 1e-9 * (abs(h) + 1.0):
                        lb = tau
                    else:
                        h = 1e300
        else:
            lb = inst.work
        self.lb[s] = lb
        if h < 1e300 or self.epos[s] >= 0:
            _expire_at(self, s, h)
        return 0

    @cython.locals(s=cython.Py_ssize_t, inst=Instance, old=cython.longlong)
    def _rekey(self, s, inst, t):
        """Recompute slot ``s``'s key and restore the heap order."""
        old = self.lb[s]
        self._key(s, inst, t)
        if self.lb[s] < old:
            self._up(self.pos[s])
        elif self.lb[s] > old:
            self._down(self.pos[s])
        return 0

    # -- updates -------------------------------------------------------------------------------------------------
    @cython.locals(inst=Instance, s=cython.Py_ssize_t, p=cython.Py_ssize_t)
    def add(self, inst, t):
        """``inst`` starts serving (it is last in the serving order)."""
        if self.free:
            s = self.free.pop()
        else:
            s = len(self.insts)
            if s >= self.cap:
                self._grow(s + 1)
            self.insts.append(None)
        self.insts[s] = inst
        inst.ix_pos = s
        inst.ix_seq = self.next_seq
        self.seq[s] = self.next_seq
        self.next_seq += 1
        self.epos[s] = -1
        self.h[s] = 1e300
        inst.ix_run = False
        self._set(inst, inst.phase == DECODE and inst.seg_n > 1)
        self._key(s, inst, t)
        p = self.n
        self.n += 1
        self.hs[p] = s
        self.pos[s] = p
        self._up(p)
        self._count(t)

    @cython.locals(inst=Instance, s=cython.Py_ssize_t, p=cython.Py_ssize_t, last=cython.Py_ssize_t)
    def remove(self, inst, t):
        """``inst`` stops serving."""
        s = inst.ix_pos
        if s < 0:
            return
        self._unset(inst)
        _expire_at(self, s, 1e300)
        p = self.pos[s]
        self.n -= 1
        last = self.hs[self.n]
        inst.ix_pos = -1
        self.insts[s] = None
        self.free.append(s)
        if last != s:
            self.hs[p] = last
            self.pos[last] = p
            self._up(p)
            self._down(self.pos[last])
        self._count(t)

    @cython.locals(inst=Instance, s=cython.Py_ssize_t)
    def touch(self, inst, t):
        """``inst``'s work or decode run may have changed: update its key and contribution."""
        s = inst.ix_pos
        if s < 0:
            return
        self._unset(inst)
        self._set(inst, inst.phase == DECODE and inst.seg_n > 1)
        self._rekey(s, inst, t)
        self._count(t)

    def _count(self, t):
        self.updates += 1
        if self.updates > 2 * self.n + 64:
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

    @cython.locals(s=cython.Py_ssize_t, b=cython.Py_ssize_t, i=cython.Py_ssize_t)
    def jsq(self, t):
        """``(instance, k)``: the serving instance with the least remaining work at ``t`` (first in serving order at
        ties) and the decode iterations of its current run done by ``t``. Exactly the linear scan's choice."""
        if self.n == 0:
            return None, 0
        while self.en > 0 and self.h[self.es[0]] < t:  # keys that no longer hold
            s = self.es[0]
            self._rekey(s, self.insts[s], t)
        self._best = -1
        self._best_w = 0
        self._best_k = 0
        self._best_seq = 0
        self.ns = 0
        self._visit(0, t)
        b = self._best
        self.g_on = True
        self.g_w = self._best_w
        for i in range(self.ns):  # the losers' keys, just above the new answer
            s = self.seen[i]
            if s != b:
                self._rekey(s, self.insts[s], t)
        return self.insts[b], self._best_k

    @cython.locals(p=cython.Py_ssize_t, s=cython.Py_ssize_t, inst=Instance, w=cython.longlong, k=cython.longlong,
                   e=cython.double, c=cython.Py_ssize_t, o=cython.Py_ssize_t, seq=cython.longlong)
    def _visit(self, p, t):
        """Depth-first walk of the heap from node ``p`` (whose key may beat the best), into every child subtree
        whose key may beat the best found so far: the others' keys are >= the child's > (best work, its seq)."""
        s = self.hs[p]
        seq = self.seq[s]
        inst = self.insts[s]
        w = inst.work
        k = 0
        if inst.phase == DECODE and inst.seg_n > 1:
            self.seen[self.ns] = s
            self.ns += 1
            # at most e/d0 iterations are done by t: if even that leaves more work than the best, skip the exact
            # count (its square root) but still look below this node
            e = t - inst.seg_t0
            k = inst.seg_n
            if inst.seg_a >= 0 and e < (k - 1) * inst.seg_d0:
                k = cython.cast(cython.longlong, e / inst.seg_d0) + 1 if e > 0 else 0  # +1: float rounding of e/d0
            if self._best < 0 or w - inst.seg_B * k < self._best_w or (
                    w - inst.seg_B * k == self._best_w and seq < self._best_seq):
                k = decode_iters_done(inst, t)
                w -= inst.seg_B * k
            else:
                w = self._best_w + 1  # cannot win
        if self._best < 0 or w < self._best_w or (w == self._best_w and seq < self._best_seq):
            self._best = s
            self._best_w = w
            self._best_k = k
            self._best_seq = seq
        for c in range(2 * p + 1, min(2 * p + 3, self.n)):
            o = self.hs[c]
            if self.lb[o] < self._best_w or (self.lb[o] == self._best_w and self.seq[o] < self._best_seq):
                self._visit(c, t)


# -- the expiry heap of an index: its slots with a key that expires, a binary min-heap on h ----------------------
@cython.locals(ix=EndpointIndex, p=cython.Py_ssize_t, parent=cython.Py_ssize_t, s=cython.Py_ssize_t, o=cython.Py_ssize_t)
def _eup(ix, p):
    s = ix.es[p]
    while p > 0:
        parent = (p - 1) >> 1
        o = ix.es[parent]
        if not ix.h[s] < ix.h[o]:
            break
        ix.es[p] = o
        ix.epos[o] = p
        p = parent
    ix.es[p] = s
    ix.epos[s] = p

@cython.locals(ix=EndpointIndex, p=cython.Py_ssize_t, c=cython.Py_ssize_t, n=cython.Py_ssize_t, s=cython.Py_ssize_t,
               o=cython.Py_ssize_t)
def _edown(ix, p):
    n = ix.en
    s = ix.es[p]
    while True:
        c = 2 * p + 1
        if c >= n:
            break
        if c + 1 < n and ix.h[ix.es[c + 1]] < ix.h[ix.es[c]]:
            c += 1
        o = ix.es[c]
        if not ix.h[o] < ix.h[s]:
            break
        ix.es[p] = o
        ix.epos[o] = p
        p = c
    ix.es[p] = s
    ix.epos[s] = p

@cython.locals(ix=EndpointIndex, s=cython.Py_ssize_t, h=cython.double, p=cython.Py_ssize_t, old=cython.double,
               last=cython.Py_ssize_t)
def _expire_at(ix, s, h):
    """Slot ``s`` of ``ix``: its key holds until ``h`` (``1e300``: as long as its segment): its place in the expiry heap."""
    p = ix.epos[s]
    old = ix.h[s]
    ix.h[s] = h
    if h < 1e300:
        if p < 0:
            p = ix.en
            ix.en += 1
            ix.es[p] = s
            ix.epos[s] = p
            _eup(ix, p)
        elif h < old:
            _eup(ix, p)
        elif h > old:
            _edown(ix, p)
    elif p >= 0:
        ix.en -= 1
        last = ix.es[ix.en]
        ix.epos[s] = -1
        if last != s:
            ix.es[p] = last
            ix.epos[last] = p
            _eup(ix, p)
            _edown(ix, ix.epos[last])


def _grown(a, code: str, n: int):
    """A zeroed ``array`` of ``n`` items of type ``code`` starting with ``a``'s items (``a`` may be None)."""
    b = array(code, bytes(array(code).itemsize * n))
    if a is not None:
        b[:len(a)] = a
    return b


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
