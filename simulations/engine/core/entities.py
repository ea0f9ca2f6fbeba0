"""Fleet entities: regions -> endpoints -> instances. Plain mutable objects with __slots__.

Request state is not here: requests live in flat per-field lists/arrays owned by the simulator,
indexed by request id (rid), so an instance only holds rids.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict

import cython
import numpy as np
from cython.cimports.libc.math import sqrt  # C sqrt when compiled (math.sqrt as Python): same result

from simulations.engine.scenario.config import DeploymentSpec, EndpointConfig

if cython.compiled:
    from cython.cimports.cpython.array import clone as _clone

# What the scaling signal counts besides (or instead of) the KV in use (DeploymentSpec.signal_mode):
# RESERVE: each admitted request counts its prompt + whole output from admission (the SageServe authors' code
# allocates a request's output memory when its decode task starts); QUEUED: prompts waiting in the instance's queue
# count too. 0 = the KV in use now (the default). Admission always uses the true KV (Instance.cap).
SIG_RESERVE, SIG_QUEUED = 1, 2

# Instance life-cycle states
PROVISIONING, SERVING, DRAINING, RELEASED = 0, 1, 2, 3
STATE_NAMES = {PROVISIONING: "provisioning", SERVING: "serving", DRAINING: "draining", RELEASED: "released"}

# What the instance is doing between two events
IDLE, PREFILL, DECODE, WAKE, MIXED, SWAPIN = 0, 1, 2, 3, 4, 5  # WAKE: a step is due now (simultaneous arrivals
# batch); MIXED: a chunked-prefill iteration (prefill chunks + one decode step of the running batch); SWAPIN: swapped-out
# requests' KV coming back from host memory (no prefill, no token)


def decode_iters_done(inst: Instance, t: float) -> int:
    """Iterations of the instance's current decode run completed by time t, exact from the run's quadratic
    (iteration k lasts d0 + 2a*k, so n iterations last n*d0 + a*n*(n-1)); 0 before the run starts, at most the
    run's length. Only meaningful while ``inst.phase == DECODE``. Routers, the utilisation signal and the loop
    all use it (compiled as a C function in the compiled build)."""
    e = t - inst.seg_t0
    if e <= 0:
        return 0
    d0 = inst.seg_d0
    a = inst.seg_a
    if a > 0:
        b = d0 - a
        k = int((-b + sqrt(b * b + 4 * a * e)) / (2 * a))
    else:
        k = int(e / d0)
    while k > 0 and k * d0 + a * k * (k - 1) > e:  # float rounding
        k -= 1
    while (k + 1) * d0 + a * (k + 1) * k <= e:
        k += 1
    n = inst.seg_n
    return k if k < n else n


def signal_tokens(inst: Instance, t: float, mode) -> int:
    """The KV tokens instance ``inst`` counts in its endpoint's scaling signal at t under signal ``mode`` (not 0):
    the KV in use now (with the decode progress of a run), or with SIG_RESERVE the full context (prompt + whole
    output) of every admitted request, plus with SIG_QUEUED the prompts (and tokens already generated) waiting.
    ``res_tok`` / ``q_tok`` are kept by the batching engine at every admission, completion, eviction and queueing."""
    if mode & SIG_RESERVE:
        kv = inst.res_tok
    else:
        kv = inst.kv
        if inst.phase == DECODE and inst.seg_n > 1:
            kv += inst.seg_B * decode_iters_done(inst, t)
    if mode & SIG_QUEUED:
        kv += inst.q_tok
    return kv


# the decode-run log is trimmed (runs older than every running request's join forgotten) once it holds more than
# max(RUNS_TRIM_MIN, twice what the last trim kept): bounded memory, amortised O(1) a run
RUNS_TRIM_MIN = 4096


_EMPTY = {"l": array("l"), "d": array("d")}  # clone templates: C long (what the typed views declare), double


def _rows(code: str, n: int) -> array:
    """An ``array`` of ``n`` items of type ``code`` for a log's rows: compiled, one allocation left uninitialised
    (a row is written before it is read: rows at and above ``hi`` are never read); as Python, zeroed."""
    if cython.compiled:
        return _clone(_EMPTY[code], n, False)
    return array(code, bytes(array(code).itemsize * n))


class RunLog:
    """An instance's decode-run log, for the requests' longest token gap (max TBT; kvcache.py ``_close_stint``).

    Per decode run: its start clock ``i0`` (strictly increasing), start time ``t0``, first-iteration duration
    ``d0``, the longest of its later iterations ``rest``, and ``old`` = max(gap since the previous decode token +
    ``d0``, ``rest``): the longest gap a request already running sees in it. ``mx`` is the stack of positions of
    ``old``'s suffix maxima (values strictly decreasing), so the maximum of ``old`` from any run on is one binary
    search. Rows [lo, hi) of flat typed arrays are live (8 bytes a value, no boxed object per run: nothing for the
    allocator or the cyclic GC); forgetting the oldest runs moves ``lo``; a full log is compacted or doubled."""

    def __init__(self, cap: int = 64) -> None:
        self.lo = self.hi = self.mlo = self.mhi = 0
        self.trim_at = RUNS_TRIM_MIN
        self._alloc(cap)

    def _alloc(self, cap) -> None:
        """Fresh arrays of ``cap`` rows holding the live runs (and the stack) at the front: ``array`` buffers filled
        by typed copies (a fleet of 80 instances grows its logs hundreds of times a run; numpy's calls cost
        more than the copying)."""
        if self.hi > self.lo:
            self._compact()  # the live rows at the front of the old arrays
        else:
            self.lo = self.hi = self.mlo = self.mhi = 0
        i0, mx = _rows("l", cap), _rows("l", cap)
        t0, d0, rest, vold = _rows("d", cap), _rows("d", cap), _rows("d", cap), _rows("d", cap)
        if self.hi > 0:
            self._copy_to(i0, t0, d0, rest, vold, mx)
        self.i0, self.t0, self.d0, self.rest, self.old, self.mx = i0, t0, d0, rest, vold, mx
        self.cap = cap

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(i=cython.Py_ssize_t, ti0=cython.long[::1], tt0=cython.double[::1],
                   td0=cython.double[::1], trest=cython.double[::1], told=cython.double[::1], tmx=cython.long[::1])
    def _copy_to(self, i0, t0, d0, rest, vold, mx):
        """Copy the rows [0, hi) and the stack [0, mhi) (compacted first) into the given arrays."""
        ti0, tt0, td0, trest, told, tmx = i0, t0, d0, rest, vold, mx
        for i in range(self.hi):
            ti0[i] = self.i0[i]
            tt0[i] = self.t0[i]
            td0[i] = self.d0[i]
            trest[i] = self.rest[i]
            told[i] = self.old[i]
        for i in range(self.mhi):
            tmx[i] = self.mx[i]

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(lo=cython.Py_ssize_t, mlo=cython.Py_ssize_t, i=cython.Py_ssize_t)
    def _compact(self):
        """Move the live runs (and the stack) to the front of the same arrays: no allocation, no fresh pages."""
        lo = self.lo
        mlo = self.mlo
        for i in range(self.hi - lo):  # forward: the destination row is never above the source
            self.i0[i] = self.i0[lo + i]
            self.t0[i] = self.t0[lo + i]
            self.d0[i] = self.d0[lo + i]
            self.rest[i] = self.rest[lo + i]
            self.old[i] = self.old[lo + i]
        for i in range(self.mhi - mlo):
            self.mx[i] = self.mx[mlo + i] - lo
        self.hi -= lo
        self.lo = 0
        self.mhi -= mlo
        self.mlo = 0

    def __len__(self) -> int:
        return self.hi - self.lo

    def count(self):
        return self.hi - self.lo

    def clear(self) -> None:
        """Forget every run and give the arrays back (a released instance's log: nothing will read it)."""
        self.lo = self.hi = self.mlo = self.mhi = 0
        self.trim_at = RUNS_TRIM_MIN
        self._alloc(64)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(p=cython.Py_ssize_t, top=cython.Py_ssize_t)
    def append(self, i0, t0, d0, rest, old):
        """Log a run (``i0`` above every logged start clock)."""
        if self.hi == self.cap:  # full: compact in place when at least half the rows are forgotten, else double
            if 2 * (self.hi - self.lo) <= self.cap:
                self._compact()
            else:
                self._alloc(2 * self.cap)
        p = self.hi
        self.i0[p] = i0
        self.t0[p] = t0
        self.d0[p] = d0
        self.rest[p] = rest
        self.old[p] = old
        top = self.mhi
        while top > self.mlo and self.old[self.mx[top - 1]] <= old:
            top -= 1
        self.mx[top] = p
        self.mhi = top + 1
        self.hi = p + 1

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(lo=cython.Py_ssize_t, hi=cython.Py_ssize_t, mid=cython.Py_ssize_t)
    def first_from(self, clock):
        """Row of the first live run starting at or after decode clock ``clock`` (``hi`` if none)."""
        lo = self.lo
        hi = self.hi
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.i0[mid] < clock:
                lo = mid + 1
            else:
                hi = mid
        return lo

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(lo=cython.Py_ssize_t, hi=cython.Py_ssize_t, mid=cython.Py_ssize_t)
    def max_from(self, s):
        """``max(old[s:hi])`` for a live row ``s`` (exactly that value)."""
        lo = self.mlo
        hi = self.mhi - 1
        while lo < hi:  # the first stack entry at a row >= s (the last entry is the last run: >= s)
            mid = (lo + hi) >> 1
            if self.mx[mid] < s:
                lo = mid + 1
            else:
                hi = mid
        return self.old[self.mx[lo]]

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(idx=cython.Py_ssize_t, m=cython.double, r=cython.double)
    def gap_since(self, join, tok_t):
        """The longest token gap of a request that joined the batch at decode clock ``join`` (``join`` below the
        current clock) and whose last token before that came at ``tok_t``: the first run since it joined counts
        from ``tok_t``, later runs count whole (their ``old``)."""
        idx = self.first_from(join)
        if idx >= self.hi:
            raise IndexError("no decode run since the request joined")
        m = self.t0[idx] - tok_t + self.d0[idx]
        r = self.rest[idx]
        if r > m:
            m = r
        if idx + 1 < self.hi:
            r = self.max_from(idx + 1)
            if r > m:
                m = r
        return m

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(cut=cython.Py_ssize_t)
    def trim(self, oldest):
        """Forget the runs starting before decode clock ``oldest``; the next trim waits until the log doubles."""
        cut = self.first_from(oldest)
        self.lo = cut
        while self.mlo < self.mhi and self.mx[self.mlo] < cut:
            self.mlo += 1
        self.trim_at = max(RUNS_TRIM_MIN, 2 * (self.hi - self.lo))

    def rows(self) -> list:
        """The live runs as (i0, t0, d0, rest, old) tuples, oldest first (tests, inspection)."""
        return [(int(self.i0[p]), float(self.t0[p]), float(self.d0[p]), float(self.rest[p]), float(self.old[p]))
                for p in range(self.lo, self.hi)]


class IntHeap:
    """A min-heap of 64-bit ints in a flat typed array (an instance's finish heap, kvcache.py: one int per running
    request, no boxed value or Python call per push / pop). Equal values are the same value, so it pops in the order
    of any other min-heap of the same values (``heapq``'s included)."""

    def __init__(self, cap: int = 16) -> None:
        self.n = 0
        self.cap = 0
        self._grow(cap)

    def _grow(self, cap) -> None:
        h = np.zeros(cap, dtype=np.int64)
        if self.n:
            h[:self.n] = np.asarray(self.h)[:self.n]
        self.h = memoryview(h)
        self.cap = cap

    def __len__(self) -> int:
        return self.n

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def top(self):
        """The smallest value (the heap must not be empty)."""
        if self.n == 0:
            raise IndexError("top of an empty heap")
        return self.h[0]

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(p=cython.Py_ssize_t, parent=cython.Py_ssize_t, pv=cython.long)
    def push(self, v):
        if self.n == self.cap:
            self._grow(2 * self.cap)
        p = self.n
        self.n = p + 1
        while p > 0:
            parent = (p - 1) >> 1
            pv = self.h[parent]
            if v >= pv:
                break
            self.h[p] = pv
            p = parent
        self.h[p] = v

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.locals(top=cython.long, last=cython.long, p=cython.Py_ssize_t, c=cython.Py_ssize_t, n=cython.Py_ssize_t,
                   cv=cython.long)
    def pop(self):
        """Remove and return the smallest value (the heap must not be empty)."""
        if self.n == 0:
            raise IndexError("pop from an empty heap")
        top = self.h[0]
        n = self.n - 1
        self.n = n
        if n > 0:
            last = self.h[n]
            p = 0
            while True:
                c = 2 * p + 1
                if c >= n:
                    break
                cv = self.h[c]
                if c + 1 < n and self.h[c + 1] < cv:
                    c += 1
                    cv = self.h[c]
                if cv >= last:
                    break
                self.h[p] = cv
                p = c
            self.h[p] = last
        return top

    def values(self) -> list:
        """The values held (heap order)."""
        return [int(self.h[p]) for p in range(self.n)]

    def replace(self, values) -> None:
        """Hold exactly ``values`` (any order)."""
        self.n = 0
        for v in sorted(values):
            self.push(v)


class Instance:
    """One model copy on the GPUs of one deployment. Iteration-level continuous batching state.

    Running requests use a virtual decode clock ``it`` (decode iterations done so far): a request that
    joined with context ``ctx`` at clock ``j`` has context ``ctx + (it - j)``; so the batch context is
    ``S + B * it`` with ``S`` the sum of ``ctx - j`` over the batch, and its last token comes at clock
    ``fin`` (kept in a heap).
    """

    __slots__ = (
        "iid", "endpoint", "spec", "state", "cap", "max_b", "max_bt", "pc0", "pc1", "pc2", "pcs", "pcr", "dc0", "dcb", "dcc",
        "waiting", "running", "fin_heap", "B", "S", "it", "kv", "work", "phase", "seg_t0", "seg_n", "seg_d0",
        "seg_B", "seg_end", "batch", "busy_s", "t_requested", "t_ready", "t_released", "source",
        "rr", "donate_on_release", "seg_a", "runs",
        "last_dec_end", "prefilling", "kv_prefill", "swapped", "pending", "kind", "policy_state", "adm", "res_tok", "q_tok",
        "ix_pos", "ix_seq", "ix_run", "ix_r", "ix_rt", "ix_q", "ix_qt", "ix_b", "ix_bn",
        "v1", "pfx", "pfx_lru", "pfx_lru_tok", "v1_async", "last_arr",
    )

    def __init__(self, iid: int, endpoint: Endpoint, t_requested: float, t_ready: float, source: str) -> None:
        spec: DeploymentSpec = endpoint.spec
        self.iid = iid
        self.endpoint = endpoint
        self.spec = spec
        self.state = PROVISIONING
        self.cap = spec.kv_capacity_tokens
        self.max_b = spec.max_batch_size
        self.max_bt = spec.max_batch_tokens
        # the smallest request (prompt + generated tokens) refused at routing: its endpoint's bound (KV capacity less
        # the admission watermark, context limit; set by the Simulator, arrivals.py)
        self.adm = endpoint.adm
        self.pc0, self.pc1, self.pc2 = spec.prefill.c0, spec.prefill.c1, spec.prefill.c2
        self.pcs, self.pcr = spec.prefill.c_sq, spec.prefill.c_req  # per sum(P_i^2) and per prompt (optional)
        self.dc0, self.dcb, self.dcc = spec.decode.c0, spec.decode.c_batch, spec.decode.c_ctx
        self.waiting: list = []  # heap of (key, seq, rid)
        self.running: dict = {}  # rid -> ctx offset (ctx - join clock)
        self.fin_heap = IntHeap()  # fin * FIN_RID + rid per running request (kvcache.py); stale entries skipped lazily
        self.B = 0
        self.S = 0
        self.it = 0
        self.kv = 0  # KV tokens in use at the last update (what routers and autoscalers see)
        self.work = 0  # remaining tokens to process (unprefilled prompt + remaining output), for JSQ
        self.phase = IDLE
        self.seg_t0 = 0.0
        self.seg_n = 0
        self.seg_d0 = 0.0
        self.seg_a = 0.0  # c_ctx * B / 2 of the current decode run: n iterations last n*d0 + a*n*(n-1)
        self.seg_B = 0
        self.seg_end = 0.0
        self.batch: list = []
        self.busy_s = 0.0
        self.t_requested = t_requested
        self.t_ready = t_ready
        self.t_released = float("nan")
        self.source = source
        self.rr = 0
        self.donate_on_release = True
        self.runs = RunLog()  # decode-run log for max TBT (kvcache.py)
        self.last_dec_end = float("nan")
        self.prefilling: list = []  # chunked prefill: [rid, prompt tokens left, KV reserved] in admission order
        self.kv_prefill = 0  # KV reserved by requests still in chunked prefill
        # the policy API (control.py): requests whose KV was swapped to host memory [(rid, ctx tokens)], evictions
        # due at the next iteration boundary [(rid, mode)], the instance's kind and a policy's own state
        self.swapped: list = []
        self.pending: list = []
        self.kind = "mixed"
        self.policy_state: dict = {}
        # the endpoint's index (fleetindex.py): its slot (-1: not indexed), serving order,
        # and the current decode run's share of the utilisation bounds
        self.ix_pos = -1
        self.ix_seq = 0
        self.ix_run = False
        self.ix_r = self.ix_rt = self.ix_q = self.ix_qt = 0.0
        self.ix_b = self.ix_bn = 0
        # scaling-signal counters (signal_tokens): prompt + whole output of the admitted requests (running or in
        # chunked prefill) and prompt (+ generated) tokens of the waiting ones
        self.res_tok = 0
        self.q_tok = 0
        # vLLM V1 scheduling (one token budget per step, decodes first, then chunked prefills; chunked.py) and
        # prefix caching (kvcache.py): the cached prefix chunks (id -> refs * PFX_REF + cached tokens) and the
        # free ones in LRU order (id -> None) with their tokens; None when the deployment does not cache prefixes
        self.v1 = bool(getattr(spec, "vllm_v1", False))
        self.pfx = {} if getattr(spec, "prefix_caching", False) else None
        self.pfx_lru = OrderedDict() if self.pfx is not None else None
        self.pfx_lru_tok = 0
        # vLLM async scheduling (chunked.py ``_late``) and the arrival time of the request that joined last
        self.v1_async = bool(getattr(spec, "async_scheduling", False))
        self.last_arr = 0.0

    @property
    def queue_len(self) -> int:
        return len(self.waiting)

    @property
    def utilisation(self) -> float:
        return self.kv / self.cap

    def __repr__(self) -> str:
        return f"<Instance {self.iid} {self.endpoint.name} state={self.state} B={self.B} q={len(self.waiting)}>"


class Endpoint:
    """A (region, model[, pool]) endpoint: the serving instances and the aggregate load signal."""

    __slots__ = ("eid", "config", "spec", "region", "region_idx", "model", "model_idx", "pool", "serving",
                 "provisioning", "draining", "kv_sum", "cap_sum", "backlog", "rr", "last_scale_t", "name",
                 "min_instances", "max_instances", "state", "clock", "weights_local", "sig", "adm", "ix", "smode")

    def __init__(self, eid: int, config: EndpointConfig, region_idx: int, model_idx: int) -> None:
        self.eid = eid
        self.config = config
        self.spec = config.deployment
        self.region = config.region
        self.region_idx = region_idx
        self.model = config.model
        self.model_idx = model_idx
        self.pool = config.pool
        self.serving: list[Instance] = []
        self.provisioning: list[Instance] = []
        self.draining: list[Instance] = []
        self.kv_sum = 0
        self.cap_sum = 0
        self.backlog: list[int] = []  # rids that arrived while no instance was serving
        self.rr = 0
        self.last_scale_t = -1e18
        self.min_instances = config.min_instances
        self.max_instances = config.max_instances
        self.name = f"{config.region}/{config.model}" + ("" if config.pool == "all" else f"/{config.pool}")
        self.state: dict = {}  # free-form per-policy state (autoscalers may keep things here)
        self.clock = None  # the simulator (for .now)
        # weights in the region's repository: loads take load_same_region_s, else load_cross_region_s until the
        # first instance has loaded them (then they are cached in the region)
        self.weights_local = bool(getattr(config, "weights_in_region", True))
        # the scaling signal counts each true KV token as ``sig`` signal tokens (deployment.signal_kv_tokens)
        self.sig = float(self.spec.signal_scale)
        self.adm = self.spec.kv_capacity_tokens  # the Simulator lowers it (watermark, max_model_len; arrivals.py)
        self.ix = None  # EndpointIndex (fleetindex.py) when the fused arrival path runs, else None
        self.smode = int(self.spec.signal_mode)  # 0, or SIG_RESERVE | SIG_QUEUED (signal_tokens)

    @property
    def utilisation(self) -> float:
        """Effective memory utilisation now: KV in use / KV capacity over serving instances (weights excluded),
        as the scaling signal counts KV (x ``sig``; 1 unless the deployment sets signal_kv_tokens; what it counts:
        ``smode``, see signal_tokens)."""
        return self.util_at(self.clock.now if self.clock is not None else 0.0)

    def util_at(self, t: float) -> float:
        """Exact at time t in both modes: each serving instance's KV at its last event plus, inside a
        multi-iteration decode run, B tokens per iteration completed by t (same quadratic as the run)."""
        cap = self.cap_sum
        if not cap:
            return 1.0
        if self.smode:
            kv = 0
            for inst in self.serving:
                kv += signal_tokens(inst, t, self.smode)
            return kv * self.sig / cap
        kv = self.kv_sum
        for inst in self.serving:
            if inst.phase == DECODE and inst.seg_n > 1:
                kv += inst.seg_B * decode_iters_done(inst, t)
        return kv * self.sig / cap

    @property
    def n_serving(self) -> int:
        return len(self.serving)

    @property
    def n_provisioning(self) -> int:
        return len(self.provisioning)

    @property
    def n_active(self) -> int:
        return len(self.serving) + len(self.provisioning)

    @property
    def queue_len(self) -> int:
        return sum(len(i.waiting) for i in self.serving) + sum(len(i.waiting) for i in self.draining) + len(
            self.backlog)

    def __repr__(self) -> str:
        return f"<Endpoint {self.name} serving={len(self.serving)} prov={len(self.provisioning)}>"
