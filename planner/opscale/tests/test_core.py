"""Profiles, Alg. 1, Alg. 2, the baselines and the ILP, each against something independent."""

import itertools
import math
from dataclasses import dataclass, field

import pandas as pd
import pytest

from planner.opscale import profiles
from planner.opscale.ilp import solve_ilp
from planner.opscale.model import Evaluator, Options, Workload
from planner.opscale.placement import PlacementOptions, place
from planner.opscale.point import Slo, plan_point
from planner.opscale.scaling import greedy, model_level
from planner.opscale.spec import SpecError, parse_spec

RAW = profiles.DATA_DIR / "linear_ops.csv"


def test_a_measured_profile_returns_vidurs_median_times_the_layers_at_a_profiled_point():
    raw = pd.read_csv(RAW)
    row = raw[(raw.gpu == "a100") & (raw.model == "llama-3-8b") & (raw.tp == 1) & (raw.num_tokens == 1024)].iloc[0]
    prof = profiles.load_profile("llama-3-8b", "a100")
    assert prof.sources["mlp_up_proj"] == "measured" and prof.sources["attn"] == "derived"
    assert prof.time_s("mlp_up_proj", "prefill", 1, 1024) == pytest.approx(row["mlp_up_proj"] * 32 / 1e3)
    assert prof.time_s("mlp_down_proj", "decode", 1024, 500) == pytest.approx(row["mlp_down_proj"] * 32 / 1e3)


def test_models_without_a_table_are_derived_and_the_fits_report_their_held_out_error():
    prof = profiles.load_profile("qwen2-7b", "a100")
    assert prof.derived and set(prof.sources.values()) == {"derived"}
    rep = profiles.fit_report()
    assert rep["gemm"]["a100/llama-3-8b"]["how"] == "leave-one-model-out"
    assert all(v["mape"] < 0.25 for v in rep["gemm"].values())
    assert rep["attention"]["prefill_mape"] < 0.3 and rep["attention"]["decode_mape"] < 0.3
    # a derived 7B sits between the measured 7B-class models at the same point (sanity of the roofline)
    t = prof.time_s("mlp_up_proj", "prefill", 1, 1024)
    lo = profiles.load_profile("llama-2-7b", "a100").time_s("mlp_up_proj", "prefill", 1, 1024)
    hi = profiles.load_profile("llama-3-8b", "a100").time_s("mlp_up_proj", "prefill", 1, 1024) * 1.3
    assert lo < t < hi


def test_weights_add_up_to_the_published_parameter_count():
    prof = profiles.load_profile("llama-3-8b", "a100")
    params = sum(prof.weight_bytes(v) for v in prof.ops) / 2
    assert 7.0e9 < params < 8.1e9  # 8.03B minus lm_head (0.53B), which Vidur does not profile


@pytest.fixture(scope="module")
def ev40():
    return Evaluator(profiles.load_profile("llama-3-8b", "a100"), Workload("prefill", 40.0, 1024), Options())


def test_the_greedy_plan_meets_the_slo_and_no_single_replica_can_be_removed(ev40):
    slo = Slo().target(ev40)
    res = greedy(ev40, slo)
    assert res.feasible and res.latency_s <= slo
    for v, (r, b, p) in res.config.items():
        if r > 1:
            trial = dict(res.config)
            trial[v] = (r - 1, b, p)
            assert ev40.latency(trial) > slo or math.isinf(ev40.latency(trial))


def test_the_model_level_baseline_is_the_smallest_uniform_replica_count(ev40):
    slo = Slo().target(ev40)
    ml = model_level(ev40, slo)
    assert ml.feasible and ml.latency_s <= slo
    smaller = [ev40.latency({v: (ml.replicas - 1, b, 1) for v in ev40.ops}) for b in Options().batch_grid]
    assert ml.replicas == 1 or min(smaller) > slo


def test_the_ilp_is_never_worse_than_the_greedy_and_meets_the_slo(ev40):
    slo = Slo().target(ev40)
    ilp = solve_ilp(ev40, slo, time_limit_s=20)
    assert ilp.status == "optimal" and ilp.latency_s <= slo * (1 + 1e-9)
    assert ilp.cost <= greedy(ev40, slo).cost


@dataclass
class _Toy:
    """Three operators with hand-set service times: an independent brute-force case for the ILP."""

    gpu: profiles.Gpu = profiles.GPUS["a100"]
    arch: profiles.Arch = profiles.ARCHS["llama-3-8b"]
    ops: tuple = ("a", "b", "c")
    base: dict = field(default_factory=lambda: {"a": 0.010, "b": 0.030, "c": 0.005})

    def time_s(self, op, phase, b, length, p=1):
        return self.base[op] * (0.5 + 0.5 * b) / p**0.8

    def memory_bytes(self, *a, **k):
        return 1e9

    def sm_util(self, *a, **k):
        return 0.5


