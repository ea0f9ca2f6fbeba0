"""An instance's projection U_j kept as steps, in plain Python: the same floats as ``anticipator.Projection``.

U_j x M = sum over running requests with projected remaining length rem > j of (ctx + j). Sorted by rem, the
requests leave the sum at a few iteration counts (the distinct rem values e_1 < e_2 < ...), and between two of
them the numerator is linear: C_k + j x N_k, with N_k requests still active and C_k their contexts now. A
projection is these few (e_k, C_k, N_k): O(n log n) to build from n requests (a handful per instance), O(steps)
to read, with no numpy call (whose fixed cost per call outweighed the work for so few requests).

Every read gives the float ``Projection`` computes, bit for bit:

- U_j = numerator / M with the numerator an exact integer (Python int; numpy holds the same integer in float64);
- inside a step the numerator grows with j, and x -> fl(x / M) and fl(a + b) never decrease, so U_j and
  U_j + (P + j) / M (the router's virtual insert) are non-decreasing within a step: a maximum over a step is its
  value at the step's last iteration, and the iterations above a threshold are a suffix of the step, found from
  the smallest integer numerator whose U exceeds it (``_first_over``).

Advancing d iterations while d < e_1 (nobody reaches its predicted end or the end of an extension) shifts the
steps (``shifted``): every rem drops by d and every context grows by d, the same integers ``from_arrays`` would
sum from the advanced requests.
"""

from __future__ import annotations

import cython
import numpy as np

from simulations.engine.policies.preserve.anticipator import EXTENSION, HORIZON, OVERLOAD_KV, OVERLOAD_SHARE

# Steps.build sorts (remaining, context) pairs packed in one int, remaining << 42 | context: exact while contexts
# are below 2^42 and remaining lengths below 2^20 (the packed int stays below 2^62), else it sorts pairs
_LOW = (1 << 42) - 1
_REM_MAX = 1 << 20

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


class Steps:
    """U_j for j in [0, horizon) of one instance as steps; ``u`` gives the numpy row when asked (tests, callers of
    ``Projection``). ``ends`` are absolute in the build's iteration count; ``off`` iterations have passed since."""

    __slots__ = ("cap", "horizon", "ends", "csum", "cnt", "off", "rem_sum", "n")

    def __init__(self, cap: int, horizon: int, ends: list, csum: list, cnt: list, off: int, rem_sum: int,
                 n: int) -> None:
        self.cap, self.horizon = cap, horizon
        # step k covers [ends[k-1], ends[k]) (ends[-1] exclusive; after the last end the numerator is 0)
        self.ends, self.csum, self.cnt = ends, csum, cnt
        self.off, self.rem_sum, self.n = off, rem_sum, n

    @classmethod
    @cython.locals(n=cython.Py_ssize_t, i=cython.Py_ssize_t, p=cython.longlong, g=cython.longlong,
                   d=cython.longlong, r=cython.longlong, e=cython.longlong, x=cython.longlong, v=cython.longlong,
                   c=cython.longlong, k=cython.longlong, total=cython.longlong, rem_sum=cython.longlong)
    def build(cls, cap: int, ctx: list, gen: list, pred: list, horizon: int = HORIZON,
              extension: float = EXTENSION) -> Steps:
        """From the running requests' contexts now, tokens generated and predicted output lengths. The requests
        are sorted by remaining length as packed ints (remaining << 42 | context; contexts are far below 2^42);
        the order among equal remaining lengths does not matter (their contexts are summed)."""
        n = len(ctx)
        if len(gen) != n or len(pred) != n:
            raise ValueError("build: contexts, generated and predicted differ in length")
        packed = []
        total = 0
        for i in range(n):
            p = pred[i]
            g = gen[i]
            d = p if p > 1 else 1
            r = d - g if g < d else remaining(p, g, extension)
            x = ctx[i]
            if x < 0 or x > 4398046511103 or r >= 1048576:  # 2^42 - 1, 2^20: see _LOW, _REM_MAX
                return cls._build_pairs(cap, ctx, gen, pred, horizon, extension)
            total += x
            packed.append((r << 42) | x)
        packed.sort()
        c = total
        k = n
        ends, csum, cnt = [], [c], [k]
        rem_sum = 0
        i = 0
        while i < n:
            v = packed[i]
            e = v >> 42
            while True:
                c -= v & 4398046511103
                k -= 1
                rem_sum += e
                i += 1
                if i >= n:
                    break
                v = packed[i]
                if (v >> 42) != e:
                    break
            ends.append(e)
            csum.append(c)
            cnt.append(k)
        return cls(int(cap), horizon, ends, csum, cnt, 0, rem_sum, n)

    @classmethod
    def _build_pairs(cls, cap: int, ctx: list, gen: list, pred: list, horizon: int, extension: float) -> Steps:
        """``build`` by sorting (remaining, context) pairs: any sizes (Python ints)."""
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

    def shifted(self, d: int) -> Steps | None:
        """The projection d iterations on (no request joined or left), or None once it is no longer a shift."""
        if d >= self.rem_min:
            return None
        return Steps(self.cap, self.horizon, self.ends, self.csum, self.cnt, self.off + d, self.rem_sum, self.n)

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



