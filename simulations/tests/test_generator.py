"""The one workload generator (simulations.engine.workload.generator): new kinds checked against hand computations,
the two original kinds pinned to the arrays they produced before the merge."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from simulations.engine import build_workload, parse_scenario
from simulations.engine.scenario.config import ScenarioError
from simulations.engine.workload.generator import GeneratorError, expected_requests, generate
from simulations.engine.workload.generator.lengths import fit_quantiles
from simulations.engine.workload.generator.slinfer import BUNDLED, bundled_traces

ROOT = Path(__file__).resolve().parents[2]
SHAREGPT_PROMPT = {"p5": 7, "p50": 52, "p95": 911}


def _digest(frame) -> str:
    """SHA-256 over every column (dtype, then bytes; names as fixed-width unicode), as recorded before the merge."""
    h = hashlib.sha256()
    for column in frame.columns:
        values = frame[column]
        a = values.astype(str).to_numpy() if str(values.dtype) == "category" else values.to_numpy()
        if a.dtype == object:
            a = np.asarray(a.astype(str))
        h.update(str(a.dtype).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def test_gamma_arrivals_hit_their_target_cv_within_3_percent_over_100000_arrivals():
    for cv in (0.5, 1.0, 2.0, 3.0):
        frame = generate({"kind": "gamma", "rate_rps": 5.0, "cv": cv, "requests": 100_000}, seed=11)
        gaps = np.diff(frame["arrival_s"].to_numpy())
        assert len(frame) == 100_000
        assert abs(gaps.std() / gaps.mean() / cv - 1) < 0.03, (cv, gaps.std() / gaps.mean())
        assert abs(gaps.mean() * 5.0 - 1) < 0.03  # mean gap 1 / rate


def test_poisson_at_a_fixed_rate_fills_its_window_with_exponential_gaps():
    frame = generate({"kind": "poisson", "rate_rps": 20.0, "duration_s": 3000, "start_s": 100}, seed=2)
    t = frame["arrival_s"].to_numpy()
    assert t[0] == 100.0 and t[-1] < 3100.0 and (np.diff(t) >= 0).all()
    # count ~ Poisson(60,000): within 4 standard deviations
    assert abs(len(t) - 60_000) < 4 * math.sqrt(60_000)
    gaps = np.diff(t)
    assert abs(gaps.std() / gaps.mean() - 1) < 0.03
    # memoryless: P(gap > 0.05 s) = exp(-1)
    assert abs((gaps > 0.05).mean() - math.exp(-1)) < 0.01


def test_a_batch_dump_puts_every_request_at_t0_and_a_mix_merges_streams_in_order():
    frame = generate({"kind": "batch", "requests": 500, "at_s": 42.0, "lengths": {
        "input": {"fixed": 128}, "output": {"fixed": 16}}})
    assert len(frame) == 500 and set(frame["arrival_s"]) == {42.0}
    assert set(frame["input_tokens"]) == {128} and set(frame["output_tokens"]) == {16}
    mix = generate({"kind": "mix", "seed": 4, "parts": [
        {"kind": "poisson", "rate_rps": 1.0, "duration_s": 100, "tier": "IW-F", "model": "a"},
        {"kind": "batch", "requests": 30, "at_s": 50, "tier": "NIW", "model": "b", "deadline_s": 3600}]})
    assert (np.diff(mix["arrival_s"].to_numpy()) >= 0).all()
    batch = mix[mix["tier"] == "NIW"]
    assert len(batch) == 30 and set(batch["arrival_s"]) == {50.0} and set(batch["deadline_s"]) == {3650.0}
    assert mix[mix["tier"] == "IW-F"]["deadline_s"].isna().all()
    with pytest.raises(GeneratorError, match="some parts name a model"):
        generate({"kind": "mix", "parts": [{"kind": "batch", "requests": 1, "model": "a"},
                                           {"kind": "batch", "requests": 1}]})


def test_lognormal_lengths_fitted_to_published_percentiles():
    # exact recovery when the percentiles are log-normal
    z = norm.ppf([0.05, 0.5, 0.95])
    fit = fit_quantiles([(0.05, 300 * math.exp(0.8 * z[0])), (0.5, 300.0), (0.95, 300 * math.exp(0.8 * z[2]))])
    assert fit.median == pytest.approx(300, rel=1e-9) and fit.sigma == pytest.approx(0.8, rel=1e-9)
    # ShareGPT-like prompts 7 / 52 / 911 by hand: mu = mean(ln q) (z sums to 0), sigma = sum(z ln q) / sum(z^2)
    lnq = np.log([7, 52, 911])
    fit = fit_quantiles([(0.05, 7.0), (0.5, 52.0), (0.95, 911.0)])
    assert fit.median == pytest.approx(math.exp(lnq.mean()), rel=1e-9)  # 69.22
    assert fit.sigma == pytest.approx((z * lnq).sum() / (z * z).sum(), rel=1e-9)  # 1.480
    assert fit.achieved[1] == pytest.approx(69.22, abs=0.01) and fit.sigma == pytest.approx(1.480, abs=1e-3)
    frame = generate({"kind": "batch", "requests": 200_000, "lengths": {
        "input": {"quantiles": SHAREGPT_PROMPT}, "output": {"fixed": 1}}}, seed=5)
    drawn = np.percentile(frame["input_tokens"], [5, 50, 95])
    for got, want in zip(drawn, fit.achieved, strict=True):
        assert abs(got / want - 1) < 0.05, (drawn, fit.achieved)


def test_empirical_lengths_are_resampled_as_pairs_or_fitted():
    source = {"input": [10, 20, 40, 80], "output": [1, 2, 3, 4]}
    pairs = generate({"kind": "batch", "requests": 1000, "lengths": {"empirical": source}}, seed=1)
    assert set(zip(pairs["input_tokens"], pairs["output_tokens"], strict=True)) <= {(10, 1), (20, 2), (40, 3), (80, 4)}
    fitted = generate({"kind": "batch", "requests": 50_000, "lengths": {"empirical": {**source, "fit": True}}}, seed=1)
    # ML log-normal of 10/20/40/80: median = geometric mean = 28.28, capped at the trace's maximum
    assert abs(np.median(fitted["input_tokens"]) / 28.28 - 1) < 0.03 and fitted["input_tokens"].max() <= 80


def test_the_slinfer_reader_maps_each_function_to_a_model_of_its_own():
    path = BUNDLED / "1_30_128_8_0_timestamps.json"
    functions = json.loads(path.read_text())
    assert "1_30_128_8_0" in bundled_traces() and len(functions) == 128
    frame = generate({"kind": "slinfer", "trace": "1_30_128_8_0"})
    assert len(frame) == sum(f["total_cnt"] for f in functions) == 9266
    counts = frame["model"].value_counts()
    assert len(counts) == 128 and counts["fn-005"] == len(functions[5]["timestamps"])
    first = frame[frame["model"] == "fn-000"].sort_values("arrival_s")
    assert first["input_tokens"].tolist() == [x for _, x in sorted(zip(functions[0]["timestamps"],
                                                                      functions[0]["input"], strict=True))]
    some = generate({"kind": "slinfer", "trace": "1_30_128_8_0", "functions": 2, "first_function": 10,
                     "models": ["llama-a", "llama-b"], "tier": "IW-N", "duration_s": 600})
    assert set(some["model"]) <= {"llama-a", "llama-b"} and some["arrival_s"].max() < 600
    assert set(some["tier"]) == {"IW-N"}
    with pytest.raises(GeneratorError, match="no bundled SLINFER trace"):
        generate({"kind": "slinfer", "trace": "nope"})
    with pytest.raises(GeneratorError, match="asks for 200 functions"):
        generate({"kind": "slinfer", "trace": "1_30_128_8_0", "functions": 200})


@pytest.mark.parametrize(("spec", "where", "text"), [
    ({"kind": "gamma", "rate_rps": 1, "cv": "2", "duration_s": 5}, "cv", "valid number"),
    ({"kind": "poisson", "rate_rps": 1, "duraton_s": 5}, "duraton_s", "did you mean 'duration_s'"),
    ({"kind": "poisson", "rate_rps": float("nan"), "duration_s": 5}, "rate_rps", "finite"),
    ({"kind": "poison", "rate_rps": 1}, "kind", "did you mean 'poisson'"),
    ({"kind": "poisson", "rate_rps": 1}, "spec", "exactly one of duration_s and requests"),
    ({"kind": "batch", "requests": 3, "lengths": {"input": {"quantiles": {"p5": 9, "p50": 5}}}},
     "lengths.input", "increase"),
    ({"kind": "mix", "parts": [{"kind": "gamma", "rate_rps": 1, "requests": 3, "cvv": 1}]}, "parts.0.cvv",
     "did you mean 'cv'"),
])
def test_bad_specs_name_the_key_and_say_how_to_fix_it(spec, where, text):
    with pytest.raises(GeneratorError) as info:
        generate(spec)
    err = info.value
    assert err.where == where and text in f"{err.message} {err.hint}", err.as_dict()


def test_the_request_cap_is_checked_before_generating():
    assert expected_requests({"kind": "gamma", "rate_rps": 100.0, "cv": 2, "duration_s": 86400}) == 8_640_000
    with pytest.raises(GeneratorError, match="limit"):
        generate({"kind": "poisson", "rate_rps": 1000.0, "duration_s": 366 * 86400})


def test_the_original_kinds_produce_the_arrays_they_produced_before_the_merge():
    # SHA-256 prefixes recorded on the pre-merge code (planner/ingest/synth.py, engine workload.synthesise)
    day = json.loads((ROOT / "fixtures/workloads/sageserve_day.json").read_text())
    assert _digest(generate(day, seed=3)) == "8cb1c8bbc917339c"
    scenario = parse_scenario(json.loads((ROOT / "fixtures/scenarios/small_reactive.json").read_text()))
    w = build_workload(scenario)
    h = hashlib.sha256()
    for a in (w.arrival_s, w.input_tokens, w.output_tokens, w.tier, w.model, w.region):
        h.update(str(a.dtype).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    assert h.hexdigest()[:16] == PINNED_SMALL_REACTIVE


PINNED_SMALL_REACTIVE = "701245f91f29cdf5"  # the diurnal kind on fixtures/scenarios/small_reactive.json


def test_a_scenario_can_use_any_kind_and_it_lands_on_the_fleets_names():
    scenario = json.loads((ROOT / "fixtures/scenarios/small_reactive.json").read_text())
    scenario["workload"] = {"synthetic": {"kind": "gamma", "rate_rps": 3.0, "cv": 2.0, "duration_s": 300,
                                          "seed": 9}}
    sc = parse_scenario(scenario)
    w = build_workload(sc)
    assert len(w) > 600 and set(w.model.tolist()) == {0} and set(w.region.tolist()) == {0}
    assert w.model_names == sorted({e.model for e in sc.fleet.endpoints})
    scenario["workload"] = {"synthetic": {"kind": "gamma", "rate_rps": 3.0, "duration_s": 300}}
    with pytest.raises(ScenarioError, match="workload.synthetic.cv"):
        build_workload(parse_scenario(scenario))


def test_the_generator_imports_without_django():
    code = ("import sys, simulations.engine.workload.generator, simulations.engine.workload.generator.slinfer; "
            "assert 'django' not in sys.modules, 'django imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_comparison_workload_can_synthesize_any_kind_but_never_read_a_path():
    from planner.comparisons.core.runner import synth_frame
    from simulations.engine.scenario.schema import Workload, synth_spec

    frame = synth_frame({"synthesize": "gamma_bursty"})  # a bundled spec of the new kind, by name
    assert 2000 < len(frame) < 3000 and set(frame["model"]) == {"llama-2-7b"}
    inline = {"kind": "poisson", "rate_rps": 1.0, "duration_s": 60,
              "lengths": {"empirical": {"path": "/etc/passwd"}}}
    with pytest.raises(ScenarioError) as info:
        synth_spec(Workload.model_validate({"synthesize": inline}))
    assert info.value.field == "workload.synthesize.lengths.empirical.path"
    with pytest.raises(ScenarioError) as info:
        parse_scenario({"fleet": {"endpoints": [{"deployment": "llama2-7b/a100-80gb/tp1"}]},
                        "workload": {"synthetic": {"kind": "slinfer", "path": "/etc/passwd"}}})
    assert "file paths are not accepted" in str(info.value)


def test_a_scenario_workload_spec_is_validated_once_per_run(monkeypatch):
    """The scenario schema parses workload.synthetic (a stream kind); the cap, the generator and the run reuse that
    model: the stream-spec parser never runs again, the scenario schema runs once."""
    import json
    from pathlib import Path

    from simulations.engine import parse_scenario, simulate
    from simulations.engine.scenario import schema
    from simulations.engine.workload.generator import spec as spec_module

    calls = {"stream_spec": 0, "scenario": 0}
    adapter = spec_module._ADAPTER

    class Counting:
        def validate_python(self, *args, **kwargs):
            calls["stream_spec"] += 1
            return adapter.validate_python(*args, **kwargs)

    real = schema.ScenarioInput.model_validate

    def counted(data, *args, **kwargs):
        calls["scenario"] += 1
        return real(data, *args, **kwargs)

    monkeypatch.setattr(spec_module, "_ADAPTER", Counting())
    monkeypatch.setattr(schema.ScenarioInput, "model_validate", counted)
    data = json.loads((Path(__file__).resolve().parents[2] / "fixtures/scenarios/preserve_routing.json").read_text())
    data["workload"]["synthetic"]["duration_s"] = 60.0
    result = simulate(parse_scenario(data))
    assert result.summary["requests"] > 0
    assert calls == {"stream_spec": 0, "scenario": 1}
