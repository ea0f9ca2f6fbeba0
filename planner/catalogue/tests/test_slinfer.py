"""The SLINFER authors' measured deployments in the built-in catalogue."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalogue.builtin import engine_spec, load_builtin
from planner.catalogue.fit import decode_time, prefill_time
from planner.catalogue.slinfer import TABLE, deployments, fit_one, load_table
from planner.catalogue.spec import complete_model

NAMES = [f"{m}/{d}/tp1" for m in ("llama3.2-3b", "llama2-7b", "llama3.1-8b", "llama2-13b")
         for d in ("a100-80gb", "xeon-6462c")]


def test_all_eight_slinfer_deployments_are_built_in_with_their_device_kind_and_power():
    doc = load_builtin()
    by_name = {d["name"]: d for d in doc["deployments"]}
    for name in NAMES:
        d = by_name[name]
        assert d["basis"] == "fitted" and "slinfer" in d["source"] and d["points"]
        spec = engine_spec(name)
        kind = "cpu" if "xeon" in name else "gpu"
        assert spec["device"]["kind"] == kind and spec["device"]["busy_w"] > spec["device"]["idle_w"] > 0
    xeon = next(g for g in doc["gpu_types"] if g["name"] == "xeon-6462c")
    assert xeon["device_kind"] == "cpu" and xeon["power_assumed"] is True and xeon["power_source"]


def test_the_fit_reads_the_table_in_the_contract_units_checked_by_hand():
    # llama-2-7b on the Xeon (the rows equal the paper's Table I)
    table = load_table()
    rows = table[(table["model"] == "llama-2-7b") & (table["node_label"] == "cpu")]
    fitted = fit_one(rows, seed=0)
    pre = rows[rows["phase"] == "prefill"]
    dec = rows[rows["phase"] == "decode"]
    # held-out errors are relative: fitted prefill of each measured prompt within 35 %, decode within 10 %
    got = prefill_time(fitted["prefill"], pre["prompt_tokens"].to_numpy(float))
    assert (abs(got / pre["seconds"] - 1) < 0.35).all()
    # a least-absolute-deviation fit with 3 coefficients passes exactly through 3 of its training rows
    assert (abs(got / pre["seconds"] - 1) < 1e-6).sum() >= 3
    b = dec["batch_size"].to_numpy(float)
    got = decode_time(fitted["decode"], b, b * dec["context_tokens"].to_numpy(float))
    err = abs(got / dec["seconds"].to_numpy() - 1)
    assert err.max() < 0.15 and float(np.median(err)) < 0.01  # measured: at most 11.6 %, median 0.5 %
    # the decode form is linear in C = batch x context: c_ctx > 0 (longer context costs more per iteration)
    assert fitted["decode"]["c_ctx"] > 0 and fitted["decode"]["c_batch"] > 0


def test_held_out_decode_error_is_small_and_the_report_shows_cross_validation():
    doc = load_builtin()
    for d in doc["deployments"]:
        if d["name"] in NAMES:
            report = d["fit_report"]
            cv = report["also"]["cross_validated_5_fold"]
            assert cv["token_time"]["n"] == sum(1 for p in d["points"] if p["token_time_s"] is not None)
            assert cv["token_time"]["median_ape"] < 0.05, d["name"]  # measured 0.7-4.2 %
            assert report["heldout"]["prompt_time"]["n"] >= 1


def test_cpu_kv_capacity_is_slinfers_fixed_pool():
    models = {m["name"]: complete_model(m, m["name"]) for m in load_builtin()["models"]}
    entries = {f"{d['model']}/{d['gpu']}": d for d in deployments(TABLE, models=models)}
    assert entries["llama2-7b/xeon-6462c"]["kv_capacity_tokens"] == 32 * 2**30 // (512 * 1024)  # 65,536
    assert entries["llama3.2-3b/xeon-6462c"]["kv_capacity_tokens"] == 16 * 2**30 // (112 * 1024)
    assert "kv_capacity_tokens" not in entries["llama2-7b/a100-80gb"]  # GPUs: computed from memory as usual


@pytest.mark.parametrize("name", NAMES)
def test_every_slinfer_deployment_runs_in_the_engine(name):
    config = pytest.importorskip("simulations.engine.scenario.config")
    spec = config.DeploymentSpec.from_dict(engine_spec(name))
    assert spec.device is not None and spec.device.kind in ("gpu", "cpu")


def test_the_slinfer_fit_and_the_energy_module_import_without_django():
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, planner.catalogue.slinfer, simulations.engine.results.energy; "
            "assert 'django' not in sys.modules, 'django imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])