class ProjectionCache:
    """Each instance's projection kept between reads (the router's and the scaler's), exact. Key: the running set,
    the phase and the iteration counter at the segment's start. Under one key no request joins or leaves and every
    running request gains one token per decode iteration while the KV in use grows by the batch size, so with
    d = (KV now - KV then) / B the contexts and generated counts are the cached ones + d (no per-request loop);
    d = 0 reuses the projection, and while the shift is exact (``Steps.shifted``) the advanced projection is the
    cached steps moved by d. Past that, the steps are rebuilt from the cached requests + d; any other change (a
    new key, KV not a multiple of B) rebuilds from the tokens generated of the running batch
    (``running_generated``, one lean read) and each request's prompt and prediction (``request_tokens``, read once
    per request): the numbers of ``running_requests``, without building its tuples at every rebuild. Counts its
    reuses and advances in ``stats`` (``cache_hits``, ``cache_advances``). A first key without phase and iteration
    was not exact: a prefill's first token changes generated counts, not KV."""

    __slots__ = ("horizon", "extension", "entries", "stats", "tokens")

    def __init__(self, horizon: int, extension: float, stats: dict) -> None:
        self.horizon, self.extension, self.stats = horizon, extension, stats
        # instance id -> ((running ids, phase, iteration), KV, Steps, (contexts, generated, predicted), offset)
        self.entries: dict = {}
        self.tokens: dict = {}  # rid -> (prompt, predicted output): request_tokens, read once per request

    @cython.locals(kv=cython.longlong, kv0=cython.longlong, b=cython.Py_ssize_t, d=cython.longlong,
                   offset=cython.longlong, i=cython.Py_ssize_t)
    def get(self, sim, inst, now: float) -> Steps:
        """The projection of ``inst`` at ``now`` (``Projection.of``'s U_j, as ``Steps``)."""
        key = (tuple(inst.running), inst.phase, inst.it)
        kv = sim.kv_used(inst, now)
        hit = self.entries.get(inst.iid)
        if hit is not None and hit[0] == key:
            kv0 = hit[1]
            proj = hit[2]
            if kv == kv0:
                self.stats["cache_hits"] += 1
                return proj
            b = len(key[0])
            if b and kv > kv0 and (kv - kv0) % b == 0:
                d = (kv - kv0) // b
                self.stats["cache_advances"] += 1
                reqs = hit[3]
                offset = hit[4] + d
                moved = proj.shifted(d)
                if moved is None:  # past the exact shift: rebuild from the advanced requests
                    ctx, gen, pred = reqs
                    reqs = ([c + offset for c in ctx], [g + offset for g in gen], pred)
                    moved, offset = Steps.build(inst.cap, *reqs, self.horizon, self.extension), 0
                self.entries[inst.iid] = (key, kv, moved, reqs, offset)
                return moved
        rids = key[0]
        gen = sim.running_generated(inst, now)  # in the order of inst.running, as rids
        tokens = self.tokens
        ctx, pred = [], []
        for i in range(len(rids)):
            rid = rids[i]
            t = tokens.get(rid)
            if t is None:
                t = tokens[rid] = sim.request_tokens(rid)
            ctx.append(t[0] + gen[i])
            pred.append(t[1])
        proj = Steps.build(inst.cap, ctx, gen, pred, self.horizon, self.extension)
        self.entries[inst.iid] = (key, kv, proj, (ctx, gen, pred), 0)
        return proj

    def forget(self, rid: int) -> None:
        """Drop a finished request's prompt and predicted output (kept while it may run)."""
        self.tokens.pop(rid, None)
