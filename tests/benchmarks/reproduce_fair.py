"""Fair SageServe comparisons: both presets, several seeds, untuned and equal-SLO tuned Reactive.

    .venv/bin/python tests/benchmarks/reproduce_fair.py --write-presets   # fixtures/scenarios/sageserve_day*_authors_code*.json, sageserve_day_2x.json
    nice .venv/bin/python tests/benchmarks/reproduce_fair.py              # every case below -> docs/results/sageserve_fair.json
    .venv/bin/python tests/benchmarks/reproduce_fair.py --cases code-1x --seeds 2025
    .venv/bin/python tests/benchmarks/reproduce_fair.py --markdown        # the tables of docs/reproduction.md

Each case is a scenario file, the strategies to compare and (optionally) the points of the Reactive sweep; every
run happens once per seed. Runs go through the comparison core (planner.comparisons.core: the code the
comparison jobs run), ``--workers`` (default 2) at once; each finished run is kept under ``--cache``
(default var/fair_runs) so an interrupted reproduction resumes where it stopped. The summary per case is the
comparison's own ``fair_summary`` (min / mean / max over seeds; savings per seed against the untuned
baseline and against the cheapest tuning point at least as good on every tier). Prints ONE JSON line last.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SCEN_DIR = ROOT / "fixtures" / "scenarios"
SEEDS = [2025, 2026, 2027]
# Reactive sweeps (three points each: the compute budget of one shared 2-core machine). Paper text: its LT runs
# beat Reactive's IW-F attainment, so an equal-SLO Reactive must scale earlier; the authors' code over-provisions,
# so its sweep goes the other way. One point per preset changes a cooldown, not a threshold.
TEXT_POINTS = [
    {"scale_out_above": 0.3, "scale_in_below": 0.1}, {"scale_out_above": 0.5, "scale_in_below": 0.25},
    {"scale_out_above": 0.7, "scale_in_below": 0.3, "cooldown_in_s": 300.0},
]
CODE_POINTS = [
    {"scale_out_above": 0.7, "scale_in_below": 0.3}, {"scale_out_above": 0.85, "scale_in_below": 0.4},
    {"scale_out_above": 0.7, "scale_in_below": 0.3, "cooldown_in_s": 300.0},
]
# Fewer points where a day costs more (the compute budget of one run on a shared 2-core machine): the
# first two of each sweep on every day but the paper-text 1x one (the authors'-code cooldown variant never won at
# 1x). NOTE: a run's cache key is its variant key (tune.<base>.<i>+s<seed>), not its knobs: change a case's points
# only together with a fresh --cache.
CASES = {
    "text-1x": ("sageserve_day", ["reactive-unified", "lt-ua"], TEXT_POINTS),
    "code-1x": ("sageserve_day_authors_code", ["reactive-unified", "lt-ua"], CODE_POINTS[:2]),
    "code-2x": ("sageserve_day_authors_code_2x", ["reactive-unified", "lt-ua"], CODE_POINTS[:2]),
    "code-llama2": ("sageserve_day_llama2_authors_code", ["reactive-unified", "lt-ua"], CODE_POINTS[:2]),
    "text-2x": ("sageserve_day_2x", ["reactive-unified", "lt-ua"], TEXT_POINTS[:2]),
    "text-llama2": ("sageserve_day_llama2", ["reactive-unified", "lt-ua"], TEXT_POINTS[:2]),
    # the authors'-code preset without the output reservation (scenario "NAME@noreserve"): the preset as the
    # 2026-11-24 run made it; its runs are the earlier results (--seed-cache-from, SEED_ALIASES), valid because
    # every other setting and the engine's defaults are unchanged (check_default_digest.py)
    "code-1x-noreserve": ("sageserve_day_authors_code@noreserve", ["reactive-unified", "lt-ua"], CODE_POINTS),
    "code-2x-noreserve": ("sageserve_day_authors_code_2x@noreserve", ["reactive-unified", "lt-ua"], []),
    "code-llama2-noreserve": ("sageserve_day_llama2_authors_code@noreserve", ["reactive-unified", "lt-ua"], []),
    # which settings of that preset carry LT-UA's saving: the preset with one setting put back (seed 2025)
    "code-1x-noreserve-ablate": ("sageserve_day_authors_code@noreserve", ["reactive-unified", "lt-ua"], []),
}
# case -> the case of an earlier results file whose runs it may take (--seed-cache-from)
SEED_ALIASES = {"code-1x-noreserve": "code-1x", "code-2x-noreserve": "code-2x", "code-llama2-noreserve": "code-llama2",
                "code-1x-noreserve-ablate": "code-1x-ablate"}
CASE_SEEDS = {"code-1x-noreserve-ablate": [2025]}  # cases run on fewer seeds than --seeds
TRANSFORMS = {"noreserve": ("signal_reserve_output",)}  # scenario suffix -> deployment keys removed
ABLATIONS = {  # case -> explicit variants (key, strategy, knobs) run besides the case's strategies
    "code-1x-noreserve-ablate": [
        ("lt-ua.ahead", "lt-ua", {"forecast_mode": "ahead"}),
        ("reactive-unified.niw-text", "reactive-unified", {"niw_feed": "text", "niw_escalate": True}),
        ("lt-ua.niw-text", "lt-ua", {"niw_feed": "text", "niw_escalate": True}),
    ],
}
# the paper's figures the tables put beside ours
PAPER = {
    "Fig. 11 (Jul 2025) Llama-2 instance-hours": {"reactive": 362.25, "lt-i": 274.5, "lt-u": 291.0, "lt-ua": 277.5},
    "LT-UA vs Reactive, Llama-2 instance-hours": -23.4,
    "LT vs Reactive, GPU-hours (abstract)": "up to 25 %",
}


# ------------------------------------------------------------------ presets
def authors_code(base: dict, *, name: str, note: str) -> dict:
    """The authors'-code preset of a scenario: every setting of the sageserve-code bundles written into it,
    each with its source (``preset_sources``)."""
    from planner.comparisons.core.bundles import AUTHORS_SOURCES, apply_signal_rule, get_bundle

    d = apply_signal_rule(copy.deepcopy(base), get_bundle("sageserve-code.reactive-unified").signal)
    d["name"] = name
    d["preset"] = "sageserve-authors-code"
    d["description"] = (base.get("description", "") + " PRESET 'SageServe authors' code': the scaling "
                        "rules, signal and provisioning of the authors' public simulator, see preset_sources. " + note)
    d["engine"] = {**(d.get("engine") or {}), "instant_provisioning": True}
    h100 = next(dep["price_per_instance_hour"] for dep in d["deployments"].values() if dep["gpus_per_instance"] == 8)
    for dep in d["deployments"].values():  # all models on 8 GPUs (billing)
        dep["gpus_per_instance"] = 8
        dep["price_per_instance_hour"] = dict(h100)
    params, policies = {}, {}
    for s in ("reactive-unified", "lt-i", "lt-u", "lt-ua"):
        b = get_bundle(f"sageserve-code.{s}")
        params[s] = {**b.params, **({"forecast_method": b.predictor} if b.predictor else {})}
        if b.policy:
            policies[s] = dict(b.policy)
    d["strategy_params"] = params
    d["strategy_policies"] = policies
    d["preset_sources"] = dict(AUTHORS_SOURCES)
    return d


def scaled(base: dict, *, name: str, factor: float) -> dict:
    """The same day at ``factor`` x the traffic; spot pools and fresh VMs scaled alike (more traffic, more room)."""
    d = copy.deepcopy(base)
    d["name"] = name
    ov = d["workload"].setdefault("spec_overrides", {})
    ov["total_rps"] = float(ov.get("total_rps", 12.0)) * factor
    for r in d["fleet"]["regions"]:
        r["spot_pool"] = {m: int(round(c * factor)) for m, c in r.get("spot_pool", {}).items()}
        r["vm_capacity"] = int(round(r.get("vm_capacity", 0) * factor))
    d["description"] = (base.get("description", "") + f" Traffic x{factor:g} (total_rps {ov['total_rps']:g}); spot "
                        f"pools and fresh VMs x{factor:g}; theta as measured for the 1x day (same token mix).")
    return d


def write_presets() -> list[str]:
    day = json.loads((SCEN_DIR / "sageserve_day.json").read_text())
    llama = json.loads((SCEN_DIR / "sageserve_day_llama2.json").read_text())
    day2 = scaled(day, name="sageserve-day-2x", factor=2.0)
    files = {
        "sageserve_day_2x": day2,
        "sageserve_day_authors_code": authors_code(day, name="sageserve-day-authors-code", note="1x day."),
        "sageserve_day_authors_code_2x": authors_code(day2, name="sageserve-day-authors-code-2x", note="2x day."),
        "sageserve_day_llama2_authors_code": authors_code(llama, name="sageserve-day-llama2-authors-code",
                                                          note="Llama-2-only day."),
    }
    for n, d in files.items():
        (SCEN_DIR / f"{n}.json").write_text(json.dumps(d, indent=1) + "\n")
    return list(files)


# ------------------------------------------------------------------ runs
def _run_one(args):
    scen_name, variant, cache = args
    from planner.comparisons.core.runner import run_variant

    path = Path(cache) / scen_name / f"{variant['key']}.json"
    if path.exists():
        return scen_name, variant["key"], json.loads(path.read_text()), True
    scenario = load_scenario(scen_name)
    t0 = time.perf_counter()
    s = run_variant(scenario, variant, base_dir=str(ROOT))
    s["wall_total_s"] = time.perf_counter() - t0
    s.pop("timeline", None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(s, default=str))
    return scen_name, variant["key"], s, False


def load_scenario(scen_name: str) -> dict:
    """fixtures/scenarios/NAME.json, or NAME@TRANSFORM: that file with the transform's deployment keys removed."""
    name, _, transform = scen_name.partition("@")
    d = json.loads((SCEN_DIR / f"{name}.json").read_text())
    for key in TRANSFORMS[transform] if transform else ():
        for dep in (d.get("deployments") or {}).values():
            dep.pop(key, None)
    return d


