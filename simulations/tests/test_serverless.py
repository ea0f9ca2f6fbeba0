"""The SLINFER shared-node executor on tiny cases computed by hand, plus invariants on a trace slice.

Hand values use the artefact's llama-2-7b tables (fixtures/hardware/slinfer/latency_tables.csv, milliseconds):
GPU prefill 256 -> 30, 512 -> 50, 2048 -> 169; GPU decode batch 1 is 14 at contexts 512, 1024 and 2048 and 15 at
3950. Weights 12.6 GB, so the cold start is 1.0 s; KV 512 KiB per token, L_min 4,096 tokens.
"""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from simulations.engine.serverless import ServerlessConfig, simulate, ttft_slo
from simulations.engine.serverless.executor import Executor
from simulations.engine.serverless.perf import profile
from simulations.engine.serverless.state import OutOfMemory, Request

GB = 1e9


def frame(rows):
    return pd.DataFrame({
        "arrival_s": [r[0] for r in rows], "input_tokens": [r[1] for r in rows],
        "output_tokens": [r[2] for r in rows],
        "model": pd.Categorical([r[3] for r in rows]),
    })


def run(rows, **cfg):
    ex = Executor(ServerlessConfig(**cfg), {r[3]: float(r[2]) for r in rows})
    reqs = [Request(i, r[3], r[0], r[1], r[2], ttft_slo(r[1])) for i, r in enumerate(rows)]
    return ex, reqs, ex.run(reqs)


def test_ttft_slo_and_table_interpolation_by_hand():
    assert [ttft_slo(x) for x in (100, 256, 512, 1024, 3072, 5000)] == [0.5, 0.5, 1.0, 2.0, 6.0, 8.0]
    cpu = profile("llama-2-7b", "cpu")
    assert cpu.prefill(768) == pytest.approx((0.285 + 0.567) / 2)  # halfway between 512 and 1024
    # decode (24, 768): row 512 gives 97 + (131 - 97)/2 = 114 ms, row 1024 gives 120 + (196 - 120)/2 = 158 ms,
    # and halfway between the rows 136 ms (bilinear)
    assert cpu.decode(24, 768) == pytest.approx(0.136)
    assert cpu.decode(1, 512) == pytest.approx(0.070)


def test_one_request_on_one_gpu_by_hand():
    """L=512, O=3 on one GPU. Cold start 1.0 s (grace 1.0 s); prefill 50 ms -> first token at 1.050; two decodes
    of 14 ms (batch 1, context 513 and 514) -> done at 1.078. TTFT 1.05 <= 1.0 + 1.0, TPOT 14 ms: SLO met.
    Idle from 1.078, reclaimed at 2.078 (keep-alive 1 s): the GPU is in use all 2.078 s of the run, busy 0.078 s,
    so energy = 0.078 x 400 W + 2.0 x 50 W = 131.2 J. KV pool = 4,096 tokens x 512 KiB x 1.25 (L_min, watermark)."""
    ex, (r,), res = run([(0.0, 512, 3, "a")], cpu_nodes=0, gpu_nodes=1)
    assert r.first_token_at == pytest.approx(1.050)
    assert r.done_at == pytest.approx(1.078)
    assert r.grace == pytest.approx(1.0) and r.slo_met() and r.slo_met_per_token()
    assert res["slo_met"] == 1 and res["dropped"] == 0
    assert res["run_length_s"] == pytest.approx(2.078)
    assert res["avg_gpu_nodes"] == pytest.approx(1.0)
    assert res["energy_kwh"] * 3.6e6 == pytest.approx(131.2)
    inst = ex.all_instances[0]
    assert inst.kv == 4096 * 524288 * 1.25 and res["resizes"] == 0
    assert res["per_token_deadline_compliance"] == 1.0 and res["no_oom"]
    tl = res["nodes_timeline"]  # the GPU is in use from 0 until its reclaim at the run's end (2.078 s)
    assert tl["t_s"][-1] == pytest.approx(2.078) and set(tl["gpu"][:-1]) == {1} and tl["gpu"][-1] == 0
    assert set(tl["cpu"]) == {0}


