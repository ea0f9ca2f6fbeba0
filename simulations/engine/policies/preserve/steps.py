"""An instance's projection U_j kept as steps, typed: the same floats as ``anticipator.Projection``.

U_j x M = sum over running requests with projected remaining length rem > j of (ctx + j). Sorted by rem, the
requests leave the sum at a few iteration counts (the distinct rem values e_1 < e_2 < ...), and between two of
them the numerator is linear: C_k + j x N_k, with N_k requests still active and C_k their contexts now. A
projection is these few (e_k, C_k, N_k): O(n log n) to build from n requests (a handful per instance), O(steps)
to read, with no numpy call (whose fixed cost per call outweighed the work for so few requests).

Every read gives the float ``Projection`` computes, bit for bit:

- U_j = numerator / M with the numerator an exact integer (numpy holds the same integer in float64);
- inside a step the numerator grows with j, and x -> fl(x / M) and fl(a + b) never decrease, so U_j and
  U_j + (P + j) / M (the router's virtual insert) are non-decreasing within a step: a maximum over a step is its
  value at the step's last iteration, and the iterations above a threshold are a suffix of the step, found from
  the smallest integer numerator whose U exceeds it (``_first_over``).

Advancing d iterations while d < e_1 (nobody reaches its predicted end or the end of an extension) shifts the
steps (``shifted``): every rem drops by d and every context grows by d, the same integers ``from_arrays`` would
sum from the advanced requests.

Typed (steps.pxd): ``Steps`` keeps its steps in one flat buffer of 64-bit ints, built from the requests packed as
remaining << 42 | context and sorted in place, and reads them in C. Its numerators stay below 2^53, where a
64-bit int converts to a double exactly, so C's division of the converted ints and Python's int / int (correctly
rounded) give the same float. Requests outside that domain (a context of 2^42 tokens or more, a remaining length
of 2^20 or more, a sum of contexts that could bring a numerator to 2^53) go to ``PairSteps``: the same reads over
Python ints.
"""

from __future__ import annotations

from array import array

import cython
import numpy as np

from simulations.engine.policies.preserve.anticipator import EXTENSION, HORIZON, OVERLOAD_KV, OVERLOAD_SHARE

# the typed domain (module docstring): packed = remaining << 42 | context, numerators below 2^53
_LOW = cython.declare(cython.longlong, (1 << 42) - 1)
_REM_MAX = cython.declare(cython.longlong, 1 << 20)
_EXACT = cython.declare(cython.longlong, 1 << 53)
_INSERTION = cython.declare(cython.Py_ssize_t, 64)  # compiled: sort this many requests by insertion, more by sorted
_NONE = cython.declare(cython.longlong, 1 << 62)  # rem_min without requests
_ZERO = array("q", [0])

_FIRST_OVER: dict[tuple[int, float], int] = {}


def _first_over(cap: int, threshold: float) -> int:
    """The smallest integer x with x / cap > threshold (as floats: fl(x / cap) never decreases in x)."""
    key = (cap, threshold)
    x = _FIRST_OVER.get(key)
    if x is None:
        x = int(threshold * cap)
        while x > 0 and (x - 1) / cap > threshold:
            x -= 1
        while not x / cap > threshold:
            x += 1
        _FIRST_OVER[key] = x
    return x