def case_variants(strategies, points, seeds, extra=()):
    from planner.comparisons.core.variants import build_variants

    tune = {"base": "reactive-unified", "points": points} if points else None
    explicit = [{"key": k, "strategy": s, "knobs": kn} for k, s, kn in extra]
    return build_variants(strategies, variants=explicit, seeds=seeds, tune=tune)


def run(cases: list[str], seeds: list[int], workers: int, cache: str, out: Path, tune: bool = True,
        cached_only: bool = False) -> dict:
    from planner.comparisons.core.fair import fair_summary
    from planner.comparisons.core.variants import pick_baseline

    plan = {c: case_variants(CASES[c][1], CASES[c][2] if tune else [], [s for s in seeds if s in CASE_SEEDS.get(c, seeds)],
                             ABLATIONS.get(c, ())) for c in cases}
    jobs = [(CASES[c][0], v, cache) for c in cases for v in plan[c]]
    missing: dict = {}
    if cached_only:  # aggregate what has finished; name what has not
        have = [j for j in jobs if (Path(cache) / j[0] / f"{j[1]['key']}.json").exists()]
        for scen, v, _ in jobs:
            if (scen, v["key"]) not in {(h[0], h[1]["key"]) for h in have}:
                missing.setdefault(scen, []).append(v["key"])
        jobs = have
    results: dict = {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for scen, key, s, cached in pool.map(_run_one, jobs):
            results.setdefault(scen, {})[key] = s
            print(f"{scen:36} {key:34} GPU-h {s['totals']['gpu_hours']:8.1f} "
                  f"{'cached' if cached else 'wall {:.0f} s'.format(s['wall_total_s'])}", file=sys.stderr, flush=True)
    data = json.loads(out.read_text()) if out.exists() else {"cases": {}}
    for c in cases:
        scen = CASES[c][0]
        vs = [v for v in plan[c] if v["key"] in results.get(scen, {})]
        if not vs:
            continue
        base = pick_baseline(vs, "reactive-unified")
        fair = fair_summary(results[scen], vs, base)
        ran_points = sorted({v.get("tune_point") and json.dumps(v["tune_point"], sort_keys=True) for v in vs} - {None})
        data["cases"][c] = {"scenario": scen, "seeds": sorted({v.get("seed") for v in vs if v.get("seed") is not None}),
                            "strategies": CASES[c][1],
                            "tuning_points": [json.loads(p) for p in ran_points] if tune else [], "fair": fair,
                            "not_run": sorted(missing.get(scen, [])),
                            "runs": {k: _slim(s) for k, s in results[scen].items()}}
    data["cases"] = {c: v for c, v in data["cases"].items() if c in CASES}  # cases no longer defined go
    data["paper"] = PAPER
    data["wall_s_last_run"] = time.perf_counter() - t0
    out.write_text(json.dumps(data, indent=1, default=str))
    return data


def seed_cache(results: Path, cases: list[str], cache: Path) -> int:
    """Copy the (slim) runs of ``cases`` from an earlier results file into the cache where it has none."""
    old = json.loads(results.read_text()).get("cases", {})
    n = 0
    for c in cases:
        scen = CASES[c][0]
        for key, s in (old.get(SEED_ALIASES.get(c, c)) or {}).get("runs", {}).items():
            path = cache / scen / f"{key}.json"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({**s, "seeded_from": str(results.name)}, default=str))
                n += 1
    return n