def test_least_headroom_runs_first_not_arrival_order():
    """A (L=2048, TTFT SLO 4 s) and B (L=256, 0.5 s) arrive at t=0 for two models; both instances share the GPU
    and are ready at 1.0. Deadlines: A 0 + 4 + 1 (grace) = 5.0, B 0 + 0.5 + 1 = 1.5, so B goes first although A
    arrived first: B prefill 30 ms (1.030), B decode 14 ms (1.044, done), then A prefill 169 ms (1.213)."""
    _, (a, b), res = run([(0.0, 2048, 2, "a"), (0.0, 256, 2, "b")], cpu_nodes=0, gpu_nodes=1)
    assert b.first_token_at == pytest.approx(1.030)
    assert b.done_at == pytest.approx(1.044)
    assert a.first_token_at == pytest.approx(1.213)
    assert res["slo_met"] == 2 and res["instances_created"] == 2 and res["avg_gpu_nodes"] == pytest.approx(1.0)


def test_sllm_is_exclusive_and_queues_then_drops():
    """Same two requests under sllm (one GPU, exclusive): B finds no idle GPU and queues; its deadline 0 + 0.5 s
    passes long before A's instance is reclaimed (1.0 + 0.169 + 0.014 + 1.0), so B is dropped. SLINFER shares."""
    _, (a, b), res = run([(0.0, 2048, 2, "a"), (0.0, 256, 2, "b")], system="sllm", cpu_nodes=0, gpu_nodes=1)
    assert b.dropped and not b.slo_met() and a.slo_met()
    assert res["slo_met"] == 1 and res["dropped"] == 1 and res["instances_created"] == 1


def test_reservation_station_waits_for_the_shrink_and_budget_refuses_overcommit():
    """GPU of 40 GB; X = 12.6 + 8 GB, Y = 12.6 + 4 GB (37.2 GB held). Both load until 1.0. X shrinks to 2 GB:
    the budget drops to 31.2 GB at once, the memory only when the shrink ends (0.3/16 s per GB x 2 = 0.0375 s after
    1.0). Y grows to 8 GB: budget 35.2 <= 40 accepts, but pessimistic 37.2 + 4 > 40, so it waits in the
    reservation station and starts at 1.0375, taking 1.9/64 x 8 = 0.2375 s (ends 1.275). A further grow of X to
    12 GB would need budget 45.2 > 40: refused."""
    ex = Executor(ServerlessConfig(cpu_nodes=0, gpu_nodes=1, gpu_memory_gb=40.0))
    node = ex.nodes[0]
    x = ex.create_instance(node, "x", 8 * GB)
    y = ex.create_instance(node, "y", 4 * GB)
    assert ex.resize(x, 2 * GB)
    assert node.budget == pytest.approx(31.2 * GB) and node.pess == pytest.approx(37.2 * GB)
    assert ex.resize(y, 8 * GB)
    assert ex.counters["station_waits"] == 1 and node.station == [y]
    assert not ex.resize(x, 12 * GB)
    ex.run([])
    assert x.kv == 2 * GB and y.kv == 8 * GB
    assert y.resizing_until == pytest.approx(1.275)
    assert node.actual == 0 and node.pess == pytest.approx(0) and node.budget == pytest.approx(0)  # both reclaimed


def test_the_no_oom_invariant_raises():
    ex = Executor(ServerlessConfig(cpu_nodes=0, gpu_nodes=1, gpu_memory_gb=20.0))
    with pytest.raises(OutOfMemory):
        ex.create_instance(ex.nodes[0], "x", 10 * GB)  # 22.6 GB on a 20 GB node


