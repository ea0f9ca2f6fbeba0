"""The count search's probe order: galloping from the start, the jump to the ceiling when no count can help, and
which candidates are replayed on new seeds. Synthetic outcomes (no simulation): a group meets its target from a
given count on, so the exact answer is known and every probe can be counted."""

from __future__ import annotations

import itertools

import pytest

from planner.capacity.core.probe import parse_fleet_key
from planner.capacity.core.search import MemoEvaluator, min_counts

SEEDS = [1, 2, 3]


def threshold_evaluator(need: dict[str, int], hopeless: set[str] = frozenset()) -> MemoEvaluator:
    """Group g meets its target on every seed at ``need[g]`` instances or more; the groups in ``hopeless`` carry the
    hint that no count helps whenever they miss."""
    def run(key: str, seed: int) -> dict:
        fleet = parse_fleet_key(key)
        return {"seed": seed, "met": {g: n >= need[g] for g, n in fleet.items()},
                "hopeless": {g: n < need[g] and g in hopeless for g, n in fleet.items()}}
    return MemoEvaluator(run=run)


def ok(outcome: dict, g: str) -> bool:
    return outcome["met"][g]


def no_count_helps(outcome: dict, g: str) -> bool:
    return outcome["hopeless"][g]


def search(ev, need_groups, start, upper=20, **kw):
    groups = sorted(need_groups)
    return min_counts(ev, SEEDS, lower={g: 1 for g in groups}, upper={g: upper for g in groups}, start=start,
                      group_ok=ok, probability=0.9, hopeless=no_count_helps, **kw)


def fleets(found: dict) -> list[str]:
    return list(dict.fromkeys(r["fleet"] for r in found["rounds"]))


@pytest.mark.parametrize("need,start", itertools.product([1, 2, 3, 5, 8, 13, 19, 20, 21], [1, 2, 4, 7, 12, 20]))
def test_the_gallop_lands_on_the_exhaustive_minimum_from_any_start(need, start):
    ev = threshold_evaluator({"a/m": need})
    found = search(ev, {"a/m"}, {"a/m": start})
    if need > 20:
        assert found["feasible"] == {"a/m": False} and found["counts"] == {"a/m": 20}
    else:
        assert found["feasible"] == {"a/m": True} and found["counts"] == {"a/m": need}
        assert found["verified"]
    assert ev.calls == len(ev.known)  # never the same (fleet, seed) twice


def test_two_groups_each_land_on_their_minimum_and_a_good_start_resolves_in_two_fleets():
    need = {"a/m": 4, "b/m": 7}
    exact = search(threshold_evaluator(need), need, dict(need))
    assert exact["counts"] == need
    # the start meets, one fewer misses; the answer is the start's fleet again (a memo hit)
    assert fleets(exact) == ["a/m=4,b/m=7", "a/m=3,b/m=6"]
    low = search(threshold_evaluator(need), need, {"a/m": 3, "b/m": 6})
    assert low["counts"] == need and fleets(low) == ["a/m=3,b/m=6", "a/m=4,b/m=7"]
    high = search(threshold_evaluator(need), need, {"a/m": 5, "b/m": 9})
    # a: 5, 4, 2 (a miss: bracketed), 3; b: 9, 8, 6 (a miss), 7; then the answer
    assert high["counts"] == need and fleets(high) == ["a/m=5,b/m=9", "a/m=4,b/m=8", "a/m=2,b/m=6", "a/m=3,b/m=7",
                                                       "a/m=4,b/m=7"]


def test_the_gallop_steps_one_two_four_from_the_start():
    ev = threshold_evaluator({"a/m": 12})
    found = search(ev, {"a/m"}, {"a/m": 3})
    assert [parse_fleet_key(f)["a/m"] for f in fleets(found)] == [3, 4, 6, 10, 18, 14, 12, 11]
    ev = threshold_evaluator({"a/m": 2})
    found = search(ev, {"a/m"}, {"a/m": 16})
    assert [parse_fleet_key(f)["a/m"] for f in fleets(found)] == [16, 15, 13, 9, 1, 5, 3, 2]


