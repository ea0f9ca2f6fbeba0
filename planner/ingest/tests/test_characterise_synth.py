"""Characterisation against hand-computed figures; the synthesiser against its spec."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.ingest.characterise import characterise
from planner.ingest.normalised import read_trace, write_frame
from planner.ingest.synth import SpecError, synthesize

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "workloads"


def test_characterisation_matches_a_hand_computed_trace(tmp_path):
    # Five requests at 0, 10, 20, 70 and 130 s; span 130 s -> three 1-minute bins holding 3, 1, 1.
    frame = pd.DataFrame(
        {
            "arrival_s": [0.0, 10.0, 20.0, 70.0, 130.0],
            "input_tokens": [100, 200, 300, 400, 500],
            "output_tokens": [1, 2, 3, 4, 5],
            "region": ["r1", "r1", "r2", "r1", "r1"],
            "model": "m",
            "tier": "IW-F",
        }
    )
    write_frame(frame, tmp_path / "t.parquet")
    result = characterise(tmp_path / "t.parquet", batch_rows=2)  # tiny batches exercise the carry-over
    s = result["summary"]
    assert s["requests"] == 5 and s["span_s"] == 130.0
    assert s["rps_mean"] == pytest.approx(5 / 130)
    assert s["peak_to_mean"]["60s"] == pytest.approx(3 / (5 / 3))  # max 3 over mean 5/3
    assert s["peak_to_mean"]["900s"] == pytest.approx(1.0)
    gaps = np.array([10, 10, 50, 60.0])
    assert s["interarrival_cv"] == pytest.approx(gaps.std() / gaps.mean())
    assert s["input_tokens"]["p50"] == 300 and s["input_tokens"]["total"] == 1500 and s["output_tokens"]["max"] == 5
    series = result["series"]["60"]
    assert series["t_s"] == [0, 60, 120]
    assert series["groups"]["all"]["rps"] == pytest.approx([3 / 60, 1 / 60, 1 / 60])
    assert series["groups"]["all"]["input_tps"] == pytest.approx([600 / 60, 400 / 60, 500 / 60])
    r1 = next(g for g in s["groups"] if g["region"] == "r1")
    assert r1["requests"] == 4 and r1["share"] == 0.8
    assert r1["interarrival_cv"] == pytest.approx(np.std([10, 60, 60.0]) / np.mean([10, 60, 60.0]))
    assert result["series"]["60"]["groups"]["r2|m|IW-F"]["rps"] == pytest.approx([1 / 60, 0, 0])
    cdf = result["cdf"]["all"]["input"]
    assert cdf["x"] == [100, 200, 300, 400, 500] and cdf["p"] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])


def test_token_percentiles_are_within_two_percent_of_exact(tmp_path):
    rng = np.random.default_rng(0)
    n = 20000
    tokens = np.round(np.exp(rng.normal(7.5, 1.2, n))).astype(int)
    frame = pd.DataFrame(
        {
            "arrival_s": np.arange(n, dtype=float),
            "input_tokens": tokens,
            "output_tokens": 1,
            "region": "r",
            "model": "m",
            "tier": "IW-F",
        }
    )
    write_frame(frame, tmp_path / "t.parquet")
    got = characterise(tmp_path / "t.parquet")["summary"]["input_tokens"]
    for q in (50, 90, 95, 99):
        exact = np.percentile(tokens, q, method="inverted_cdf")
        assert abs(got[f"p{q}"] - exact) <= 0.02 * exact + 1


@pytest.fixture(scope="module")
def week():
    return synthesize(json.loads((FIXTURES / "sageserve_week.json").read_text()))


def test_the_sageserve_week_has_three_regions_four_models_and_72_percent_iw(week):
    assert sorted(week["region"].unique()) == ["us-central", "us-east", "us-west"]
    assert week["model"].nunique() == 4 and set(week["tier"]) == {"IW-F", "IW-N", "NIW"}
    iw = (week["tier"] != "NIW").mean()
    assert 0.70 < iw < 0.74
    assert week["arrival_s"].iloc[0] == 0.0 and week["arrival_s"].is_monotonic_increasing
    assert week["arrival_s"].iloc[-1] < 7 * 86400
    per_region = week["region"].value_counts()
    assert per_region["us-east"] > per_region["us-central"] > per_region["us-west"]  # SageServe W7


def test_iw_is_diurnal_with_a_weekend_dip_and_niw_is_flat(week):
    day = (week["arrival_s"] // 86400).astype(int)
    hour = ((week["arrival_s"] % 86400) // 3600).astype(int)
    iwf = week[(week["tier"] == "IW-F") & (day < 5)]
    by_hour = iwf.groupby(hour[iwf.index]).size()
    assert by_hour.max() / by_hour.min() > 4  # amplitude 0.8: (1.8 / 0.2) before noise
    assert by_hour.idxmax() in (14, 15, 16)
    daily = week[week["tier"] == "IW-F"].groupby(day[week["tier"] == "IW-F"]).size()
    assert daily[[5, 6]].mean() / daily[[0, 1, 2, 3, 4]].mean() == pytest.approx(0.35, abs=0.05)
    niw = week[week["tier"] == "NIW"]
    niw_hour = niw.groupby(hour[niw.index]).size()
    assert niw_hour.max() / niw_hour.min() < 2.5


def test_synthesis_is_reproducible_from_the_seed():
    spec = json.loads((FIXTURES / "sageserve_day.json").read_text())
    a, b, c = synthesize(spec), synthesize(spec), synthesize(spec, seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) != len(c) or not np.array_equal(a["arrival_s"], c["arrival_s"])


def test_token_lengths_can_come_from_an_uploaded_trace(tmp_path):
    frame = pd.DataFrame(
        {
            "arrival_s": [0.0, 1.0, 2.0],
            "input_tokens": [111, 222, 333],
            "output_tokens": [1, 2, 3],
            "region": "r",
            "model": "m",
            "tier": "IW-F",
        }
    )
    write_frame(frame, tmp_path / "src.parquet")
    spec = {
        "days": 1,
        "total_rps": 0.05,
        "regions": ["r"],
        "models": ["m"],
        "tiers": {"IW-F": {}},
        "tokens": {"empirical": {"path": str(tmp_path / "src.parquet")}},
    }
    df = synthesize(spec, seed=3)
    pairs = set(zip(df["input_tokens"], df["output_tokens"], strict=True))
    assert pairs <= {(111, 1), (222, 2), (333, 3)} and len(pairs) == 3  # input and output sampled together
    assert abs(len(df) - 0.05 * 86400) < 5 * np.sqrt(0.05 * 86400)


def test_the_synthesised_frame_writes_and_reads_as_a_normalised_trace(tmp_path):
    spec = json.loads((FIXTURES / "sageserve_day.json").read_text())
    df = synthesize(spec)
    totals = write_frame(df, tmp_path / "s.parquet")
    back = read_trace(tmp_path / "s.parquet")
    assert totals.requests == len(back) == len(df)
    niw = back[back["tier"] == "NIW"]
    assert (niw["deadline_s"] - niw["arrival_s"]).to_numpy() == pytest.approx(86400.0)
    assert back[back["tier"] != "NIW"]["deadline_s"].isna().all()


@pytest.mark.parametrize(
    "spec, message",
    [
        ([], "must be a JSON object"),
        ({"regions": ["a"], "models": ["m"]}, "tiers: is required"),
        ({"regions": ["a"], "models": ["m"], "tiers": {"GOLD": {}}}, "tiers.GOLD: must be one of 'IW-F'"),
        ({"regions": ["a"], "models": ["m"], "tiers": {"NIW": {"share": -1}}}, "share"),
        ({"regions": ["a"], "models": ["m"], "tiers": {"NIW": {}}, "total_rps": 1e6, "days": 30}, "limit"),
        ({"regions": ["a"], "models": ["m"], "tiers": {"NIW": {}}, "colour": 1}, "unknown key"),
        (
            {"regions": ["a"], "models": ["m"], "tiers": {"NIW": {}}, "overrides": [{"region": "b", "factor": 2}]},
            "not in",
        ),
    ],
)
def test_bad_specs_name_the_key(spec, message):
    with pytest.raises(SpecError, match=message):
        synthesize(spec)