@pytest.fixture(scope="module")
def slice_frame():
    from simulations.engine.workload.generator import slinfer as g
    from simulations.engine.workload.generator.spec import SlinferSpec

    f = g.read(SlinferSpec(kind="slinfer", trace="1_30_128_8_0", duration_s=300))
    return f[(f["model"].cat.codes % 8) < 2]  # the artefact's 32-model grouping, first 5 minutes


@pytest.mark.parametrize("system", ["slinfer", "sllm", "sllm+c", "sllm+c+s"])
def test_trace_slice_invariants(slice_frame, system):
    res = simulate(slice_frame, ServerlessConfig(system=system))
    assert res["requests"] == len(slice_frame)
    assert res["slo_met"] + res["dropped"] <= res["requests"] and res["completed"] + res["dropped"] >= res["slo_met"]
    assert res["no_oom"] and res["oom_checks"] > 0
    assert 0 <= res["avg_gpu_nodes"] <= 4 and 0 <= res["avg_cpu_nodes"] <= 4
    if system == "sllm":
        assert res["avg_cpu_nodes"] == 0
    if system != "slinfer":
        assert res["resizes"] == 0 and res["migration_rate"] == 0


def test_ablation_without_cpu_uses_no_cpu(slice_frame):
    res = simulate(slice_frame, ServerlessConfig(use_cpu=False))
    assert res["avg_cpu_nodes"] == 0 and res["avg_gpu_nodes"] > 0


def test_serverless_core_imports_without_django():
    code = ("import sys, simulations.engine.serverless.executor, simulations.engine.serverless.policies; "
            "assert 'django' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_spec_errors_name_the_field():
    from simulations.engine.serverless.spec import SpecError, parse, workload_frame

    with pytest.raises(SpecError) as e:
        parse({"systems": ["nope"]})
    assert e.value.where == "systems.0" and set(e.value.to_dict()["error"]) == {"message", "where", "hint"}
    with pytest.raises(SpecError) as e:
        parse({"workload": {"models": 32, "functions": 3}})
    assert e.value.where == "workload"
    with pytest.raises(SpecError) as e:
        workload_frame(parse({"workload": {"trace": "nope"}}))
    assert e.value.where == "workload.trace"


@pytest.mark.django_db(databases=[])
def test_manage_serverless_json(tmp_path):
    import json

    from django.core.management import CommandError, call_command

    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"systems": ["slinfer", "sllm"], "workload": {"models": 32, "duration_s": 60}}))
    from io import StringIO

    buf = StringIO()
    call_command("serverless", str(spec), "--json", stdout=buf)
    out = json.loads(buf.getvalue())
    assert set(out["results"]) == {"slinfer", "sllm"} and out["requests"] > 0
    assert out["results"]["sllm"]["avg_cpu_nodes"] == 0 and out["results"]["slinfer"]["no_oom"]
    spec.write_text(json.dumps({"nodes": {"cpu": 0, "gpu": 0}}))
    with pytest.raises(CommandError, match="nodes"):
        call_command("serverless", str(spec))


