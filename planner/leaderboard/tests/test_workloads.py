"""The seeds' redraw keeps each minute's load and length mix; the rules' load and baseline come from the trace."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.leaderboard.core import rules, workloads


def _frame():
    rng = np.random.default_rng(0)
    t = np.sort(np.r_[rng.uniform(0, 60, 300), rng.uniform(60, 120, 30)])
    return pd.DataFrame({"arrival_s": t, "input_tokens": np.where(t < 60, 100, 5000),
                         "output_tokens": np.full(len(t), 10)})


def test_redraw_keeps_each_minute_and_differs_by_seed():
    f = _frame()
    a, b = workloads.redraw(f, 1), workloads.redraw(f, 2)
    assert not a.equals(b) and workloads.redraw(f, 1).equals(a)
    for d in (a, b):
        assert (np.diff(d["arrival_s"].to_numpy()) >= 0).all()
        first = d[d["arrival_s"] < 60]
        assert set(first["input_tokens"]) == {100} and set(d[d["arrival_s"] >= 60]["input_tokens"]) == {5000}
        assert 240 < len(first) < 360  # Poisson(300)
    big = workloads.redraw(f, 3, rate=4.0)
    assert 1100 < (big["arrival_s"] < 60).sum() < 1300


def test_the_load_multiplier_brings_the_mean_input_rate_to_the_rules_load():
    name = "azure-code"
    f = workloads.base_frame(name)
    m = workloads.multiplier(name)
    rate = m * f["input_tokens"].sum() / f["arrival_s"].iloc[-1]
    assert abs(rate / workloads.theta() - rules.LOAD_X) < 1e-9
    assert rules.MIN_INSTANCES <= workloads.static_default(name) <= rules.MAX_INSTANCES
