"""The JSQ index (fleetindex.py) against a brute-force exact scan on randomized instance states."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from simulations.engine.core.entities import DECODE, IDLE, Endpoint, Instance, decode_iters_done
from simulations.engine.fleet.fleetindex import EndpointIndex
from simulations.engine.scenario.config import DeploymentSpec, EndpointConfig

ROOT = Path(__file__).resolve().parents[2]


def _endpoint() -> Endpoint:
    d = json.loads((ROOT / "fixtures" / "scenarios" / "code_anchor.json").read_text())
    spec = DeploymentSpec.from_dict(d["deployments"]["llama2-70b/a100-80gb/tp8"], "d")
    return Endpoint(0, EndpointConfig(region="r", model=spec.model, deployment=spec), 0, 0)


def _brute_force(serving: list, t: float):
    """Every instance's exact remaining work at t; the least, first in serving order at ties."""
    best = None
    for inst in serving:
        k = decode_iters_done(inst, t) if inst.phase == DECODE and inst.seg_n > 1 else 0
        w = inst.work - inst.seg_B * k
        if best is None or w < best[0]:
            best = (w, inst, k)
    return best[1], best[2]


def _new_state(inst: Instance, t: float, rng: random.Random) -> None:
    """Idle with some work left, or a decode run started at or before t (work >= what the run takes)."""
    if rng.random() < 0.35:
        inst.phase = IDLE
        inst.seg_n = 0
        inst.work = rng.randrange(0, 60)  # a narrow range: many ties
        return
    n = rng.randrange(2, 400)
    B = rng.randrange(1, 12)
    d0 = rng.uniform(0.005, 0.05)
    inst.phase = DECODE
    inst.seg_n = n
    inst.seg_B = B
    inst.seg_d0 = d0
    # iterations lengthen with the context (a > 0), stay flat or (rarely) shorten, staying positive
    inst.seg_a = rng.choice([0.0, rng.uniform(0, 1e-4), -rng.uniform(0, 0.4) * d0 / (2 * n)])
    inst.seg_t0 = t - rng.choice([0.0, rng.uniform(0, 0.9) * _run_length(inst)])
    inst.work = B * n + rng.randrange(0, 60)


def _run_length(inst: Instance) -> float:
    return inst.seg_n * inst.seg_d0 + inst.seg_a * inst.seg_n * (inst.seg_n - 1)


@pytest.mark.parametrize("seed", range(6))
def test_the_index_picks_the_brute_force_instance_on_random_states(seed):
    rng = random.Random(seed)
    ep = _endpoint()
    n0 = rng.choice([3, 8, 40, 80])
    t = 0.0
    serving = ep.serving
    for i in range(n0):
        inst = Instance(i, ep, 0.0, 0.0, "initial")
        _new_state(inst, t, rng)
        serving.append(inst)
    ix = EndpointIndex(ep, t)
    next_iid = n0
    for step in range(1500):
        t += rng.choice([0.0, rng.expovariate(1 / 0.02), rng.expovariate(1 / 0.3)])
        for inst in serving:  # runs that ended by t: the instance's event comes first (a new state)
            if inst.phase == DECODE and inst.seg_n > 1 and inst.seg_t0 + _run_length(inst) <= t:
                _new_state(inst, t, rng)
                ix.touch(inst, t)
        got = ix.jsq(t)
        want = _brute_force(serving, t)
        assert got[0] is want[0] and got[1] == want[1], (seed, step, t)
        # the chosen instance gets the request (its work grows; a run is cut at the next iteration), and a few
        # others change state (their run ends, a new one starts, ...); the index is told of each change
        inst = got[0]
        inst.work += rng.randrange(1, 40)
        if inst.phase == DECODE and inst.seg_n > 1 and got[1] + 1 < inst.seg_n:
            inst.seg_n = got[1] + 1
        ix.touch(inst, t)
        for other in rng.sample(serving, min(len(serving), rng.randrange(0, 4))):
            _new_state(other, t, rng)
            ix.touch(other, t)
        if rng.random() < 0.02 and len(serving) > 1:  # an instance stops serving
            gone = serving.pop(rng.randrange(len(serving)))
            ix.remove(gone, t)
        if rng.random() < 0.02:  # one starts serving (last in serving order)
            new = Instance(next_iid, ep, t, t, "scale")
            next_iid += 1
            _new_state(new, t, rng)
            serving.append(new)
            ix.add(new, t)