@cython.locals(d=cython.longlong, ext=cython.longlong, r=cython.longlong)
def remaining(predicted: int, generated: int, extension: float) -> int:
    """``anticipator.projected_remaining`` (repeated here without the int() calls: a hot path)."""
    d = predicted if predicted > 1 else 1
    if generated < d:
        return d - generated
    ext = round(extension * d)
    if ext < 1:
        ext = 1
    r = d + ((generated - d) // ext + 1) * ext - generated
    return r if r > 1 else 1


def _longs(n: int) -> array | list:
    """A zeroed buffer of ``n`` 64-bit ints: an array read through a typed memoryview when compiled, a list of
    ints as Python (indexed faster there than an array)."""
    return _ZERO * n if cython.compiled else [0] * n


@cython.boundscheck(False)
@cython.wraparound(False)
def _sort(a, n):
    """Sort ``a[:n]`` ascending in place (any correct sort gives the same ints). A C function when compiled
    (steps.pxd)."""
    if cython.compiled and n <= _INSERTION:
        for i in range(1, n):
            v = a[i]
            j = i - 1
            while j >= 0 and a[j] > v:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = v
        return 0
    vals = sorted([a[i] for i in range(n)])
    for i in range(n):
        a[i] = vals[i]
    return 0


class Steps:
    """U_j for j in [0, horizon) of one instance as steps in a flat buffer ``buf``: ``m`` ends (absolute in the
    build's iteration count; ``off`` iterations have passed since), then the ``m + 1`` context sums C_k and the
    ``m + 1`` counts N_k at the build; after the last end the numerator is 0. ``x``: ``_first_over`` of the
    capacity and the default threshold (-1: not known). ``u`` gives the numpy row when asked (tests)."""

    __slots__ = ("cap", "horizon", "off", "rem_sum", "n", "m", "x", "buf")

    @classmethod
    @cython.locals(n=cython.Py_ssize_t, i=cython.Py_ssize_t, packed=cython.longlong[::1], total=cython.longlong,
                   rem_sum=cython.longlong)
    def build(cls, cap: int, ctx: list, gen: list, pred: list, horizon: int = HORIZON,
              extension: float = EXTENSION) -> Steps | PairSteps:
        """From the running requests' contexts now, tokens generated and predicted output lengths (``PairSteps``
        outside the typed domain)."""
        n = len(ctx)
        if len(gen) != n or len(pred) != n:
            raise ValueError("build: contexts, generated and predicted differ in length")
        packed = _longs(n)
        total = 0
        rem_sum = 0
        for i in range(n):
            x = ctx[i]
            r = remaining(pred[i], gen[i], extension)
            if x < 0 or x > _LOW or r >= _REM_MAX:
                return PairSteps.build(cap, ctx, gen, pred, horizon, extension)
            total += x
            rem_sum += r
            packed[i] = (r << 42) | x
        if cap >= _EXACT or total + (_REM_MAX + horizon) * n >= _EXACT:
            return PairSteps.build(cap, ctx, gen, pred, horizon, extension)
        return _steps_from(packed, n, int(cap), horizon, total, rem_sum, -1)

    @property
    def remaining_decode(self) -> int:
        return self.rem_sum - self.n * self.off

    @property
    def rem_min(self) -> int:
        """Iterations until the first request reaches the end of its projection (no shift from there on)."""
        return self.buf[0] - self.off if self.m else _NONE

    @cython.locals(d=cython.longlong)
    def shifted(self, d: int) -> Steps | None:
        """The projection d iterations on (no request joined or left), or None once it is no longer a shift."""
        if d >= (self.buf[0] - self.off if self.m else _NONE):
            return None
        s: Steps = Steps.__new__(Steps)
        s.cap, s.horizon, s.off, s.rem_sum, s.n, s.m, s.x = (self.cap, self.horizon, self.off + d, self.rem_sum,
                                                             self.n, self.m, self.x)
        s.buf = self.buf
        return s

    def _pieces(self, stop: int) -> list:
        """(first j, last j + 1, C, N) of each step within [0, stop): numerator C + j x N there (the loop every
        read below repeats inline, typed)."""
        off, m, buf = self.off, self.m, self.buf
        out = []
        a = 0
        for k in range(m + 1):
            b = buf[k] - off if k < m else stop
            if b > stop:
                b = stop
            if b > a:
                out.append((a, b, buf[m + k] + off * buf[2 * m + 1 + k], buf[2 * m + 1 + k]))
                a = b
            if a >= stop:
                break
        return out

    @property
    def u(self) -> np.ndarray:
        out = np.zeros(self.horizon)
        for a, b, c, k in self._pieces(self.horizon):
            out[a:b] = [(c + j * k) / self.cap for j in range(a, b)]
        return out

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(m=cython.Py_ssize_t, k=cython.Py_ssize_t, off=cython.longlong, stop=cython.longlong,
                   a=cython.longlong, b=cython.longlong, c=cython.longlong, n=cython.longlong, capd=cython.double,
                   v=cython.double, best=cython.double, found=cython.bint)
    def peak(self) -> float:
        m, off, stop, capd = self.m, self.off, self.horizon, self.cap
        best = 0.0
        found = False
        a = 0
        for k in range(m + 1):
            b = self.buf[k] - off if k < m else stop
            if b > stop:
                b = stop
            if b > a:
                n = self.buf[2 * m + 1 + k]
                c = self.buf[m + k] + off * n
                v = (c + (b - 1) * n) / capd
                if not found or v > best:
                    best = v
                    found = True
                a = b
            if a >= stop:
                break
        return best

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(m=cython.Py_ssize_t, k=cython.Py_ssize_t, off=cython.longlong, stop=cython.longlong,
                   a=cython.longlong, b=cython.longlong, c=cython.longlong, n=cython.longlong, j=cython.longlong,
                   x=cython.longlong, over=cython.longlong)
    def overloaded(self, threshold: float = OVERLOAD_KV, share: float = OVERLOAD_SHARE) -> bool:
        """More than ``share`` x l of the next l iterations above ``threshold``: ``Projection.overloaded``. The
        first step bounds every numerator (each step holds a subset of the first's requests, contexts are >= 0):
        below the threshold's numerator there, no iteration is over and the steps are not walked."""
        m, off, stop = self.m, self.off, self.horizon
        if self.x >= 0 and threshold == OVERLOAD_KV:
            x = self.x
        else:
            xo = _first_over(self.cap, threshold)
            if xo >= _EXACT:  # above every numerator
                return 0 > share * stop
            x = xo
        if self.buf[m] + (off + stop - 1) * self.buf[2 * m + 1] < x:
            return 0 > share * stop
        over = 0
        a = 0
        for k in range(m + 1):
            b = self.buf[k] - off if k < m else stop
            if b > stop:
                b = stop
            if b > a:
                n = self.buf[2 * m + 1 + k]
                c = self.buf[m + k] + off * n
                if n == 0:
                    if c >= x:
                        over += b - a
                else:
                    j = a if c + a * n >= x else -((c - x) // n)  # the first j with c + j n >= x
                    if j < b:
                        over += b - j
                a = b
            if a >= stop:
                break
        return over > share * stop

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(m=cython.Py_ssize_t, k=cython.Py_ssize_t, off=cython.longlong, stop=cython.longlong,
                   a=cython.longlong, b=cython.longlong, c=cython.longlong, n=cython.longlong, j=cython.longlong,
                   d=cython.longlong, p=cython.longlong, capd=cython.double, v=cython.double, best=cython.double,
                   found=cython.bint)
    def peak_with_request(self, prompt: int, predicted: int) -> float:
        """max_j of U_j with a request of ``prompt`` tokens (below 2^53 - l) and ``predicted`` output inserted
        (+ (P + j) / M for j < D^): ``Projection.with_request(prompt, predicted).max()``."""
        m, off, stop, capd, p = self.m, self.off, self.horizon, self.cap, prompt
        d = min(max(int(predicted), 1), stop)
        best = 0.0
        found = False
        a = 0
        for k in range(m + 1):
            b = self.buf[k] - off if k < m else stop
            if b > stop:
                b = stop
            if b > a:
                n = self.buf[2 * m + 1 + k]
                c = self.buf[m + k] + off * n
                if a < d:  # the part below d: the last j below min(b, d)
                    j = (b if b < d else d) - 1
                    v = (c + j * n) / capd + (p + j) / capd
                    if not found or v > best:
                        best = v
                        found = True
                if b > d:  # the part from d on: U alone at its last j
                    v = (c + (b - 1) * n) / capd
                    if not found or v > best:
                        best = v
                        found = True
                a = b
            if a >= stop:
                break
        return best


@cython.boundscheck(False)
@cython.wraparound(False)
def _steps_from(packed, n, cap, horizon, total, rem_sum, x):
    """The steps of ``n`` requests packed as remaining << 42 | context in ``packed`` (sorted here, in place),
    whose contexts sum to ``total`` and remaining lengths to ``rem_sum``; ``x``: ``_first_over`` of the default
    threshold, or -1. A C function when compiled (steps.pxd)."""
    _sort(packed, n)
    m = 0  # distinct remaining lengths
    for i in range(n):
        if i == 0 or (packed[i] >> 42) != (packed[i - 1] >> 42):
            m += 1
    s = Steps.__new__(Steps)
    s.cap, s.horizon, s.off, s.rem_sum, s.n, s.m, s.x = cap, horizon, 0, rem_sum, n, m, x
    # ends[0:m], csums[0:m + 1] from m, counts[0:m + 1] from 2m + 1 (``_longs`` inline: this runs at every build)
    s.buf = _ZERO * (3 * m + 2) if cython.compiled else [0] * (3 * m + 2)
    c = total
    k = n
    s.buf[m] = c
    s.buf[2 * m + 1] = k
    i = 0
    step = 0
    while i < n:
        e = packed[i] >> 42
        while i < n and (packed[i] >> 42) == e:
            c -= packed[i] & _LOW
            k -= 1
            i += 1
        s.buf[step] = e
        step += 1
        s.buf[m + step] = c
        s.buf[2 * m + 1 + step] = k
    return s


class PairSteps:
    """``Steps`` over Python ints, for requests outside the typed domain (see the module docstring): the same
    reads. ``ends`` are absolute in the build's iteration count; ``off`` iterations have passed since."""

    __slots__ = ("cap", "horizon", "ends", "csum", "cnt", "off", "rem_sum", "n")

    def __init__(self, cap: int, horizon: int, ends: list, csum: list, cnt: list, off: int, rem_sum: int,
                 n: int) -> None:
        self.cap, self.horizon = cap, horizon
        # step k covers [ends[k-1], ends[k]) (ends[-1] exclusive; after the last end the numerator is 0)
        self.ends, self.csum, self.cnt = ends, csum, cnt
        self.off, self.rem_sum, self.n = off, rem_sum, n

    @classmethod
    def build(cls, cap: int, ctx: list, gen: list, pred: list, horizon: int = HORIZON,
              extension: float = EXTENSION) -> PairSteps:
        """From the running requests' contexts now, tokens generated and predicted output lengths, by sorting
        (remaining, context) pairs: any sizes."""
        pairs = sorted(zip([remaining(p, g, extension) for p, g in zip(pred, gen, strict=True)], ctx, strict=True))
        n = len(pairs)
        c, k = sum(ctx), n
        ends, csum, cnt = [], [c], [k]
        rem_sum = 0
        i = 0
        while i < n:
            e = pairs[i][0]
            while i < n and pairs[i][0] == e:
                c -= pairs[i][1]
                k -= 1
                rem_sum += e
                i += 1
            ends.append(e)
            csum.append(c)
            cnt.append(k)
        return cls(int(cap), horizon, ends, csum, cnt, 0, rem_sum, n)

    @property
    def remaining_decode(self) -> int:
        return self.rem_sum - self.n * self.off

    @property
    def rem_min(self) -> int:
        """Iterations until the first request reaches the end of its projection (no shift from there on)."""
        return self.ends[0] - self.off if self.ends else 1 << 62

    def shifted(self, d: int) -> PairSteps | None:
        """The projection d iterations on (no request joined or left), or None once it is no longer a shift."""
        if d >= self.rem_min:
            return None
        return PairSteps(self.cap, self.horizon, self.ends, self.csum, self.cnt, self.off + d, self.rem_sum, self.n)

    def _pieces(self, stop: int):
        """(first j, last j + 1, C, N) of each step within [0, stop): numerator C + j x N there."""
        off, ends, csum, cnt = self.off, self.ends, self.csum, self.cnt
        a = 0
        for k, e in enumerate(ends):
            b = e - off
            if b > stop:
                b = stop
            if b > a:
                yield a, b, csum[k] + off * cnt[k], cnt[k]
                a = b
            if a >= stop:
                return
        if a < stop:
            yield a, stop, 0, 0

    @property
    def u(self) -> np.ndarray:
        out = np.zeros(self.horizon)
        for a, b, c, k in self._pieces(self.horizon):
            out[a:b] = [(c + j * k) / self.cap for j in range(a, b)]
        return out

    def peak(self) -> float:
        cap = self.cap
        return max((c + (b - 1) * k) / cap for a, b, c, k in self._pieces(self.horizon))

    def overloaded(self, threshold: float = OVERLOAD_KV, share: float = OVERLOAD_SHARE) -> bool:
        """More than ``share`` x l of the next l iterations above ``threshold``: ``Projection.overloaded``. The
        first step bounds every numerator (each step holds a subset of the first's requests, contexts are >= 0):
        below the threshold's numerator there, no iteration is over and the steps are not walked."""
        x = _first_over(self.cap, threshold)
        if self.csum[0] + (self.off + self.horizon - 1) * self.cnt[0] < x:
            return 0 > share * self.horizon
        over = 0
        for a, b, c, k in self._pieces(self.horizon):
            if k == 0:
                if c >= x:
                    over += b - a
                continue
            j = a if c + a * k >= x else -((c - x) // k)  # the first j with c + j k >= x
            if j < b:
                over += b - j
        return over > share * self.horizon

    def peak_with_request(self, prompt: int, predicted: int) -> float:
        """max_j of U_j with a request of ``prompt`` tokens and ``predicted`` output inserted (+ (P + j) / M for
        j < D^): ``Projection.with_request(prompt, predicted).max()``."""
        cap, horizon = self.cap, self.horizon
        d = min(max(int(predicted), 1), horizon)
        best = None
        for a, b, c, k in self._pieces(horizon):
            if a < d:  # the part below d: the last j below min(b, d)
                j = (b if b < d else d) - 1
                v = (c + j * k) / cap + (prompt + j) / cap
                best = v if best is None or v > best else best
            if b > d:  # the part from d on: U alone at its last j
                v = (c + (b - 1) * k) / cap
                best = v if best is None or v > best else best
        return best


class _Entry:
    """One instance's cached projection: the key it was read under (the running ids in order, the phase, the
    iteration counter), the KV then, each running request's context, tokens generated and prediction then
    (``n`` rows of typed buffers), the iterations advanced since (``offset``), the steps now, and the capacity
    (an instance's is fixed for its life) with its ``_first_over`` for the default threshold (-1 when outside the
    typed domain)."""

    __slots__ = ("n", "phase", "it", "kv", "offset", "x", "cap", "rids", "ctx", "gen", "pred", "steps")

    def __init__(self, cap: int) -> None:
        self.cap = int(cap)
        x = _first_over(self.cap, OVERLOAD_KV)
        self.x = x if 0 <= x < _EXACT and self.cap < _EXACT else -1
        self.n = self.kv = self.offset = 0
        self.phase = self.it = -1
        self.steps = None
        self.reserve(16)

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` running requests (the rows held are not kept)."""
        self.rids, self.ctx, self.gen, self.pred = _longs(rows), _longs(rows), _longs(rows), _longs(rows)


class ProjectionCache:
    """Each instance's projection kept between reads (the router's and the scaler's), exact. Key: the running set,
    the phase and the iteration counter at the segment's start. Under one key no request joins or leaves and every
    running request gains one token per decode iteration while the KV in use grows by the batch size (the engine's
    guarantee, instance/batching.py: between two events the running batch is fixed, and a decode run moves the
    instance's decode clock, which every running request's context and generated count follow), so with
    d = (KV now - KV then) / B the contexts and generated counts are the cached ones + d (no per-request loop);
    d = 0 reuses the projection, and while the shift is exact (``Steps.shifted``) the advanced projection is the
    cached steps moved by d. Past that, the steps are rebuilt from the cached requests + d; any other change (a
    new key, KV not a multiple of B) rebuilds from the tokens generated of the running batch
    (``running_generated``, one lean read) and each request's prompt and prediction: the numbers of
    ``running_requests``, without building its tuples at every rebuild. A request's prompt and prediction never
    change, so a rebuild takes them from the entry's previous rows for the requests still running (found in order:
    the running dict keeps its order, and admissions append) and reads ``request_tokens`` only for the others. The
    key is compared with the running ids in place (no tuple per read). A join or a leave rebuilds rather than
    updating the steps: between two reads a request still running may have had its prefill's first token or been
    preempted and admitted again (vLLM preempts the latest admitted, so the running order can look unchanged),
    which moves its generated count off the clock, and the policy view does not tell these apart from a request
    that only decoded. Counts its reuses and advances in ``stats``
    (``cache_hits``, ``cache_advances``). A first key without phase and iteration was not exact: a prefill's first
    token changes generated counts, not KV."""

    __slots__ = ("horizon", "extension", "entries", "stats", "scratch", "orid", "oprompt", "opred")

    def __init__(self, horizon: int, extension: float, stats: dict) -> None:
        self.horizon, self.extension, self.stats = horizon, extension, stats
        self.entries: dict = {}  # instance id -> _Entry
        self.scratch = _longs(64)  # the packed requests of a build (sorted in place)
        self._room(64)

    def _room(self, rows: int) -> None:
        """Room for ``rows`` previous rows (ids, prompts, predictions) while a rebuild rewrites an entry."""
        self.orid, self.oprompt, self.opred = _longs(rows), _longs(rows), _longs(rows)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(e=_Entry, n=cython.Py_ssize_t, i=cython.Py_ssize_t, kv=cython.longlong, d=cython.longlong,
                   offset=cython.longlong, r=cython.longlong, same=cython.bint)
    def get(self, sim, inst, now: float) -> Steps | PairSteps:
        """The projection of ``inst`` at ``now`` (``Projection.of``'s U_j, as ``Steps``)."""
        running = inst.running
        n = len(running)
        kv = sim.kv_used(inst, now)
        e = self.entries.get(inst.iid)
        if e is None:
            e = self.entries[inst.iid] = _Entry(inst.cap)
        elif e.n == n and e.phase == inst.phase and e.it == inst.it:
            same = True
            i = 0
            for rid in running:
                r = rid
                if e.rids[i] != r:
                    same = False
                    break
                i += 1
            if same:
                if kv == e.kv:
                    self.stats["cache_hits"] += 1
                    return e.steps
                if n and kv > e.kv and (kv - e.kv) % n == 0:
                    d = (kv - e.kv) // n
                    self.stats["cache_advances"] += 1
                    offset = e.offset + d
                    moved = e.steps.shifted(d)
                    if moved is None:  # past the exact shift: rebuild from the advanced requests
                        moved = self._build(e, offset)
                    e.kv, e.offset, e.steps = kv, offset, moved
                    return moved
        return self._read(sim, inst, now, kv, e)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(e=_Entry, n=cython.Py_ssize_t, m=cython.Py_ssize_t, i=cython.Py_ssize_t, j=cython.Py_ssize_t,
                   k=cython.Py_ssize_t, r=cython.longlong, g=cython.longlong, p=cython.longlong,
                   pr=cython.longlong, kv=cython.longlong, gen=list)
    def _read(self, sim, inst, now: float, kv: int, e: _Entry) -> Steps | PairSteps:
        """Read the running requests of ``inst`` into its entry, under the key of now, and build their steps."""
        running = inst.running
        n = len(running)
        gen = sim.running_generated(inst, now)  # in the order of inst.running
        if len(gen) != n:
            raise ValueError("running_generated: one count per running request expected")
        m = e.n  # the previous rows: ids, prompts (context - generated), predictions
        if m > len(self.orid):
            self._room(2 * m)
        for i in range(m):
            self.orid[i] = e.rids[i]
            self.oprompt[i] = e.ctx[i] - e.gen[i]
            self.opred[i] = e.pred[i]
        if n > len(e.rids):
            e.reserve(2 * n)
        i = 0
        j = 0  # previous rows before j are used or gone
        for rid in running:
            r = rid
            k = j
            while k < m and self.orid[k] != r:
                k += 1
            if k < m:
                p = self.oprompt[k]
                pr = self.opred[k]
                j = k + 1
            else:
                p, pr = sim.request_tokens(rid)
            g = gen[i]
            e.rids[i] = r
            e.ctx[i] = p + g
            e.gen[i] = g
            e.pred[i] = pr
            i += 1
        e.n, e.phase, e.it, e.kv, e.offset = n, inst.phase, inst.it, kv, 0
        e.steps = self._build(e, 0)
        return e.steps

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(e=_Entry, offset=cython.longlong, n=cython.Py_ssize_t, i=cython.Py_ssize_t, c=cython.longlong,
                   g=cython.longlong, p=cython.longlong, d=cython.longlong, r=cython.longlong,
                   total=cython.longlong, rem_sum=cython.longlong)
    def _build(self, e: _Entry, offset: int) -> Steps | PairSteps:
        """The steps of the entry's requests advanced by ``offset`` iterations (contexts and generated + offset)."""
        n = e.n
        if n > len(self.scratch):
            self.scratch = _longs(2 * n)
        total = 0
        rem_sum = 0
        for i in range(n):
            c = e.ctx[i] + offset
            g = e.gen[i] + offset
            p = e.pred[i]
            d = p if p > 1 else 1
            r = d - g if g < d else remaining(p, g, self.extension)
            if c < 0 or c > _LOW or r >= _REM_MAX or e.x < 0:
                return self._pairs(e, offset)
            total += c
            rem_sum += r
            self.scratch[i] = (r << 42) | c
        if total + (_REM_MAX + self.horizon) * n >= _EXACT:
            return self._pairs(e, offset)
        return _steps_from(self.scratch, n, e.cap, self.horizon, total, rem_sum, e.x)

    def _pairs(self, e: _Entry, offset: int) -> PairSteps:
        n = e.n
        return PairSteps.build(e.cap, [e.ctx[i] + offset for i in range(n)], [e.gen[i] + offset for i in range(n)],
                               [e.pred[i] for i in range(n)], self.horizon, self.extension)
