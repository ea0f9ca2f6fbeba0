from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.catalogue.fit import (
    decode_context,
    decode_time,
    fit_decode,
    fit_group,
    fit_prefill,
    flag_rows,
    prefill_time,
    split_mask,
)
from planner.catalogue.perfcsv import load_perf_table

PROFILES = Path(__file__).resolve().parents[3] / "fixtures" / "hardware" / "sageserve"


def _group(model, hw, tp, fname="perf_model.csv"):
    rows = load_perf_table(PROFILES / fname).rows
    return rows[(rows.model == model) & (rows.hardware == hw) & (rows.tp == tp)].reset_index(drop=True)


def _synthetic(prefill, decode, noise=0.0, seed=1):
    rng = np.random.default_rng(seed)
    recs = []
    for p, b, n in [
        (128, 1, 128),
        (256, 1, 128),
        (512, 1, 128),
        (1024, 1, 128),
        (2048, 1, 128),
        (4096, 1, 128),
        (512, 2, 128),
        (512, 4, 128),
        (512, 8, 128),
        (512, 16, 128),
        (512, 1, 1024),
        (512, 1, 4096),
    ]:
        for _ in range(5):
            t = b * p
            pt = prefill_time(prefill, t) * (1 + noise * rng.standard_normal())
            tt = decode_time(decode, b, b * (p + (n + 1) / 2)) * (1 + noise * rng.standard_normal())
            recs.append(
                {
                    "model": "m",
                    "hardware": "g",
                    "tp": 8,
                    "prompt_size": p,
                    "batch_size": b,
                    "token_size": n,
                    "prompt_time_s": pt,
                    "token_time_s": tt,
                    "e2e_s": pt + n * tt,
                    "line": len(recs) + 2,
                }
            )
    return pd.DataFrame(recs)


@pytest.mark.parametrize("loss", ["l1", "l2"])
def test_the_fit_recovers_known_coefficients_from_noise_free_data(loss):
    pre = {"c0": 0.03, "c1": 1.2e-4, "c2": 4e-9}
    dec = {"c0": 0.044, "c_batch": 2.5e-4, "c_ctx": 2e-7}
    res = fit_group(_synthetic(pre, dec), loss=loss)
    for k, v in pre.items():
        assert res.prefill[k] == pytest.approx(v, rel=1e-3)
    for k, v in dec.items():
        assert res.decode[k] == pytest.approx(v, rel=1e-3)
    assert res.report["heldout"]["prompt_time"]["median_ape"] < 1e-6


def test_mean_decode_context_of_a_measured_row_is_batch_times_prompt_plus_half_the_output():
    # B=4 requests of 512 prompt tokens generating 128 tokens: contexts 513..640, mean 576.5 per request
    frame = pd.DataFrame({"batch_size": [4], "prompt_size": [512], "token_size": [128]})
    assert decode_context(frame)[0] == pytest.approx(4 * 576.5)


def test_fitted_coefficients_are_never_negative():
    pre = fit_prefill([100, 200, 400], [0.5, 0.4, 0.3])  # decreasing: an unconstrained fit would go negative
    dec = fit_decode([1, 2, 4], [100, 200, 400], [0.05, 0.04, 0.03])
    assert min(pre.values()) >= 0 and min(dec.values()) >= 0


def test_the_split_holds_out_a_fifth_of_the_rows_reproducibly():
    frame = _group("llama2-70b", "a100-80gb", 8)
    a, b = split_mask(frame, split="rows", holdout=0.2, seed=0), split_mask(frame, split="rows", holdout=0.2, seed=0)
    assert a.sum() == 21 and (a == b).all()
    c = split_mask(frame, split="configs", holdout=0.2, seed=0)
    held_cfgs = {tuple(r) for r in frame.loc[c, ["prompt_size", "batch_size", "token_size"]].to_numpy()}
    train_cfgs = {tuple(r) for r in frame.loc[~c, ["prompt_size", "batch_size", "token_size"]].to_numpy()}
    assert held_cfgs and not held_cfgs & train_cfgs