def test_the_ilp_finds_the_brute_force_optimum_of_a_hand_made_graph():
    ev = Evaluator(_Toy(), Workload("prefill", 60.0, 1), Options(batch_grid=(1, 2, 4), parallelism=(1, 2)))
    slo = 0.12
    best = math.inf
    grids = [[(r, b, p) for r in range(1, 12) for b in (1, 2, 4) for p in (1, 2)] for _ in ev.ops]
    for combo in itertools.product(*grids):
        cfg = dict(zip(ev.ops, combo, strict=True))
        if ev.latency(cfg) <= slo:
            best = min(best, ev.cost(cfg))
    ilp = solve_ilp(ev, slo)
    assert ilp.status == "optimal" and ilp.cost == best
    assert greedy(ev, slo).cost >= best


def test_placement_respects_device_memory_and_the_default_stream_never_colocates(ev40):
    slo = Slo().target(ev40)
    cfg = greedy(ev40, slo).config
    shared = place(ev40, cfg, slo, PlacementOptions(sharing=True))
    alone = place(ev40, cfg, slo, PlacementOptions(sharing=False))
    cap = ev40.profile.gpu.memory_gb * 1e9
    for pl in (shared, alone):
        assert all(d.mem <= cap for d in pl.devices)  # Eq. (7)
        assert pl.k_base >= 1
        replicas = sum(r * p for r, _b, p in pl.config.values())
        assert sum(len(d.replicas) for d in pl.devices) == replicas
    assert all(len(d.replicas) == 1 for d in alone.devices if not d.base)
    extras = sum(r - alone.k_base for r, _b, _p in alone.config.values())
    assert alone.gpus == alone.k_base + extras
    assert shared.gpus <= alone.gpus


def test_a_point_plan_reports_savings_against_the_model_level_plan():
    prof = profiles.load_profile("llama-3-8b", "a100")
    low = plan_point(prof, Workload("prefill", 2.0, 1024), Slo())
    assert low["model_level"]["gpus"] == 1 and low["operator_level"]["gpus"] == 1
    assert low["operator_level"]["savings"]["gpus"] == 0.0
    p = plan_point(prof, Workload("decode", 40.0, 1100, 200), Slo(), detail=True)
    assert p["feasible"] and p["operator_level"]["latency_s"] <= p["slo_s"]
    mem = sum(
        c["r"] * c["p"] * prof.memory_bytes(v, "decode", c["b"], 1100, c["p"])
        for v, c in p["operator_level"]["config"].items()
    )
    assert p["operator_level"]["memory_gb"] == pytest.approx(mem / 1e9)


def test_the_spec_is_strict_and_names_the_bad_field():
    ok = {"model": "llama-3-8b", "gpu": "a100", "workload": {"trace_id": 3}}
    assert parse_spec(ok).slo.scale == 5.0
    cases = [
        ({**ok, "modle": 1}, "modle"),
        ({**ok, "model": "gpt-9"}, "model"),
        ({**ok, "slo": {"ttft_s": float("nan")}}, "slo.ttft_s"),
        ({**ok, "slo": {"ttft_s": "1"}}, "slo.ttft_s"),
        ({**ok, "workload": {}}, "workload"),
        ({**ok, "workload": {"trace_id": 3, "path": "x"}}, "workload"),
        ({**ok, "options": {"units": "furlongs"}}, "options.units"),
    ]
    for data, where in cases:
        with pytest.raises(SpecError) as err:
            parse_spec(data)
        assert err.value.field == where, (data, err.value)


def test_tensor_parallel_row_layers_pay_vidurs_all_reduce_and_hand_offs_its_send_recv():
    raw = pd.read_csv(RAW)
    net = pd.read_csv(profiles.DATA_DIR / "network_a100_dgx.csv")
    row = raw[(raw.gpu == "a100") & (raw.model == "llama-3-8b") & (raw.tp == 2) & (raw.num_tokens == 1024)].iloc[0]
    prof = profiles.load_profile("llama-3-8b", "a100")
    # 1024 tokens x 4096 hidden = 4,194,304 fp16 elements, a size Vidur profiled exactly
    ar = net[
        (net.collective == "all_reduce")
        & (net.num_workers == 2)
        & (net.devices_per_node == 2)
        & (net["size"] == 4194304)
    ]
    assert len(ar) == 1
    expected = (row["attn_post_proj"] + ar["ms"].iloc[0]) * 32 / 1e3
    assert prof.time_s("attn_post_proj", "prefill", 1, 1024, 2) == pytest.approx(expected)
    assert prof.time_s("attn_pre_proj", "prefill", 1, 1024, 2) == pytest.approx(row["attn_pre_proj"] * 32 / 1e3)
    sr = net[(net.collective == "send_recv") & (net.devices_per_node == 2) & (net["size"] == 4194304)]
    assert prof.handoff_s("add", "prefill", 1, 1024) == pytest.approx(sr["ms"].iloc[0] * 32 / 1e3)
