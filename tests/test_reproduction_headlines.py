"""Each paper reproduction's headline at reduced scale: its direction and a digest of its results.

A change to the engine or to a policy that moves one of these fails here and has to be acknowledged: rerun the
reproduction script, update its document, and only then the pinned digest below (the failure message prints the
new one). The runs are small versions of the documented ones (docs/reproduction*.md), seconds each:

- SageServe (Fig. 11, authors'-code preset): Llama-2-only day at 3 req/s instead of 12, Reactive vs LT-UA.
- PreServe (RQ3, Fig. 10): 3 minutes per rate instead of 10, at 0.8x and 1.1x our knee.
- Chiron (Fig. 19): the scenario at 1/10 scale (rate, cap) with a dump of 150,000, Chiron vs Llumnix-like
  with live migration.
- Operator-level autoscaling (Fig. 11): the full QPS sweep (analytic, fast).
- SLINFER (Table III): 32 models, the artefact trace's first 10 minutes, SLINFER vs sllm+c+s.
- SLINFER (the IX-B headline, SLO-met at 128 models): 128 x 7B, the trace's first 5 minutes, SLINFER vs sllm,
  sllm+c and sllm+c+s.

The digests hash the headline figures rounded to 6 significant digits (JSON, sorted keys), so they are the same
for the compiled and the pure-Python engine.
"""

from __future__ import annotations

