"""The NIW queue manager's release gated by load (IW input TPS per instance against theta) instead
of the memory signal, and LT's beta budgeted on the NIW actually released instead of the NIW that arrived."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from simulations.engine import simulate
from simulations.engine.policies import AUTOSCALERS
from simulations.engine.policies.niw_queue import NIWQueueManager
from simulations.engine.scenario.config import TIER_INDEX, ScenarioError
from simulations.tests.engine_helpers import FakeView, scenario, workload

IW, NIW = TIER_INDEX["IW-F"], TIER_INDEX["NIW"]


def _sim(n_niw, iw_tokens, *, utilisation=0.0, theta=100.0, serving=1):
    """One endpoint (KV signal ``utilisation``), ``n_niw`` NIW requests (rids 0..) then IW requests of the given
    input tokens (rids n_niw..)."""
    delivered = []
    ep = SimpleNamespace(eid=0, model_idx=0, pool="all", serving=[object()] * serving, n_serving=serving,
                         utilisation=utilisation, region_idx=0, spec=SimpleNamespace(theta_tps=theta, name="d"),
                         model="m", region="r")
    n = n_niw + len(iw_tokens)
    sim = FakeView(endpoints=[ep], arrivals=[0.0] * n, regions=[0] * n, models=[0] * n,
                   tiers=[NIW] * n_niw + [IW] * len(iw_tokens), prompts=[500] * n_niw + list(iw_tokens),
                   send=lambda rid, e, now: delivered.append((rid, e.eid, now)))
    return sim, ep, delivered


def _tick(gate, iw_share, *, t=60.0, serving=1, utilisation=0.0):
    # IW input over the last 60 s worth ``iw_share`` of theta (100 TPS per instance): 60 requests, one a second
    tok = int(round(iw_share * 100.0 * serving))
    sim, ep, delivered = _sim(10, [tok] * 60, utilisation=utilisation, serving=serving)
    q = NIWQueueManager({"niw_gate": gate})
    q.bind(sim)
    for rid in range(10):
        q.hold(sim, rid, 0.0)
    for k in range(60):
        q.note_request(sim, ep, 10 + k, t - 59.5 + k)
    q.on_tick(sim, t)
    return len(delivered), q


def test_the_load_gate_releases_by_iw_tps_against_theta_whatever_the_memory_signal():
    # paper-text thresholds on the load: none at >= 60 % of theta, one under 60 %, two under 50 %
    assert _tick("load", 0.70)[0] == 0
    assert _tick("load", 0.55)[0] == 1
    assert _tick("load", 0.30)[0] == 2
    # the memory signal no longer matters: a full KV with a light load releases two ...
    assert _tick("load", 0.30, utilisation=0.95)[0] == 2
    # ... and the default KV gate ignores the load
    assert _tick("kv", 0.70)[0] == 2 and _tick("kv", 0.30, utilisation=0.95)[0] == 0
    # theta counts per serving instance: 70 % of one instance's theta on two instances is 35 %
    assert _tick("load", 0.35, serving=2)[0] == 2


def test_the_load_window_forgets_old_iw_requests():
    n, q = _tick("load", 0.70)
    assert n == 0
    ep = q.view.endpoints[0]
    assert q.load(ep, 60.0) == pytest.approx(0.70, abs=0.01)
    assert q.load(ep, 200.0) == 0.0  # 60 s later nothing is left in the window


def test_the_load_gate_needs_theta_and_the_options_are_checked():
    sim, _ep, _d = _sim(1, [], theta=0.0)
    with pytest.raises(ScenarioError, match="theta_tps"):
        NIWQueueManager({"niw_gate": "load"}).bind(sim)
    with pytest.raises(ScenarioError, match="niw_gate"):
        NIWQueueManager({"niw_gate": "tps"})
    with pytest.raises(ScenarioError, match="beta_basis"):
        AUTOSCALERS["lt-i"]({"beta_basis": "admitted"}, np.random.default_rng(0))


def test_beta_on_released_niw_counts_what_the_queue_sent_to_each_endpoint():
    sim, ep, _d = _sim(4, [])
    lt = AUTOSCALERS["lt-i"]({"beta_basis": "released", "niw_queue": True}, np.random.default_rng(0))
    lt.queue.bind(sim)
    lt.eps = [ep]
    assert lt.queue.track_released
    for rid, t in ((0, 100.0), (1, 3700.0), (2, 3800.0)):
        lt.queue.release(sim, rid, ep, t)
    # at t=4000 the last hour holds the releases at 3700 and 3800: 2 x 500 tokens / 3600 s
    assert lt._niw_past_hour(sim, 4000.0) == {("m", "r"): pytest.approx(1000 / 3600)}
    # the default ("arrived") reads the observed arrivals instead, and does not track releases
    default = AUTOSCALERS["lt-i"]({"niw_queue": True}, np.random.default_rng(0))
    assert default.beta_basis == "arrived" and not default.queue.track_released


def test_an_iw_stream_at_theta_holds_niw_until_it_passes_with_the_load_gate():
    # theta 500 input TPS; IW: one 500-token prompt a second for 100 s (100 % of theta once the 60 s window is
    # full, < 1 % of the KV; each prefill takes 0.6 s); one NIW request at t=70. The KV gate releases it at once; the load gate only when
    # the trailing load falls under 60 % of theta, ~24 s after the stream ends (t ~ 124)
    # (a last IW request at t=300 keeps the clock ticking: the loop stops ticking once nothing but held requests is
    # left)
    n = 101
    arr = [float(i) for i in range(n - 1)] + [300.0, 70.0]
    order = np.argsort(arr, kind="stable")
    arr = np.asarray(arr)[order]
    tiers = np.asarray([IW] * n + [NIW])[order]
    wl = workload(arr.tolist(), [500] * (n + 1), [5] * (n + 1), tiers=tiers.tolist())
    runs = {}
    for gate in ("kv", "load"):
        sc = scenario(spec={"theta_tps": 500.0}, strategy={"autoscaler": "reactive-unified-niwq",
                                                             "params": {"niw_gate": gate, "scale_in_below": 0.0}})
        runs[gate] = simulate(sc, wl)
    niw = int(np.flatnonzero(tiers == NIW)[0])
    assert runs["kv"].summary["completed"] == runs["load"].summary["completed"] == n + 1
    assert runs["kv"].requests["ttft_s"][niw] < 5.0
    assert 124.0 - 70.0 <= runs["load"].requests["ttft_s"][niw] < 130.0 - 70.0
