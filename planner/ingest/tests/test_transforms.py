"""Seeded transforms: assignment and splits, time scaling, thinning and replication."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.ingest.normalised import read_trace
from planner.ingest.pipeline import ingest
from planner.ingest.transforms import TransformOptions, parse_assignment

N = 4000


@pytest.fixture
def src(tmp_path):
    rng = np.random.default_rng(11)
    t = np.sort(rng.uniform(0, 3600, N))
    frame = pd.DataFrame(
        {
            "arrival_s": np.round(t, 6),
            "input_tokens": rng.integers(1, 5000, N),
            "output_tokens": rng.integers(1, 500, N),
            "session_id": [f"s{i}" for i in range(N)],
        }
    )
    path = tmp_path / "native.csv"
    frame.to_csv(path, index=False)
    return path


def run(src, tmp_path, name="out", chunk_rows=1_000_000, **options):
    ingest(src, tmp_path / f"{name}.parquet", options=options, chunk_rows=chunk_rows)
    return read_trace(tmp_path / f"{name}.parquet")


def test_a_fixed_value_is_assigned_to_every_request(src, tmp_path):
    df = run(src, tmp_path, region="us-east", model="llama2-70b", tier="NIW")
    assert set(df["region"]) == {"us-east"} and set(df["model"]) == {"llama2-70b"} and set(df["tier"]) == {"NIW"}


def test_ratios_split_requests_close_to_the_ratios_and_reproducibly(src, tmp_path):
    a = run(src, tmp_path, "a", tier="IW-F:0.5,IW-N:0.3,NIW:0.2", seed=4)
    b = run(src, tmp_path, "b", tier={"IW-F": 5, "IW-N": 3, "NIW": 2}, seed=4)
    c = run(src, tmp_path, "c", tier="IW-F:0.5,IW-N:0.3,NIW:0.2", seed=5)
    share = a["tier"].value_counts(normalize=True)
    for tier, p in (("IW-F", 0.5), ("IW-N", 0.3), ("NIW", 0.2)):
        assert abs(share[tier] - p) < 5 * np.sqrt(p * (1 - p) / N)  # 5 binomial standard deviations
    assert a["tier"].tolist() == b["tier"].tolist()  # same seed, same normalised ratios
    assert a["tier"].tolist() != c["tier"].tolist()


def test_results_do_not_depend_on_the_chunk_size(src, tmp_path):
    opts = {"region": "east:0.6,west:0.4", "rate": 2.5, "jitter_s": 5.0, "seed": 9}
    small = run(src, tmp_path, "small", chunk_rows=97, **opts)
    large = run(src, tmp_path, "large", **opts)
    pd.testing.assert_frame_equal(small, large)


def test_time_scaling_compresses_the_span(src, tmp_path):
    base = run(src, tmp_path, "base")
    half = run(src, tmp_path, "half", time_scale=0.5)
    assert half["arrival_s"].to_numpy() == pytest.approx(base["arrival_s"].to_numpy() * 0.5)


def test_thinning_keeps_about_the_rate_and_never_invents_requests(src, tmp_path):
    base = run(src, tmp_path, "base")
    thin = run(src, tmp_path, "thin", rate=0.25, seed=1)
    assert abs(len(thin) - 0.25 * N) < 5 * np.sqrt(N * 0.25 * 0.75)
    assert set(thin["session_id"]) <= set(base["session_id"])
    assert thin["arrival_s"].iloc[0] == 0.0  # the first kept request starts the trace


def test_replication_multiplies_the_rate_with_bounded_forward_jitter(src, tmp_path):
    base = run(src, tmp_path, "base")
    triple = run(src, tmp_path, "triple", rate=3, jitter_s=2.0, seed=2)
    assert len(triple) == 3 * N
    assert triple["arrival_s"].is_monotonic_increasing
    originals = triple[~triple["session_id"].str.contains("#")]
    assert originals["arrival_s"].to_numpy() == pytest.approx(base["arrival_s"].to_numpy())
    copies = triple[triple["session_id"].str.contains("#")].copy()
    copies["origin"] = copies["session_id"].str.split("#").str[0]
    delay = (
        copies["arrival_s"].to_numpy()
        - copies["origin"].map(dict(zip(base["session_id"], base["arrival_s"], strict=True))).to_numpy()
    )
    assert (delay >= 0).all() and (delay < 2.0).all()
    assert sorted(copies["session_id"].str.split("#").str[1].unique()) == ["1", "2"]


def test_a_fractional_rate_above_one_adds_the_fraction_on_average(src, tmp_path):
    df = run(src, tmp_path, "x", rate=1.5, seed=3)
    assert abs(len(df) - 1.5 * N) < 5 * np.sqrt(N * 0.25)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("east", {"kind": "fixed", "value": "east"}),
        ("east:0.75,west:0.25", {"kind": "split", "ratios": (("east", 0.75), ("west", 0.25))}),
        (
            '{"column": "Model", "map": {"ChatGPT": "gpt-35"}}',
            {"kind": "column", "column": "Model", "mapping": (("ChatGPT", "gpt-35"),)},
        ),
    ],
)
def test_cli_assignment_texts_are_understood(text, expected):
    a = parse_assignment(text, "region")
    for key, value in expected.items():
        assert getattr(a, key) == value


def test_options_round_trip_through_a_dict():
    opts = TransformOptions.from_dict({"tier": "IW-F:1,NIW:1", "rate": "2", "seed": "3"})
    assert TransformOptions.from_dict(opts.as_dict()) == opts
    assert opts.as_dict()["tier"] == {"IW-F": 0.5, "NIW": 0.5}