def test_a_miss_no_count_fixes_sends_the_group_to_its_ceiling():
    """Misses no count can fix (a group's longest prompts alone exceed the TTFT target): after the first such miss
    the next probe is the ceiling, which settles that the group is infeasible."""
    found = search(threshold_evaluator({"a/m": 99, "b/m": 3}, hopeless={"a/m"}), {"a/m", "b/m"}, {"a/m": 2, "b/m": 2})
    assert [parse_fleet_key(f)["a/m"] for f in fleets(found)] == [2, 20]
    assert found["feasible"] == {"a/m": False, "b/m": True} and found["counts"] == {"a/m": 20, "b/m": 3}
    # without the hint the gallop walks up: 2, 3, 5, 9, 17, 20
    blind = search(threshold_evaluator({"a/m": 99}), {"a/m"}, {"a/m": 2})
    assert [parse_fleet_key(f)["a/m"] for f in fleets(blind)] == [2, 3, 5, 9, 17, 20]


def test_a_wrong_hint_costs_probes_not_the_answer():
    # the hint says hopeless, yet 6 instances meet: the ceiling meets, and the bracket (2, 20) is bisected
    found = search(threshold_evaluator({"a/m": 6}, hopeless={"a/m"}), {"a/m"}, {"a/m": 2})
    assert [parse_fleet_key(f)["a/m"] for f in fleets(found)][:2] == [2, 20]
    assert found["counts"] == {"a/m": 6} and found["feasible"] == {"a/m": True} and found["verified"]


def test_the_hint_counts_only_when_it_leaves_too_few_seeds_to_meet():
    """Five seeds at probability 0.8: one seed may miss, so a hint on one seed is not enough to jump."""
    def evaluator(hinted: int) -> MemoEvaluator:  # the hint on the first ``hinted`` seeds
        def run(key: str, seed: int) -> dict:
            n = parse_fleet_key(key)["a/m"]
            return {"met": {"a/m": n >= 4}, "hopeless": {"a/m": n < 4 and seed <= hinted}}
        return MemoEvaluator(run=run)

    for hinted, path in ((1, [2, 3, 5, 4]), (2, [2, 20, 11, 6, 4, 3])):
        found = min_counts(evaluator(hinted), [1, 2, 3, 4, 5], lower={"a/m": 1}, upper={"a/m": 20},
                           start={"a/m": 2}, group_ok=ok, probability=0.8, hopeless=no_count_helps)
        assert [parse_fleet_key(f)["a/m"] for f in fleets(found)] == path and found["counts"] == {"a/m": 4}


def attainment_evaluator(need: dict[str, int], attained) -> MemoEvaluator:
    """Group g meets its target (0.99) from ``need[g]`` instances on; below, its worst tier attains ``attained(n)``."""
    def run(key: str, seed: int) -> dict:
        fleet = parse_fleet_key(key)
        share = {g: 1.0 if n >= need[g] else attained(n) for g, n in fleet.items()}
        return {"seed": seed, "met": {g: n >= need[g] for g, n in fleet.items()},
                "hopeless": {g: False for g in fleet}, "share": share}
    return MemoEvaluator(run=run)


def gap(outcome: dict, g: str) -> tuple[float, float]:
    return 0.99 - outcome["share"][g], outcome["share"][g]


def test_a_stalled_group_goes_to_its_ceiling_after_its_second_miss():
    """Chiron's Bloom groups on the bench day: 98.4 % of IW-F at 2 instances, 98.5 % at 3, ... 98.6 % at 20, against
    99 %. Two misses 1.5x apart that close a tenth of the gap send the group to its ceiling."""
    stall = attainment_evaluator({"a/m": 99, "b/m": 3}, lambda n: 0.984 + 0.0001 * n)
    found = search(stall, {"a/m", "b/m"}, {"a/m": 2, "b/m": 2}, shortfall=gap)
    assert [parse_fleet_key(f)["a/m"] for f in fleets(found)] == [2, 3, 20]
    assert found["feasible"] == {"a/m": False, "b/m": True} and found["counts"] == {"a/m": 20, "b/m": 3}
    blind = search(attainment_evaluator({"a/m": 99}, lambda n: 0.984 + 0.0001 * n), {"a/m"}, {"a/m": 2})
    assert [parse_fleet_key(f)["a/m"] for f in fleets(blind)] == [2, 3, 5, 9, 17, 20]