@pytest.mark.django_db(transaction=True)
def test_api_runs_a_serverless_scenario_as_a_job(cast):
    """POST /api/serverless/ validates the spec, runs it as a job (in-process runner in unit tests) and the job's
    result holds the metrics per system; a bad field is a 400 in the one error shape, never a 500."""
    spec = {"name": "api", "systems": ["slinfer", "sllm+c+s"], "workload": {"models": 32, "duration_s": 60}}
    resp = cast.owner.api.post("/api/serverless/", {"spec": spec}, format="json")
    assert resp.status_code == 202, resp.content
    job = cast.owner.api.get(f"/api/jobs/{resp.json()['id']}/").json()
    assert job["status"] == "succeeded", job
    res = job["result"]["results"]
    assert set(res) == {"slinfer", "sllm+c+s"} and res["slinfer"]["no_oom"] and job["result"]["requests"] > 0
    bad = cast.owner.api.post("/api/serverless/", {"spec": {"nodes": {"gpu": -1}}}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["where"] == "spec.nodes.gpu"


@pytest.mark.parametrize("body", [{"spec": None}, {}, {"spec": []}, {"spec": "x"}, {"systems": ["slinfer"]}],
                         ids=["null", "missing", "list", "string", "inline"])
def test_the_serverless_api_refuses_a_spec_that_is_not_an_object_and_queues_nothing(cast, body):
    from planner.jobs.models import Job

    resp = cast.owner.api.post("/api/serverless/", body, format="json")
    assert resp.status_code == 400, resp.content
    assert resp.json()["error"]["where"].endswith("spec") and Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_the_serverless_page_runs_a_scenario_and_shows_each_systems_metrics(cast):
    from django.test import Client

    page = Client()
    page.force_login(cast.owner.user)
    first = page.get("/simulations/serverless/").content.decode()
    assert "<textarea" not in first and 'value="1_30_128_8_0"' in first  # the example fills the form's fields
    form = {"action": "run", "sl-name": "from the page", "sl-model": "llama2-7b", "sl-systems": ["slinfer", "sllm"],
            "sl-baseline": "sllm", "sl-workload__models": "32", "sl-workload__duration_s": "60"}
    resp = page.post("/simulations/serverless/", form)
    assert resp.status_code == 302
    html = page.get(resp["Location"]).content.decode()
    assert "from the page" in html and "succeeded" in html and "Avg GPUs" in html and "sllm" in html
    bad = page.post("/simulations/serverless/", {**form, "sl-systems": ["x"]})
    assert bad.status_code == 400 and "data-form-errors" in bad.content.decode()
    bad = page.post("/simulations/serverless/", {**form, "sl-workload__trace": "no such trace!"})
    assert bad.status_code == 400 and "data-field-error" in bad.content.decode()


def test_shadow_replay_follows_the_headroom_order_by_hand():
    """Shadow validation, the paper's reading (a virtual replay, shadow.py) beside the analytic bound. One GPU, now
    = 0. q (model a, L=512, one token out, next deadline -1.06 + 1.0 + 0.25 = 0.19) decodes; r (model b, L=2048,
    TTFT SLO 4 s, arrival -3.8: deadline 0.20) asks to join b's idle instance. The headroom scheduler runs q's decode
    first (0.19 < 0.20): 14 ms x 1.1 = 0.0154 s; then r's prefill 169 ms x 1.1 = 0.1859 s ends at 0.2013 > 0.20, so
    the replay refuses r (case 1). The bound assumes r's prefill goes first (0.1859 <= 0.20) and accepts. With r's
    deadline at 0.25 both accept (0.2013 <= 0.25, and q's next deadline 0.44 is met)."""
    from simulations.engine.serverless.policies import Slinfer

    results = {}
    for shadow in ("bound", "replay"):
        for r_arrival in (-3.8, -3.75):
            cfg = ServerlessConfig(cpu_nodes=0, gpu_nodes=1, shadow=shadow)
            ex = Executor(cfg, {"a": 2.0, "b": 2.0})
            node = ex.nodes[0]
            ia, ib = ex.create_instance(node, "a", 4 * GB), ex.create_instance(node, "b", 4 * GB)
            ia.ready_at = ib.ready_at = 0.0
            q = Request(0, "a", -1.06, 512, 3, ttft_slo(512), generated=1, prefilled=True)
            ia.requests.append(q)
            r = Request(1, "b", r_arrival, 2048, 2, ttft_slo(2048))
            results[(shadow, r_arrival)] = Slinfer(cfg).shadow(ex, node, ib, r, 0.0)
    assert results == {("bound", -3.8): True, ("replay", -3.8): False,
                       ("bound", -3.75): True, ("replay", -3.75): True}


def test_trace_slice_with_the_replayed_shadow_validation(slice_frame):
    res = simulate(slice_frame, ServerlessConfig(shadow="replay"))
    assert res["requests"] == len(slice_frame) and res["no_oom"] and res["oom_checks"] > 0
    assert res["slo_met"] + res["dropped"] <= res["requests"]
    assert res["config"]["shadow"] == "replay"
    assert 0 <= res["resizing_share_gpu"] and (res["resizes"] == 0) == (res["resizing_share_gpu"] == 0)


def test_sllm_cs_half_slot_runs_at_half_speed_by_hand():
    """sllm+c+s on one GPU (no CPU), L=512, O=3. Default slot_compute "half": the instance owns half of the GPU, so
    the prefill takes 2 x 50 ms (first token 1.0 + 0.100) and each decode 2 x 14 ms (done 1.156); half the node is
    busy for 0.156 s = 0.078 node-seconds, the same energy of work as on the whole node. "shared" (the slots
    alternate on the whole node): a lone slot runs at full speed, first token 1.050, done 1.078."""
    for mode, first, done in (("half", 1.100, 1.156), ("shared", 1.050, 1.078)):
        ex, (r,), res = run([(0.0, 512, 3, "a")], system="sllm+c+s", cpu_nodes=0, gpu_nodes=1, slot_compute=mode)
        assert r.first_token_at == pytest.approx(first) and r.done_at == pytest.approx(done), mode
        assert ex.nodes[0].busy_time == pytest.approx(0.078) and res["slo_met"] == 1


def test_sllm_cs_half_slots_run_in_parallel():
    """Two models on one GPU under sllm+c+s "half": each gets its own slot and both prefill at once (their first
    tokens at 1.100 each); with "shared" they alternate, so one of them waits for the other's prefill."""
    rows = [(0.0, 512, 2, "a"), (0.0, 512, 2, "b")]
    _, (a, b), _ = run(rows, system="sllm+c+s", cpu_nodes=0, gpu_nodes=1)
    assert a.first_token_at == pytest.approx(1.100) and b.first_token_at == pytest.approx(1.100)
    _, (a, b), _ = run(rows, system="sllm+c+s", cpu_nodes=0, gpu_nodes=1, slot_compute="shared")
    assert sorted([a.first_token_at, b.first_token_at]) == pytest.approx([1.050, 1.100])


@pytest.mark.parametrize("base", ["llama-3.2-3b", "llama-2-13b"])
def test_misses_by_cause_add_up_and_the_resizing_share_is_its_own_ratio(slice_frame, base):
    res = simulate(slice_frame, ServerlessConfig(system="slinfer", base_model=base))
    m = res["slo_misses"]
    assert m["dropped"] + m["unfinished"] + m["ttft"] + m["tpot_only"] == res["requests"] - res["slo_met"]
    assert m["dropped"] == res["dropped"] and m["tpot_only_tokens_on_time"] <= m["tpot_only"]
    assert m["migrated"] <= res["requests"] - res["slo_met"]
    assert res["resizing_share"] == pytest.approx(res["resize_seconds"] / res["instance_lifetime_s"])
    assert (res["resizes"] > 0) == (base == "llama-2-13b")  # 3B fits the CPUs' fixed pools; 13B resizes on GPUs


def test_misses_by_cause_by_hand():
    from simulations.engine.serverless.metrics import misses

    def req(first, done, late=0, migrations=0, dropped=False):  # arrival 0, TTFT SLO 1 s, 5 output tokens
        return Request(0, "m", 0.0, 100, 5, 1.0, first_token_at=first, done_at=done, late_tokens=late,
                       migrations=migrations, dropped=dropped)

    reqs = [req(0.5, 1.5),  # met: TTFT 0.5 s, average TPOT 0.25 s
            req(1.2, 2.0),  # TTFT late
            req(0.5, 1.6, migrations=1),  # average TPOT 0.275 s, every token on time, migrated
            req(0.5, 2.5, late=2),  # average TPOT 0.5 s, two tokens late
            req(None, None, dropped=True), req(0.5, None)]
    assert misses(reqs) == {"dropped": 1, "unfinished": 1, "ttft": 1, "tpot_only": 2, "tpot_only_tokens_on_time": 1,
                            "migrated": 1}