import copy
import hashlib
import json
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rounded(x):
    if isinstance(x, float):
        return float(f"{x:.6g}")
    if isinstance(x, dict):
        return {str(k): _rounded(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_rounded(v) for v in x]
    return x


def digest(figures: dict) -> str:
    return hashlib.sha256(json.dumps(_rounded(figures), sort_keys=True).encode()).hexdigest()[:16]


def _pinned(name: str, figures: dict, expected: str) -> None:
    got = digest(figures)
    assert got == expected, (
        f"the {name} reproduction's reduced-scale results changed (digest {got}, pinned {expected}): rerun its "
        f"reproduction script, update the document, then pin the new digest. Figures: "
        f"{json.dumps(_rounded(figures), sort_keys=True)}")


# ---------------------------------------------------------------------------------------------------- SageServe
def sageserve_figures() -> dict:
    from planner.comparisons.core.runner import run_variant

    d = json.loads((ROOT / "fixtures/scenarios/sageserve_day_llama2_authors_code.json").read_text())
    d = copy.deepcopy(d)
    d["workload"]["spec_overrides"]["total_rps"] = 3.0
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key in ("reactive-unified", "lt-ua"):
            s = run_variant(d, {"key": key, "strategy": key, "scheduler": "", "knobs": {}}, base_dir=str(ROOT))
            out[key] = {
                "llama2_instance_hours": sum(e["instance_hours"] for e in s["endpoints"] if e["model"] == "llama2-70b"),
                "gpu_hours": s["totals"]["gpu_hours"],
                "provisioning_gpu_hours": s["totals"].get("provisioning_gpu_hours"),
                "attainment": {t: v.get("attainment") for t, v in sorted(s["tiers"].items())},
            }
    return out


def test_sageserve_lt_ua_runs_fewer_llama2_instance_hours_than_reactive():
    f = sageserve_figures()
    r, lt = f["reactive-unified"], f["lt-ua"]
    # the paper's Fig. 11 metric and direction (paper: -23.4 %); the full-scale figure is in docs/reproduction.md
    assert lt["llama2_instance_hours"] < 0.9 * r["llama2_instance_hours"]
    _pinned("SageServe", f, SAGESERVE_DIGEST)


# ---------------------------------------------------------------------------------------------------- PreServe
def preserve_figures() -> dict:
    from tests.benchmarks.reproduce_preserve import BASELINES, rq3_point

    out = {}
    for factor, rate in ((0.8, 10.0), (1.1, 13.75)):  # 0.8x and 1.1x the documented knee of 12.5 req/s
        out[str(factor)] = {name: rq3_point(rate, name, 3.0)["p99_nl_s"]
                            for name in (*BASELINES, "preserve (oracle lengths)")}
    return out


def test_preserve_router_stays_behind_the_best_baseline_at_reduced_scale():
    from tests.benchmarks.reproduce_preserve import BASELINES

    f = preserve_figures()
    for row in f.values():
        # our measured miss (docs/reproduction_preserve.md): PreServe's P99 above the best of the paper's set
        assert row["preserve (oracle lengths)"] > min(row[b] for b in BASELINES)
    _pinned("PreServe", f, PRESERVE_DIGEST)


# ---------------------------------------------------------------------------------------------------- Chiron
# at 1/10 scale the dump of 100,000 fits the mixed instances' spare capacity and Alg. 2 never adds a batch
# instance; 150,000 makes it add one, so the test covers the batch autoscaler too
CHIRON_DUMP = 150_000


def chiron_figures() -> dict:
    from tests.benchmarks.reproduce_chiron import fig19_case

    keep = ("gpu_hours", "batch_done_by_65min", "interactive_attainment", "batch_attainment", "peak_instances",
            "largest_batch_step", "scale_outs", "scale_ins", "live_migrations")
    return {name: {k: r[k] for k in keep}
            for name, r in (("chiron", fig19_case("chiron", 0.1, dump=CHIRON_DUMP)),
                            ("llumnix", fig19_case("llumnix", 0.1, dump=CHIRON_DUMP, migration="live")))}


def test_chiron_uses_fewer_gpu_hours_than_llumnix_and_finishes_the_dump():
    f = chiron_figures()
    c, ll = f["chiron"], f["llumnix"]
    assert c["largest_batch_step"] >= 1  # the batch autoscaler (Alg. 2) acts in this run
    assert c["gpu_hours"] < ll["gpu_hours"]
    assert c["batch_done_by_65min"] >= 0.99 and c["interactive_attainment"] >= 0.99
    assert ll["batch_done_by_65min"] < c["batch_done_by_65min"]
    _pinned("Chiron", f, CHIRON_DIGEST)


# ---------------------------------------------------------------------------------------------------- operator level
def opscale_figures() -> dict:
    from planner.opscale.model import Options
    from planner.opscale.point import Slo
    from planner.opscale.reproduce import checks, fig11

    f11 = fig11(Options(), Slo())
    chk = checks(f11, [], {}, {})
    return {"points": [[r["qps"], r["model_level_gpus"], r["operator_level_gpus"]] for r in f11],
            "peak": next(c["value"] for c in chk if c["item"].startswith("Fig. 11: peak")),
            "low": next(c["value"] for c in chk if c["item"].startswith("Fig. 11: GPU savings"))}


def test_operator_level_saves_gpus_at_mid_load_and_none_at_low_load():
    f = opscale_figures()
    assert f["low"] <= 0.05
    assert 0.20 <= f["peak"] <= 0.40  # met at its boundary (docs/reproduction_opscale.md)
    _pinned("operator-level", f, OPSCALE_DIGEST)


# ---------------------------------------------------------------------------------------------------- SLINFER
def slinfer_figures() -> dict:
    from simulations.engine.serverless import ServerlessConfig, simulate
    from tests.benchmarks.reproduce_slinfer import workload

    frame = workload(32)
    frame = frame[frame["arrival_s"] < 600].reset_index(drop=True)  # the trace's first 10 minutes
    keep = ("requests", "slo_met", "slo_attainment", "avg_cpu_nodes", "avg_gpu_nodes", "dropped")
    return {system: {k: simulate(frame, ServerlessConfig(system=system, base_model="llama-2-7b"))[k] for k in keep}
            for system in ("sllm+c+s", "slinfer")}


def test_slinfer_meets_more_slos_on_fewer_gpus_than_sllm_with_sharing():
    f = slinfer_figures()
    s, b = f["slinfer"], f["sllm+c+s"]
    # Table III at 32 models (paper: 0.9 vs 2.0 GPUs, 99 vs 99 % SLO); docs/reproduction_slinfer.md
    assert s["avg_gpu_nodes"] < b["avg_gpu_nodes"] and s["slo_attainment"] >= b["slo_attainment"]
    _pinned("SLINFER", f, SLINFER_DIGEST)


def slinfer_128_figures() -> dict:
    from simulations.engine.serverless import ServerlessConfig, simulate
    from tests.benchmarks.reproduce_slinfer import workload

    frame = workload(128)
    frame = frame[frame["arrival_s"] < 300].reset_index(drop=True)  # the trace's first 5 minutes
    keep = ("requests", "slo_met", "slo_attainment", "avg_cpu_nodes", "avg_gpu_nodes", "dropped")
    return {system: {k: simulate(frame, ServerlessConfig(system=system, base_model="llama-2-7b"))[k] for k in keep}
            for system in ("sllm", "sllm+c", "sllm+c+s", "slinfer")}


def test_slinfer_meets_more_slos_than_every_baseline_at_128_models():
    f = slinfer_128_figures()
    s = f["slinfer"]["slo_met"]
    # the paper's headline (IX-B): SLO-met of SLINFER over sllm 1.86-2.54, over sllm+c 1.47-1.62, over sllm+c+s
    # 1.18-1.70 at 128 models; ours at full scale in docs/reproduction_slinfer.md (about 1.9 / 1.3 / 1.35 for 7B)
    assert all(s > f[b]["slo_met"] for b in ("sllm", "sllm+c", "sllm+c+s"))
    assert s > 1.5 * f["sllm"]["slo_met"]
    _pinned("SLINFER at 128 models", f, SLINFER_128_DIGEST)


SAGESERVE_DIGEST = "dd76167e5a7f1552"
PRESERVE_DIGEST = "5ba10cdcb389279c"
CHIRON_DIGEST = "68fb67fb22403664"
OPSCALE_DIGEST = "4c110b5825734ada"
SLINFER_DIGEST = "01fe4ba99074989d"
SLINFER_128_DIGEST = "2b5c21b8efc1f927"


if __name__ == "__main__":  # python -m tests.test_reproduction_headlines: the current digests
    for name, fn in (("SAGESERVE", sageserve_figures), ("PRESERVE", preserve_figures), ("CHIRON", chiron_figures),
                     ("OPSCALE", opscale_figures), ("SLINFER", slinfer_figures),
                     ("SLINFER_128", slinfer_128_figures)):
        print(f'{name}_DIGEST = "{digest(fn())}"')