def test_an_overloaded_group_or_one_closing_its_gap_keeps_galloping():
    # overloaded: most requests miss and the first extra instances close little of the gap
    overloaded = search(attainment_evaluator({"a/m": 12}, lambda n: 0.02 * n), {"a/m"}, {"a/m": 2}, shortfall=gap)
    # closing its gap: each extra instance closes more than a quarter of it
    closing = search(attainment_evaluator({"a/m": 12}, lambda n: 0.99 - 0.5 ** n), {"a/m"}, {"a/m": 2}, shortfall=gap)
    for found in (overloaded, closing):
        assert [parse_fleet_key(f)["a/m"] for f in fleets(found)] == [2, 3, 5, 9, 17, 13, 11, 12]
        assert found["counts"] == {"a/m": 12}


@pytest.mark.parametrize("need,start", itertools.product([1, 2, 3, 5, 8, 13, 19, 20, 21], [1, 2, 4, 7, 12, 20]))
def test_a_wrong_stall_costs_probes_not_the_answer(need, start):
    """Attainment flat below the answer (every pair of misses a stall): the jumps land on the same minimum."""
    ev = attainment_evaluator({"a/m": need}, lambda n: 0.985)
    found = search(ev, {"a/m"}, {"a/m": start}, shortfall=gap)
    assert found["counts"] == {"a/m": min(need, 20)} and found["feasible"] == {"a/m": need <= 20}
    assert ev.calls == len(ev.known)


def seeded_evaluator(need: int, strict_seed: int) -> MemoEvaluator:
    """One group meeting at ``need`` instances on every seed but ``strict_seed``, which needs one more."""
    def run(key: str, seed: int) -> dict:
        n = parse_fleet_key(key)["a/m"]
        return {"met": {"a/m": n >= need + (seed == strict_seed)}, "hopeless": {"a/m": False}}
    return MemoEvaluator(run=run)


@pytest.mark.parametrize("need,start,strict_seed", itertools.product([1, 2, 5, 9], [1, 3, 8], [1, 2, 3]))
def test_a_fleet_settled_on_its_first_seed_is_not_run_on_the_others_and_the_answer_stays(need, start, strict_seed):
    """All three seeds must meet (probability 0.9): a fleet whose open groups all miss on the first seed misses
    whatever the others say, so only that seed is run (but at the start); the answer is the one with every seed
    run."""
    full, early = seeded_evaluator(need, strict_seed), seeded_evaluator(need, strict_seed)
    kw = dict(lower={"a/m": 1}, upper={"a/m": 20}, start={"a/m": start}, group_ok=ok, probability=0.9)
    everything = min_counts(full, SEEDS, **kw)
    found = min_counts(early, SEEDS, early_miss=True, **kw)
    assert found["counts"] == everything["counts"] == {"a/m": need + 1}
    assert found["verified"] and fleets(found) == fleets(everything)
    first_needs = need + (strict_seed == 1)  # what the first seed needs
    # settled by the first seed; not the start, which is run on every seed at once
    misses = [f for f in fleets(found)[1:] if parse_fleet_key(f)["a/m"] < first_needs]
    assert len(early.known) == len(full.known) - 2 * len(misses)
    assert early.calls == len(early.known)
    # the answer's fleet is always run on every seed
    assert all((found["fleet"], s) in early.known for s in SEEDS)


def _found(key: str, cost: float, feasible: bool, order: int):
    from planner.capacity.core.driver import Sub, _Found

    return _Found(key, Sub(key=key, strategy={"strategy": "static", "key": key}, mode="static"), cost, {"a/m": 1.0},
                  feasible, order)


def _state(found: list) -> object:
    from planner.capacity.core.driver import State

    state = State()
    for f in found:
        state.subs[f.key] = {"sub": f.sub.__dict__, "bands": None, "load": None,
                             "search": {"fleet": "a/m=1", "feasible": {"a/m": f.feasible}, "rounds": []}}
    return state


