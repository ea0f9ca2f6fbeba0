""""Done when" shape checks, computed from the sweeps (planner.opscale.reproduce), not hard-coded.

Items our model does not reproduce are strict xfails with the measured reason, so they flip loudly if a
change makes them pass; docs/reproduction_opscale.md explains each."""

import pytest

from planner.opscale.model import Options
from planner.opscale.point import Slo
from planner.opscale.reproduce import checks, fig10, fig11, fig12, greedy_gap


@pytest.fixture(scope="module")
def computed():
    slo, opts = Slo(), Options()
    f11, f10 = fig11(opts, slo), fig10(opts, slo)
    gap = greedy_gap(opts, slo)
    return {c["item"]: c for c in checks(f11, f10, {}, gap)}, f11, f10, gap


def _check(computed, prefix):
    found = [c for item, c in computed[0].items() if item.startswith(prefix)]
    assert len(found) == 1, prefix
    return found[0]


def test_fig11_operator_level_saves_no_gpus_below_20_qps(computed):
    c = _check(computed, "Fig. 11: GPU savings <= 5 %")
    assert c["met"], c


def test_fig11_the_savings_peak_between_20_and_40_percent_for_30_to_60_qps(computed):
    c = _check(computed, "Fig. 11: peak GPU savings")
    assert c["met"], c


def test_fig10_memory_savings_reach_half_at_32k_context(computed):
    c = _check(computed, "Fig. 10: memory savings")
    assert c["met"], c
    mem = [r["memory"] for r in computed[2]]
    assert mem[-1] >= mem[0]  # grows with the context length


def test_the_greedy_is_within_10_percent_of_the_ilp_optimum_on_average(computed):
    gap = computed[3]
    assert gap["all_optimal"], gap
    assert _check(computed, "greedy within")["met"]
    assert all(r["greedy_cost"] >= r["ilp_cost"] for r in gap["rows"])


def test_the_default_stream_saves_memory_and_energy_but_no_gpus(computed):
    c = _check(computed, "default stream")
    assert c["met"], c


@pytest.mark.xfail(
    strict=True,
    reason="measured (GPU-seconds over the trace, fallback off): Azure code 2023 prefill 0 % vs decode 0 % "
    "(3.2 QPS: one instance in every window); Mooncake prefill -25 % vs decode +31 % (15K-token prefills saturate "
    "the SMs, so extras cannot share GPUs). Not met under any other reading either: upscale=efficiency and "
    "band=refine give the same figures, decode_length=one Mooncake -25 % / 0 %, paper units -24 % / 0 %; the mean "
    "window (-21 % / +22 %) and the best window (+50 % / +50 %) instead of GPU-seconds do not flip it. With no "
    "interference (kappa 0) Mooncake meets it (+68 % / +31 %) but Azure code 2023 stays at 0 % / 0 %",
)
def test_fig12_prefill_saves_at_least_twice_what_decode_saves_on_both_traces():
    res = fig12()
    found = [c for c in checks([], [], res, {"mean_gap": None}) if c["item"].startswith("Fig. 12")]
    assert len(found) == 2 and all(c["met"] for c in found), found


@pytest.mark.parametrize("reading", [{"decode_length": "one"}, {"upscale": "efficiency"}])
def test_fig12_readings_still_fall_short_and_the_fallback_is_off_in_the_reproduction(reading):
    """The readings the paper's text leaves open do not flip Fig. 12 (docs/reproduction_opscale.md lists each);
    this pins the measured figures so a change that moves them is noticed."""
    res = fig12(options=reading)
    moon = res["mooncake_synthetic"]
    assert moon["prefill"]["gpu_s"] < 0  # the paper's algorithm, not the product's fallback, is measured
    assert res["azure_code_2023"]["prefill"]["gpu_s"] == 0 == res["azure_code_2023"]["decode"]["gpu_s"]
    assert moon["per_window"]["prefill"]["windows"] == 18