def test_the_collapsed_batch_64_row_of_llama2_70b_tp2_is_flagged_and_not_fitted():
    # prompt 512 x batch 64 takes 794 ms after 6,633 ms at batch 32, and e2e is 17x prompt + n*token.
    # The KV cache of TP2 (18,432 tokens, see test_capacity) cannot hold 32 x 640 or 64 x 640 tokens, and
    # exactly those two batch sizes have e2e well above prompt + n*token (preemption).
    frame = _group("llama2-70b", "a100-80gb", 2)
    flags = flag_rows(frame)
    for i, f in enumerate(flags):
        b = frame["batch_size"].iat[i]
        assert ("prompt_time:non_monotonic" in f) == (b == 64)
        assert ("e2e:inconsistent" in f) == (b >= 32)


def test_a_hand_made_non_monotonic_configuration_is_the_one_flagged():
    rows = []
    for p, pt in [(128, 0.05), (256, 0.06), (512, 0.09), (1024, 0.02), (2048, 0.30)]:  # 1024 is impossible
        for _ in range(3):
            rows.append(
                {
                    "model": "m",
                    "hardware": "g",
                    "tp": 1,
                    "prompt_size": p,
                    "batch_size": 1,
                    "token_size": 128,
                    "prompt_time_s": pt,
                    "token_time_s": 0.04,
                    "e2e_s": np.nan,
                    "line": len(rows) + 2,
                }
            )
    flags = flag_rows(pd.DataFrame(rows))
    flagged = {rows[i]["prompt_size"] for i, f in enumerate(flags) if "prompt_time:non_monotonic" in f}
    assert flagged == {1024}


def test_noisy_and_outlier_repeats_are_flagged():
    rows = []
    for v in (0.10, 0.10, 0.10, 0.10, 0.20):  # one repeat 100 % off: an outlier, and the config is noisy
        rows.append(
            {
                "model": "m",
                "hardware": "g",
                "tp": 1,
                "prompt_size": 512,
                "batch_size": 1,
                "token_size": 128,
                "prompt_time_s": v,
                "token_time_s": 0.04,
                "e2e_s": np.nan,
                "line": len(rows) + 2,
            }
        )
    flags = flag_rows(pd.DataFrame(rows))
    assert all("prompt_time:noisy" in f for f in flags)
    assert ["prompt_time:outlier" in f for f in flags] == [False] * 4 + [True]


def test_llama3_batched_prompt_rows_that_do_not_grow_with_batch_tokens_are_flagged():
    frame = _group("Llama-3.1-8B", "a100-80gb", 2, "Llama-3.1-8B-tp-2.csv")
    flags = flag_rows(frame)
    flagged_batches = {int(frame["batch_size"].iat[i]) for i, f in enumerate(flags) if "prompt_time:non_monotonic" in f}
    assert {8, 16, 32} <= flagged_batches and 1 not in flagged_batches


@pytest.mark.parametrize(
    "model, hw, tp, fname",
    [
        ("llama2-70b", "a100-80gb", 8, "perf_model.csv"),
        ("llama2-70b", "h100-80gb", 8, "perf_model.csv"),
        ("bloom-176b", "h100-80gb", 8, "perf_model.csv"),
        ("Llama-3.1-8B", "a100-80gb", 2, "Llama-3.1-8B-tp-2.csv"),
    ],
)
def test_held_out_decode_error_is_within_the_5_percent_target(model, hw, tp, fname):
    res = fit_group(_group(model, hw, tp, fname))
    held = res.report["heldout"]["token_time"]
    assert held["n"] >= 15
    assert held["median_ape"] < 0.05


def test_held_out_prefill_median_error_on_the_llama2_70b_tables_is_within_5_percent():
    # The measured figure (docs/hardware.md); p90 is NOT within 5 %: batched and single long prompts of the
    # same total tokens differ by up to 35 %, which c0 + c1*T + c2*T^2 cannot represent.
    for hw in ("a100-80gb", "h100-80gb"):
        for tp in (2, 4):
            held = fit_group(_group("llama2-70b", hw, tp)).report["heldout"]["prompt_time"]
            assert held["median_ape"] < 0.05, (hw, tp, held)