@pytest.mark.parametrize("dominated_feasible", [False, True])
def test_a_dominated_candidate_is_replayed_on_new_seeds_only_if_it_could_be_accepted_there(monkeypatch,
                                                                                           dominated_feasible):
    """None of the undominated candidates is accepted on the new seeds (the cheap one is infeasible): a dominated
    candidate gets its band draws only if it is feasible on the search seeds, since an infeasible one is never
    accepted whatever its draws."""
    from planner.capacity.core import driver
    from planner.capacity.core.spec import parse_spec

    spec = parse_spec({"strategies": ["static"], "seeds": [1], "band_draws": 2})
    cheap, dear = _found("cheap", 1.0, False, 0), _found("dear", 2.0, dominated_feasible, 1)
    monkeypatch.setattr(driver, "_found", lambda spec, known, state: [cheap, dear])
    monkeypatch.setattr(driver, "dominated_by", lambda found: {"dear": "cheap"})
    state = _state([cheap, dear])
    bands = {driver.probe_id("cheap", "a/m=1", s): {"tiers": {"IW-F": [10, 5]}, "cost_usd": 1.0}
             for s in spec.band_seeds}
    driver.replay_new_seeds(spec, bands, state, {}, prune=True)
    wanted = {driver.split_probe_id(p)[0] for p in state.pending}
    if dominated_feasible:
        assert wanted == {"dear"} and "pruned" not in state.subs["dear"]
    else:
        assert wanted == set() and state.subs["dear"]["pruned"]["by"] == "cheap"


def test_the_probe_counts_the_prompts_no_count_serves_in_time():
    """One instance prefills at 1 ms per token and IW-F's TTFT target is about 0.2 s: the 300-token prompts miss
    it whatever the fleet (0.3 s alone), the 100-token ones need not. The hint counts exactly the former, and a
    group whose attainment cannot reach the target because of them is hopeless."""
    import numpy as np

    from planner.capacity.core.probe import hopeless, run_probe, unfixable_counts
    from planner.capacity.tests.test_search_core import queue_scenario
    from planner.comparisons.core.runner import engine_scenario_dict, load_workload, with_seed
    from simulations.engine import parse_scenario

    base = with_seed(queue_scenario({"empirical": {"input": [100] * 9 + [300], "output": [1] * 10}}, duration_s=60.0), 3)
    eng = parse_scenario(engine_scenario_dict(base, {"strategy": "static", "key": "s"}))
    workload = load_workload(base, eng)
    long_ones = int(np.count_nonzero(np.asarray(workload.input_tokens) > 201))
    assert 0 < long_ones < len(workload)
    assert unfixable_counts(workload, eng) == {"r1/m": {"IW-F": long_ones}}
    outcome = run_probe(base, {"strategy": "static"}, {"r1/m": 30}, 3)
    assert outcome["unfixable"] == {"r1/m": {"IW-F": long_ones}}
    n = outcome["groups"]["r1/m"]["IW-F"][0]
    assert outcome["groups"]["r1/m"]["IW-F"][1] <= n - long_ones  # thirty idle instances still miss them
    share = 1 - long_ones / n
    assert hopeless(outcome["groups"]["r1/m"], outcome["unfixable"]["r1/m"], {"IW-F": share + 0.01})
    assert not hopeless(outcome["groups"]["r1/m"], outcome["unfixable"]["r1/m"], {"IW-F": share - 0.01})


