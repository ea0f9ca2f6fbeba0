"""The pending instance events of a run: at most one per instance, ordered by (time, seq).

An instance's next event (end of its prefill, decode run or chunked iteration, or a wake-up) is rescheduled
often: a request reaching a decoding instance cuts its run short. A plain heap keeps the superseded entry and
skips it when it surfaces (0.8 stale pops per request on the benchmark day, each a tuple allocated, compared
and freed). Compiled, this is an indexed binary heap on C arrays (time, seq and heap position per instance id,
no boxed values): rescheduling moves the instance's one entry in place. As plain Python it is that same lazy-deletion heap of tuples (heapq is in C; a heap written in
Python would be slower). Both give the same order, so the same results (simulations/tests/test_engine_builds.py).
"""

from __future__ import annotations

from heapq import heappop, heappush

import cython

if cython.compiled:
    from cython.cimports.libc.stdlib import free, realloc


class InstanceEvents:
    def __init__(self):
        self.t: list = []  # Python: per instance id, time of its pending event
        self.s: list = []  # Python: per instance id, its sequence number (tie-break), -1 when nothing is pending
        self.pos: list = []  # (unused in Python; kept for the declared layout)
        self.heap: list = []  # Python: (time, seq, iid) tuples, superseded ones included
        self.n = 0  # pending events
        # compiled: C arrays per instance id (time, seq, heap position) and the heap of instance ids, grown by
        # doubling (no boxed values: the Python lists above stay empty)
        self.size = 0  # instance ids known (both builds)
        self.cap = 0
        self.hn = 0
        if cython.compiled:
            self._grow(64)

    def __len__(self):
        return self.n

    @cython.locals(new=cython.Py_ssize_t)
    def _grow(self, want):
        """Compiled: room for ``want`` instance ids in the C arrays."""
        new = self.cap * 2 if self.cap else 64
        while new < want:
            new *= 2
        self.ct = cython.cast(cython.p_double, realloc(self.ct, new * cython.sizeof(cython.double)))
        self.cs = cython.cast(cython.p_longlong, realloc(self.cs, new * cython.sizeof(cython.longlong)))
        self.cpos = cython.cast(cython.p_Py_ssize_t, realloc(self.cpos, new * cython.sizeof(cython.Py_ssize_t)))
        self.cheap = cython.cast(cython.p_Py_ssize_t, realloc(self.cheap, new * cython.sizeof(cython.Py_ssize_t)))
        if not self.ct or not self.cs or not self.cpos or not self.cheap:
            raise MemoryError("event queue")
        self.cap = new

    def __dealloc__(self):
        if cython.compiled:
            free(self.ct)
            free(self.cs)
            free(self.cpos)
            free(self.cheap)

    def add_instance(self):
        """Room for one more instance id (ids are 0, 1, 2, ... in creation order)."""
        if cython.compiled:
            if self.size >= self.cap:
                self._grow(self.size + 1)
            self.ct[self.size] = 0.0
            self.cs[self.size] = -1
            self.cpos[self.size] = -1
            self.size += 1
        else:
            self.t.append(0.0)
            self.s.append(-1)
            self.pos.append(-1)
            self.size += 1

    @cython.locals(p=cython.Py_ssize_t)
    def schedule(self, iid, t, seq):
        """Instance ``iid``'s next event is at ``t`` (replacing any pending one)."""
        if cython.compiled:
            if iid < 0 or iid >= self.size:
                raise IndexError("instance id out of range")
            p = self.cpos[iid]
            self.ct[iid] = t
            self.cs[iid] = seq
            if p < 0:
                p = self.hn
                self.cheap[p] = iid
                self.cpos[iid] = p
                self.hn += 1
                self.n += 1
                self._up(p)
            else:
                self._up(p)
                self._down(self.cpos[iid])
        else:
            if self.s[iid] < 0:
                self.n += 1
            self.t[iid] = t
            self.s[iid] = seq
            heappush(self.heap, (t, seq, iid))

    def cancel(self, iid):
        """Drop instance ``iid``'s pending event, if any."""
        if cython.compiled:
            if iid < 0 or iid >= self.size:
                raise IndexError("instance id out of range")
            if self.cs[iid] < 0:
                return
            self.cs[iid] = -1
            self.n -= 1
            self._remove_at(self.cpos[iid])
            return
        if self.s[iid] < 0:
            return
        self.s[iid] = -1
        self.n -= 1
        # Python: the heap entry is skipped when it surfaces

    def top_time(self):
        """Time of the earliest pending event; inf when none."""
        if self.n == 0:
            return float("inf")
        if cython.compiled:
            return self.ct[self.cheap[0]]
        return self._head()[0]

    def top_seq(self):
        """Sequence number of the earliest pending event (call only when ``n > 0``)."""
        if cython.compiled:
            return self.cs[self.cheap[0]]
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
            iid = self.cheap[0]
            self.cs[iid] = -1
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

    # ------------------------------------------------------------------ compiled: the indexed heap on C arrays
    @cython.locals(last=cython.Py_ssize_t, iid=cython.Py_ssize_t)
    def _remove_at(self, p):
        iid = self.cheap[p]
        self.cpos[iid] = -1
        self.hn -= 1
        last = self.cheap[self.hn]
        if last != iid:
            self.cheap[p] = last
            self.cpos[last] = p
            self._up(p)
            self._down(self.cpos[last])

    @cython.locals(ta=cython.double, tb=cython.double)
    def _less(self, a, b):
        ta = self.ct[a]
        tb = self.ct[b]
        return ta < tb or (ta == tb and self.cs[a] < self.cs[b])

    @cython.locals(item=cython.Py_ssize_t, parent=cython.Py_ssize_t, pid=cython.Py_ssize_t)
    def _up(self, p):
        heap = self.cheap
        item = heap[p]
        while p > 0:
            parent = (p - 1) >> 1
            pid = heap[parent]
            if not self._less(item, pid):
                break
            heap[p] = pid
            self.cpos[pid] = p
            p = parent
        heap[p] = item
        self.cpos[item] = p

    @cython.locals(item=cython.Py_ssize_t, child=cython.Py_ssize_t, n=cython.Py_ssize_t, cid=cython.Py_ssize_t)
    def _down(self, p):
        heap = self.cheap
        n = self.hn
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
            self.cpos[cid] = p
            p = child
        heap[p] = item
        self.cpos[item] = p
