"""Month scale: the C constants of the compiled engine match the Python ones, and the decode-run log (max TBT:
typed arrays and a suffix-maximum stack instead of a slice and a scan per finished request) gives the scan's value
through appends, trims, compaction and growth (the active build's log and the source run as plain Python)."""

from __future__ import annotations

import heapq
import importlib.util
import re

import numpy as np
import pytest

from simulations.engine import accel
from simulations.engine.core import entities


def test_codes_pxd_matches_the_python_constants():
    text = (accel.source("core.codes", ".pxd")).read_text()
    consts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+([A-Z]+) = (\d+)\s*$", text, re.M)}
    names = ("IDLE", "PREFILL", "DECODE", "WAKE", "MIXED", "SWAPIN", "PROVISIONING", "SERVING", "DRAINING",
             "RELEASED")
    assert set(consts) == set(names)
    for name in names:
        assert consts[name] == getattr(entities, name), name


def _entities_source():
    """entities.py executed as plain Python (whichever build is active)."""
    spec = importlib.util.spec_from_file_location("entities_source_for_test", accel.source("core.entities", ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scan_gap(rows, join, tok):
    """The longest token gap by a plain scan of the runs (what RunLog.gap_since answers in O(log n))."""
    idx = next(k for k, r in enumerate(rows) if r[0] >= join)
    m = max(rows[idx][1] - tok + rows[idx][2], rows[idx][3])
    return max([m] + [r[4] for r in rows[idx + 1:]])


@pytest.mark.parametrize("build", ["active", "source"])
@pytest.mark.parametrize("seed", range(6))
def test_run_log_equals_the_scan_through_appends_trims_and_compaction(seed, build):
    RunLog = entities.RunLog if build == "active" else _entities_source().RunLog
    rng = np.random.default_rng(seed)
    log = RunLog(4)  # a small start: the arrays are doubled and compacted many times
    rows = []  # the model: every live run, oldest first
    clock = 0
    checked = 0
    for _ in range(3000):
        # coarse values: many ties (the suffix-maximum stack must keep the latest of equal values)
        old = float(rng.integers(0, 20)) if rng.random() < 0.5 else float(rng.random())
        row = (clock, float(rng.random() * 100), float(rng.random()), float(rng.random()), old)
        log.append(*row)
        rows.append(row)
        clock += int(rng.integers(1, 4))
        assert log.rows() == rows and log.count() == len(rows)
        for _ in range(3):
            k = int(rng.integers(0, len(rows)))
            join = rows[k][0] - int(rng.integers(0, 2))  # at a run's start clock or just before it
            if join < rows[0][0]:
                join = rows[0][0]
            tok = float(rng.random() * 100)
            assert log.gap_since(join, tok) == _scan_gap(rows, join, tok)
            assert log.max_from(log.lo + k) == max(r[4] for r in rows[k:])
            checked += 1
        if rng.random() < 0.02:  # forget the runs before a random start clock (the engine's _trim_runs)
            oldest = rows[int(rng.integers(0, len(rows)))][0]
            log.trim(oldest)
            rows = [r for r in rows if r[0] >= oldest]
            assert log.rows() == rows
            assert log.trim_at == max(entities.RUNS_TRIM_MIN, 2 * len(rows))
    assert checked == 9000
    assert log.cap > 64
    log.clear()  # a released instance's log (the streamed window): empty, and its arrays given back
    assert log.count() == 0 and log.rows() == [] and log.cap == 64
    log.append(5, 1.0, 0.5, 0.25, 2.0)
    assert log.rows() == [(5, 1.0, 0.5, 0.25, 2.0)] and log.gap_since(5, 0.0) == 1.5


@pytest.mark.parametrize("build", ["active", "source"])
@pytest.mark.parametrize("seed", range(4))
def test_int_heap_pops_what_heapq_pops(seed, build):
    """The finish heap (typed array) against heapq on the same pushes and pops: values up to 2^62, many equal."""
    IntHeap = entities.IntHeap if build == "active" else _entities_source().IntHeap
    rng = np.random.default_rng(seed)
    h = IntHeap(2)  # grown many times
    ref: list = []
    popped = 0
    for _ in range(20000):
        if ref and rng.random() < 0.45:
            assert h.top() == ref[0]
            assert h.pop() == heapq.heappop(ref)
            popped += 1
        else:
            v = int(rng.integers(0, 50)) * (1 << 32) + int(rng.integers(0, 3)) if rng.random() < 0.5 else int(
                rng.integers(0, 1 << 62))
            h.push(v)
            heapq.heappush(ref, v)
        assert len(h) == len(ref)
        if rng.random() < 0.001:  # renumbered wholesale (window.py): same values, any order in, heap order out
            vals = h.values()
            assert sorted(vals) == sorted(ref)
            h.replace(vals[::-1])
    while ref:
        assert h.pop() == heapq.heappop(ref)
        popped += 1
    assert len(h) == 0 and popped > 5000
    with pytest.raises(IndexError):
        h.pop()
