"""The pending instance events of a run: at most one per instance, ordered by (time, seq).

An instance's next event (end of its prefill, decode run or chunked iteration, or a wake-up) is rescheduled
often: a request reaching a decoding instance cuts its run short. A plain heap keeps the superseded entry and
skips it when it surfaces (0.8 stale pops per request on the benchmark day, each a tuple allocated, compared
and freed). Compiled, this is an indexed binary heap on C doubles: rescheduling moves the instance's one entry
in place. As plain Python it is that same lazy-deletion heap of tuples (heapq is in C; a heap written in
Python would be slower). Both give the same order, so the same results (simulations/tests/test_engine_builds.py).
"""

from __future__ import annotations

from heapq import heappop, heappush

import cython


class InstanceEvents:
    def __init__(self):
        self.t: list = []  # per instance id: time of its pending event
        self.s: list = []  # per instance id: its sequence number (tie-break), -1 when nothing is pending
        self.pos: list = []  # compiled: per instance id, its index in ``heap`` (-1 when not queued)
        self.heap: list = []  # compiled: instance ids; Python: (time, seq, iid) tuples, superseded ones included
        self.n = 0  # pending events

    def __len__(self):
        return self.n

    def add_instance(self):
        """Room for one more instance id (ids are 0, 1, 2, ... in creation order)."""
        self.t.append(0.0)
        self.s.append(-1)
        self.pos.append(-1)

    @cython.locals(i=cython.Py_ssize_t, p=cython.Py_ssize_t)
    def schedule(self, iid, t, seq):
        """Instance ``iid``'s next event is at ``t`` (replacing any pending one)."""
        if cython.compiled:
            p = self.pos[iid]
            self.t[iid] = t
            self.s[iid] = seq
            if p < 0:
                self.heap.append(iid)
                p = len(self.heap) - 1
                self.pos[iid] = p
                self.n += 1
            self._up(p)
            self._down(self.pos[iid])
        else:
            if self.s[iid] < 0:
                self.n += 1
            self.t[iid] = t
            self.s[iid] = seq
            heappush(self.heap, (t, seq, iid))

    def cancel(self, iid):
        """Drop instance ``iid``'s pending event, if any."""
        if self.s[iid] < 0:
            return
        self.s[iid] = -1
        self.n -= 1
        if cython.compiled:
            self._remove_at(self.pos[iid])
        # Python: the heap entry is skipped when it surfaces

    @cython.locals(iid=cython.Py_ssize_t)
    def top_time(self):
        """Time of the earliest pending event; inf when none."""
        if self.n == 0:
            return float("inf")
        if cython.compiled:
            iid = self.heap[0]
            return self.t[iid]
        return self._head()[0]

    @cython.locals(iid=cython.Py_ssize_t)
    def top_seq(self):
        """Sequence number of the earliest pending event (call only when ``n > 0``)."""
        if cython.compiled:
            iid = self.heap[0]
            return self.s[iid]
        return self._head()[1]

    def _head(self):
        """Python build: the top heap entry, after dropping superseded ones."""
        while True:
            e = self.heap[0]
            if self.s[e[2]] == e[1]:
                return e
            heappop(self.heap)

    @cython.locals(iid=cython.Py_ssize_t, e=tuple)
    def pop(self):
        """Remove and return the instance id of the earliest pending event (call only when ``n > 0``)."""
        if cython.compiled:
            iid = self.heap[0]
            self.s[iid] = -1
            self.n -= 1
            self._remove_at(0)
            return iid
        while True:
            e = heappop(self.heap)
            iid = e[2]
            if self.s[iid] == e[1]:
                self.s[iid] = -1
                self.n -= 1
                return iid

    # ------------------------------------------------------------------ compiled: the indexed heap
    @cython.locals(last=cython.Py_ssize_t, iid=cython.Py_ssize_t)
    def _remove_at(self, p):
        iid = self.heap[p]
        self.pos[iid] = -1
        last = self.heap.pop()
        if last != iid:
            self.heap[p] = last
            self.pos[last] = p
            self._up(p)
            self._down(self.pos[last])

    @cython.locals(a=cython.Py_ssize_t, b=cython.Py_ssize_t, ta=cython.double, tb=cython.double)
    def _less(self, a, b):
        ta = self.t[a]
        tb = self.t[b]
        return ta < tb or (ta == tb and self.s[a] < self.s[b])

    @cython.locals(item=cython.Py_ssize_t, parent=cython.Py_ssize_t, pid=cython.Py_ssize_t)
    def _up(self, p):
        heap = self.heap
        item = heap[p]
        while p > 0:
            parent = (p - 1) >> 1
            pid = heap[parent]
            if not self._less(item, pid):
                break
            heap[p] = pid
            self.pos[pid] = p
            p = parent
        heap[p] = item
        self.pos[item] = p

    @cython.locals(item=cython.Py_ssize_t, child=cython.Py_ssize_t, n=cython.Py_ssize_t, cid=cython.Py_ssize_t)
    def _down(self, p):
        heap = self.heap
        n = len(heap)
        item = heap[p]
        while True:
            child = 2 * p + 1
            if child >= n:
                break
            cid = heap[child]
            if child + 1 < n and self._less(heap[child + 1], cid):
                child += 1
                cid = heap[child]
            if not self._less(cid, item):
                break
            heap[p] = cid
            self.pos[cid] = p
            p = child
        heap[p] = item
        self.pos[item] = p