def test_a_whole_search_sends_a_group_its_long_prompts_sink_to_the_ceiling_at_once():
    """Through the driver and real probes: a tenth of the prompts take 0.3 s alone to prefill against a 0.2 s TTFT
    target, so 95 % of IW-F within target is out of reach at any count: after the start (2) the next fleet is the
    ceiling (30), which settles the group as infeasible."""
    from planner.capacity.core.driver import run_all, run_probe_inputs
    from planner.capacity.core.spec import parse_spec
    from planner.capacity.tests.test_search_core import queue_scenario

    base = queue_scenario({"empirical": {"input": [100] * 9 + [300], "output": [1] * 10}}, duration_s=60.0)
    spec = parse_spec({"strategies": ["static"], "targets": {"IW-F": 0.95}, "probability": 0.9, "seeds": [1, 2, 3],
                       "band_draws": 1})
    state, _ = run_all(spec, base, lambda inputs: run_probe_inputs(base, inputs), start={"static": {"r1/m": 2}})
    search = state.subs["static"]["search"]
    assert fleets(search) == ["r1/m=2", "r1/m=30"]
    assert search["feasible"] == {"r1/m": False} and search["counts"] == {"r1/m": 30}


def test_a_climbs_pending_head_comes_with_the_next_fleet_if_it_misses_as_spare_work():
    """While a climb's fleet runs on its first seed, the fleet the search asks for next if that seed misses is spare
    work; replaying with the spare probes known asks for nothing new when the guess was right."""
    from planner.capacity.core.search import Pending

    full = threshold_evaluator({"a/m": 12})
    search(full, {"a/m"}, {"a/m": 3}, early_miss=True)  # the climb: 3 (all seeds), 4, 6, 10 (first seed), 18, ...
    known = {k: v for k, v in full.known.items() if parse_fleet_key(k[0])["a/m"] == 3}
    with pytest.raises(Pending) as p:
        search(MemoEvaluator(known=dict(known)), {"a/m"}, {"a/m": 3}, early_miss=True)
    assert p.value.missing == [("a/m=4", 1)] and p.value.spare == [("a/m=6", 1)]
    known.update({k: full.known[k] for k in p.value.missing + p.value.spare})
    with pytest.raises(Pending) as p:
        search(MemoEvaluator(known=dict(known)), {"a/m"}, {"a/m": 3}, early_miss=True)
    assert p.value.missing == [("a/m=10", 1)] and p.value.spare == [("a/m=18", 1)]  # 6 was a memo hit


def test_early_band_draws_are_spare_work_for_the_found_candidates_none_dominates():
    from planner.capacity.core import driver
    from planner.capacity.core.spec import parse_spec

    spec = parse_spec({"strategies": ["static", "reactive-unified"], "seeds": [1, 2, 3], "band_draws": 2})
    state = driver.State(subs={
        "static": {"sub": driver.Sub(key="static", strategy={"strategy": "static", "key": "static"},
                                     mode="static").__dict__,
                   "search": {"fleet": "a/m=2", "feasible": {"a/m": True}, "rounds": [{"passed": {"a/m": 1.0}}]}},
        "reactive-unified": {"sub": driver.Sub(key="reactive-unified", strategy={"strategy": "reactive-unified",
                                                                                  "key": "reactive-unified"},
                                               mode="floor").__dict__, "search": None}})
    known = {f"static|a/m=2|{s}|1": {"cost_usd": 10.0} for s in (1, 2, 3)}
    assert driver.early_bands(spec, known, state) == [f"static|a/m=2|{s}|1" for s in spec.band_seeds]


@pytest.mark.parametrize("upper", [1, 2, 3, 5, 8, 13, 20, 33])
def test_the_admission_bound_covers_the_worst_count_search(upper):
    """Every start, every answer (or none within the ceiling), with the hopeless hint, a stall or neither: the
    fleets one group's search probes never exceed spec.search_fleets_bound, which the request bound uses."""
    from planner.capacity.core.spec import search_fleets_bound

    worst = 0
    for start, need, hint in itertools.product(range(1, upper + 1), range(1, upper + 2), ("none", "hopeless", "stall")):
        ev = attainment_evaluator({"a/m": need}, lambda n: 0.985) if hint == "stall" else threshold_evaluator(
            {"a/m": need}, hopeless={"a/m"} if hint == "hopeless" else set())
        search(ev, {"a/m"}, {"a/m": start}, upper=upper, early_miss=True,
               **({"shortfall": gap} if hint == "stall" else {}))
        worst = max(worst, len({key for key, _ in ev.known}))
    assert worst <= search_fleets_bound(upper)
