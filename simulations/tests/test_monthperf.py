"""Month scale: the C constants of the compiled engine match the Python ones, and the
suffix-maximum stack that replaced a slice-and-scan per finished request (max TBT) gives the scan's value,
through appends and trims (the source's functions, run as plain Python whichever build is active)."""

from __future__ import annotations

import importlib.util
import re
import types

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


def _kvcache_source():
    """kvcache.py executed as plain Python (its methods are C-only in the compiled build)."""
    spec = importlib.util.spec_from_file_location("kvcache_source_for_test", accel.source("instance.kvcache", ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("seed", range(8))
def test_suffix_maximum_stack_equals_the_scan_through_appends_and_trims(seed):
    KV = _kvcache_source().KVManager
    rng = np.random.default_rng(seed)
    inst = types.SimpleNamespace(runs_i0=[], runs_meta=[], runs_old=[], runs_mx=[], running={}, it=0)
    holder = types.SimpleNamespace(_join=None)
    checked = 0
    for step in range(4000):
        # coarse values: many ties (the stack must keep the latest of equal values)
        v = float(rng.integers(0, 20)) if rng.random() < 0.5 else float(rng.random())
        inst.it += 1
        inst.runs_i0.append(inst.it)
        inst.runs_meta.extend((0.0, 0.0, 0.0))  # three floats a run
        KV._runs_append(holder, inst, v)
        assert len(inst.runs_mx) <= len(inst.runs_old)
        for s in rng.integers(0, len(inst.runs_old), size=3):
            assert KV._runs_max_from(holder, inst, int(s)) == max(inst.runs_old[int(s):])
            checked += 1
        if step % 500 == 499:  # forget runs older than a random join clock (the engine's _trim_runs)
            oldest = int(inst.runs_i0[int(rng.integers(0, len(inst.runs_i0)))])
            holder._join = np.array([oldest], dtype=np.int32)
            inst.running = {0: 0}
            KV._trim_runs(holder, inst)
            assert inst.runs_i0[0] == oldest and len(inst.runs_meta) == 3 * len(inst.runs_i0)
            assert all(0 <= p < len(inst.runs_old) for p in inst.runs_mx)
    assert checked == 12000