def _slim(s: dict) -> dict:
    keep = ("totals", "tiers", "endpoints", "wall_total_s", "requests", "duration_s")
    return {k: s.get(k) for k in keep}


# ------------------------------------------------------------------ markdown
def markdown(path: Path) -> str:
    data = json.loads(path.read_text())
    lines = []

    def rng(st, scale=1.0, fmt="{:+.1f}"):
        if not st:
            return "-"
        return f"{fmt.format(scale * st['mean'])} [{fmt.format(scale * st['min'])}, {fmt.format(scale * st['max'])}]"

    for c, v in data["cases"].items():
        f = v["fair"]
        lines.append(f"\n#### {c}: `{v['scenario']}` (seeds {', '.join(map(str, v['seeds']))}; mean [min, max])\n")
        lines.append("| strategy | GPU-h | above floors | of which provisioning | Llama-2 inst-h | saved vs untuned Reactive "
                     "| saved vs equal-SLO tuned Reactive | tuned baseline | IW-F / IW-N / NIW attainment (mean) "
                     "| NIW p95 TTFT (h) |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in f["rows"]:
            t = r["vs_tuned"]
            att = " / ".join("-" if r["attainment"].get(k) is None else f"{100 * r['attainment'][k]['mean']:.1f}%"
                             for k in ("IW-F", "IW-N", "NIW"))
            tb = t.get("baseline")
            point = ", ".join(f"{k} {x}" for k, x in (t.get("point") or {}).items())
            tb_txt = "-" if tb is None and not t.get("why") else (
                (tb + (f" ({point})" if point else "")) if tb else t.get("why", ""))
            lines.append(
                f"| {r['key']} (n={r['n']}) | {rng(r['gpu_hours'], fmt='{:.0f}')} | {rng(r['gpu_hours_above_floor'], fmt='{:.0f}')} | "
                f"{rng(r['provisioning_gpu_hours'], fmt='{:.1f}')} | {rng(r.get('llama2-70b_instance_hours'), fmt='{:.1f}')} | "
                f"{rng(r['vs_untuned']['saved_gpu_hours_pct'])} % | {rng(t.get('saved_gpu_hours_pct'))} % | {tb_txt} | "
                f"{att} | {rng(r['niw_ttft_p95_s'], 1 / 3600, '{:.2f}')} |")
        lines.append("\nWhere the savings come from (same runs):\n")
        lines.append("| strategy | floors GPU-h | GPU-h without provisioning | NIW p95 deferral (h) | NIW unserved % "
                     "| forecast method per hourly decision (all seeds) |")
        lines.append("|---|---|---|---|---|---|")
        for r in f["rows"]:
            methods = ", ".join(f"{m} {k}" for m, k in sorted((r.get("forecast_methods") or {}).items())) or "-"
            lines.append(f"| {r['key']} | {rng(r.get('floor_gpu_hours'), fmt='{:.0f}')} | "
                         f"{rng(r.get('gpu_hours_without_provisioning'), fmt='{:.0f}')} | "
                         f"{rng(r.get('niw_deferral_p95_s'), 1 / 3600, '{:.2f}')} | "
                         f"{rng(r.get('niw_unserved_pct'), fmt='{:.1f}')} | {methods} |")
        if v.get("not_run"):
            lines.append(f"\nNot run in the time available: {', '.join(v['not_run'])}.")
        if f.get("tuning"):
            lines.append("\nReactive sweep (tuning points, mean over seeds):\n")
            lines.append("| point | knobs | GPU-h | IW-F / IW-N / NIW attainment |")
            lines.append("|---|---|---|---|")
            for tpt in f["tuning"]:
                att = " / ".join(f"{100 * tpt['attainment'][k]:.1f}%" if k in tpt["attainment"] else "-"
                                 for k in ("IW-F", "IW-N", "NIW"))
                knobs = ", ".join(f"{k} {x}" for k, x in tpt["point"].items())
                lines.append(f"| {tpt['key']} | {knobs} | {rng(tpt['gpu_hours'], fmt='{:.0f}')} | {att} |")
    return "\n".join(lines)


def _llama_change(runs: dict, strategy: str, seeds: list[int], base: str = "reactive-unified") -> dict | None:
    """Per seed: Llama-2 instance-hours of ``strategy`` vs the untuned Reactive, in % (the paper's Fig. 11 figure)."""
    from planner.comparisons.core.fair import _model_ih, _stats

    vals = []
    for seed in seeds:
        a, b = runs.get(f"{strategy}+s{seed}"), runs.get(f"{base}+s{seed}")
        if a and b:
            la, lb = _model_ih(a, "llama2-70b"), _model_ih(b, "llama2-70b")
            if la is not None and lb:
                vals.append(100.0 * (la - lb) / lb)
    return _stats(vals)


def paper_beside_ours(path: Path) -> str:
    """LT-UA against Reactive: the paper's figures and ours, case by case (generated)."""
    data = json.loads(path.read_text())

    def rng(st, fmt="{:+.1f}"):
        if not st:
            return "-"
        return f"{fmt.format(st['mean'])} [{fmt.format(st['min'])}, {fmt.format(st['max'])}]"

    lines = ["| case | LT-UA Llama-2 inst-h vs untuned Reactive (%) | LT-UA GPU-h saved vs untuned Reactive (%) | "
             "vs equal-SLO tuned Reactive (%) | tuned baseline | IW-F attainment Reactive / LT-UA |",
             "|---|---|---|---|---|---|",
             "| **paper** (Fig. 11 Jul 2025 / Nov 2024; abstract) | **-23.4 / -22.8** | **up to 25** | (not reported) "
             "| - | \"latency kept\" |"]
    for c, v in data["cases"].items():
        rows = {r["key"]: r for r in v["fair"]["rows"]}
        lt, ru = rows.get("lt-ua"), rows.get("reactive-unified")
        if not lt or not ru:
            continue
        att = " / ".join("-" if not r["attainment"].get("IW-F") else f"{100 * r['attainment']['IW-F']['mean']:.1f}%"
                         for r in (ru, lt))
        tuned = lt["vs_tuned"]
        n = min(lt["n"], ru["n"])
        lines.append(f"| {c} ({n} seed{'s' if n > 1 else ''}) | "
                     f"{rng(_llama_change(v['runs'], 'lt-ua', v['seeds']))} | "
                     f"{rng(lt['vs_untuned']['saved_gpu_hours_pct'])} | {rng(tuned.get('saved_gpu_hours_pct'))} | "
                     f"{tuned.get('baseline') or tuned.get('why') or '-'} | {att} |")
    return "\n".join(lines)


def _gpu_h(run: dict, *, waste: bool = True, small_gpus: int | None = None) -> float:
    """A run's GPU-hours re-counted: without the provisioning time, and/or with the 2-GPU models (Llama-3.x in
    our catalogue) billed at ``small_gpus`` GPUs instead of the preset's 8. Same runs, other accounting."""
    total = 0.0
    for e in run["endpoints"]:
        g = e.get("gpus_per_instance") or 8
        if small_gpus is not None and str(e.get("model", "")).startswith("llama3"):
            g = small_gpus
        ih = float(e["instance_hours"])
        if not waste:
            ih -= float(e.get("provisioning_gpu_hours") or 0.0) / float(e.get("gpus_per_instance") or 8)
        total += ih * g
    return total


def accounting(path: Path) -> str:
    """How LT-UA's GPU-hour saving over the untuned Reactive moves with two accounting choices of the authors'-code
    preset (the same runs re-counted, per seed, mean [min, max])."""
    from planner.comparisons.core.fair import _stats

    data = json.loads(path.read_text())
    lines = ["| case | as run (waste added, every model on 8 GPUs) | without provisioning waste | Llama-3.x billed at "
             "2 GPUs | both |", "|---|---|---|---|---|"]
    for c, v in data["cases"].items():
        if not c.startswith("code") or "ablate" in c:
            continue
        cells = []
        for kw in ({}, {"waste": False}, {"small_gpus": 2}, {"waste": False, "small_gpus": 2}):
            vals = []
            for seed in v["seeds"]:
                a, b = v["runs"].get(f"lt-ua+s{seed}"), v["runs"].get(f"reactive-unified+s{seed}")
                if a and b:
                    ga, gb = _gpu_h(a, **kw), _gpu_h(b, **kw)
                    vals.append(100.0 * (gb - ga) / gb)
            st = _stats(vals)
            cells.append("-" if not st else f"{st['mean']:+.1f} [{st['min']:+.1f}, {st['max']:+.1f}]")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


SINGLE_SEED = ROOT / "docs" / "results" / "sageserve.json"  # the earlier single-seed runs


def write_doc(results: Path, doc: Path) -> None:
    """Replace the generated blocks of docs/reproduction.md: <!-- generated:NAME --> ... <!-- /generated:NAME -->."""
    import subprocess

    old = subprocess.run([sys.executable, str(ROOT / "tests" / "benchmarks" / "reproduce_sageserve.py"), "--markdown"],
                         check=True, capture_output=True, text=True).stdout
    from tests.benchmarks.support.sageserve_doc import (
        a100_reading,
        llama2_churn,
        llama2_day,
        main_day_models,
        main_day_side_by_side,
        presets_in_short,
        ratio_table,
        saving_sources,
        scheduler_table,
        why_reactive,
    )

    blocks = {"paper-beside-ours": paper_beside_ours(results), "fair-tables": markdown(results),
              "accounting": accounting(results), "presets-in-short": presets_in_short(results),
              "saving-sources": saving_sources(results),
              **{name: fn(SINGLE_SEED) for name, fn in (("main-day-models", main_day_models),
                                                        ("a100-reading", a100_reading),
                                                        ("llama2-churn", llama2_churn),
                                                        ("main-day-side-by-side", main_day_side_by_side),
                                                        ("ratio-table", ratio_table),
                                                        ("scheduler-table", scheduler_table),
                                                        ("why-reactive", why_reactive),
                                                        ("llama2-day", llama2_day))},
              "sageserve-tables": old.strip()}
    from tests.benchmarks.support.sageserve_setup_doc import a100_theta, setup_facts, setup_table, why_scale_theta

    facts = setup_facts(SINGLE_SEED)
    blocks.update({"setup-table": setup_table(facts), "a100-theta": a100_theta(facts),
                   "why-scale-theta": why_scale_theta(facts)})
    text = doc.read_text()
    for name, body in blocks.items():
        begin, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
        if begin not in text or end not in text:
            raise SystemExit(f"{doc}: missing the markers {begin} ... {end}")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    doc.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-presets", action="store_true")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", default=str(ROOT / "var" / "fair_runs"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "results" / "sageserve_fair.json"))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--write-doc", action="store_true",
                    help="rewrite the generated tables of docs/reproduction.md from the results files")
    ap.add_argument("--no-tune", action="store_true", help="skip the Reactive sweeps (strategies only)")
    ap.add_argument("--cached-only", action="store_true",
                    help="run nothing: aggregate the runs already in the cache and list the others as not run")
    ap.add_argument("--seed-cache-from", default="",
                    help="an earlier results file: put its runs of the chosen cases into the cache where the cache "
                         "has none (only valid while the code and scenario files those runs came from are unchanged "
                         "for these cases: check with check_default_digest.py)")
    args = ap.parse_args()
    if args.write_presets:
        print(json.dumps({"presets": write_presets()}))
        return
    if args.markdown:
        print(paper_beside_ours(Path(args.out)) + "\n" + markdown(Path(args.out)))
        return
    if args.write_doc:
        write_doc(Path(args.out), ROOT / "docs" / "reproduction.md")
        print(json.dumps({"written": "docs/reproduction.md"}))
        return
    import warnings

    warnings.filterwarnings("ignore")
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; use {sorted(CASES)}")
    if args.seed_cache_from:
        seeded = seed_cache(Path(args.seed_cache_from), cases, Path(args.cache))
        print(f"seeded {seeded} cached runs from {args.seed_cache_from}", file=sys.stderr)
    data = run(cases, [int(x) for x in args.seeds.split(",")], args.workers, args.cache, Path(args.out),
               tune=not args.no_tune, cached_only=args.cached_only)
    short = {c: {r["key"]: {"gpu_h": round(r["gpu_hours"]["mean"], 1),
                            "saved_vs_untuned": r["vs_untuned"]["saved_gpu_hours_pct"],
                            "saved_vs_tuned": r["vs_tuned"].get("saved_gpu_hours_pct"),
                            "tuned_baseline": r["vs_tuned"].get("baseline"),
                            "iwf": r["attainment"].get("IW-F", {}).get("mean")}
                 for r in data["cases"][c]["fair"]["rows"]} for c in cases}
    print(json.dumps({"wall_s": round(data["wall_s_last_run"], 1), "results": short}, default=str))


if __name__ == "__main__":
    main()
