"""The validation report: docs/validation.md from real runs (Django-free, deterministic for given inputs).

    python -m planner.benchmarks.core.report RUNS_DIR --gpu h100-80gb --out docs/validation.md \
        [--json docs/results/validation.json] [--seeds 3] [--fit-scale 0.15] [--maxiter 100]

RUNS_DIR holds one inference-perf result folder per experiment. Protocol (fixed before the first run):
- leave one experiment out: for each experiment, the GPU type's efficiencies are fitted (calibrate.fit, on the
  first ``fit_scale`` of every stage, one seed) on all the other experiments, and the one left out is
  re-simulated in full over ``seeds`` arrival seeds and compared stage by stage;
- overloaded stages (validate.stage_overloaded) never enter a fit or a score; they are shown;
- cross-model: fitted on every run of one model, predicting every run of another (Llama-2-7B <-> Llama-2-70B);
- in-sample: fitted on all runs, predicting all runs (the coefficients a user would ship).
- the re-simulation's rules are resim.py's (V1 scheduling and prefix caching for vLLM >= 0.8; async scheduling's
  one step ahead for vLLM >= 0.14); the all-reduce latency of the physics model grows with TP - 1 (ring).

Rules of the run after the physics and fit-window revision (fixed before it ran; the figures of the run before
are in git history):
- model: decode GEMMs and LM head added to the weight read (as a prefill's; measured before: the in-sample load
  slope of every GQA model was too shallow, Llama-2-70B -9.5 % at 20 req/s and +4.3 % at 5); the TP all-reduce
  sends 2 (TP-1)/TP of the tensor one way (half the datasheet's two-way NVLink figure) at a fitted share eta_link
  (<= 1) of it, shared by TP 2 and TP 4 as the per-hop latency is; six coefficients per GPU type, none per
  experiment or model;
- fit window: the first ``fit_scale`` of every stage after a warm-up that sends the prompt pool once (resim.py);
- async scheduling simulated by the engine (no post-hoc step);
- command: ``--gpu h100-80gb --maxiter 30 --jobs 4`` (seeds 3, fit-scale 0.15); 30 iterations, not 100: the host
  gives one process 6-20 % of a core (load 12-17), 14 fits of about 110 evaluations (about 1.3 CPU-s each) take
  about 45 CPU-min at 30 iterations, and three times that at 100 would not end within the working day;
- what counts: the leave-one-experiment-out median absolute error of the stage E2E mean (target 5 %) and TTFT mean
  (target 10 %) per model over the scored stages; a model missing a target is listed with its fold's coefficients.

Second level (``--per-model-from-json SAVED``, run after the first; rules fixed before it ran): per model where
data exists. For each experiment left out, start from the GPU type's coefficients of its fold (saved by the first
level, fitted without it), refit only eta_mem and eta_flop on the other experiments of the same model (same
fit settings), and predict the one left out the same way. A model with no other experiment keeps its GPU type's
coefficients. Reported beside the first level, which stays the score of a model never seen.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from planner.benchmarks.core import calibrate
from planner.benchmarks.core.inferenceperf import parse_folder
from planner.benchmarks.core.resim import simulate_run
from planner.benchmarks.core.schema import BenchmarkRun
from planner.benchmarks.core.upload import read_path
from planner.benchmarks.core.validate import compare, pooled, stage_overloaded
from planner.catalogue.physics import Efficiency, architecture

CITE = ("inference-sim/sim-to-real-accuracy-validation @ 0205ebd, results/figure_captions.md (summary-level MAPE "
        "per experiment, i.e. over the whole run, not per stage; 36 experiments on vLLM v0.15.1 incl. models not "
        "in the 16 runs here)")
PUBLISHED = [
    ("BLIS (blis-trained-physics), H100", "median 6.5 % E2E mean (Fig. 2)", CITE),
    ("BLIS, A100-80GB / L40S", "~16 % / ~13 % E2E mean (Fig. 2; n = 4 / 2)", CITE),
    ("BLIS, reasoning workload", "42 % E2E mean (Fig. 3, one experiment)", CITE),
    ("BLIS, all experiments, all metrics", "~10 % median MAPE (Fig. 5)", CITE),
    ("LLM-Optimizer (analytical)", "~65 % median MAPE (Fig. 5); ~90 % on Mixtral (Fig. 4b)", CITE),
    ("LLMServingSim", "~65 % median MAPE (Fig. 5)", CITE),
    ("Vidur", "> 1,000 % median MAPE, TTFT > 10,000 % (Figs. 1, 5)", CITE),
    ("Vidur (its own paper)", "< 9 % (its own validation)", "Agrawal et al., Vidur, MLSys 2024, abstract"),
]


def load_runs(root: Path, gpu: str) -> list[BenchmarkRun]:
    runs = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        files, _ = read_path(d)
        runs.append(parse_folder(files, name=d.name, gpu=gpu))
    return runs


def model_of(run: BenchmarkRun) -> str:
    return architecture(run.engine.model).name


def _scored(run: BenchmarkRun) -> bool:
    return any(not stage_overloaded(s) for s in run.stages)


def _fit_task(task):
    """One fit of the report in a worker: (key, training runs, fit_scale, maxiter[, fit keywords]) -> (key,
    efficiency, info)."""
    key, train, fit_scale, maxiter, *extra = task
    eff, info = calibrate.fit(train, duration_scale=fit_scale, maxiter=maxiter, **(extra[0] if extra else {}))
    return key, eff, info


def _predict_task(task):
    """One prediction in a worker: (key, run, efficiency, seeds) -> (key, rows)."""
    key, run, eff, seeds = task
    return key, compare(run, simulate_run(run, eff, seeds=seeds))


def _pool_map(fn, tasks, jobs: int):
    """``map(fn, tasks)`` over ``jobs`` worker processes (forked; 1: in this process). Every task is deterministic,
    so the result does not depend on ``jobs``."""
    if jobs <= 1 or len(tasks) <= 1:
        return list(map(fn, tasks))
    with ProcessPoolExecutor(jobs, mp_context=get_context("fork")) as ex:
        return list(ex.map(fn, tasks))


CROSS = (("llama2-7b", "llama2-70b"), ("llama2-70b", "llama2-7b"))


def _fold_task(task):
    """A fit and the predictions it serves, in a worker: (key, training runs, fit_scale, maxiter, runs to predict,
    seeds) -> (key, efficiency, info, {run name: rows}). Logs the coefficients and each stage as they come."""
    key, train, fit_scale, maxiter, test, seeds = task
    eff, info = calibrate.fit(train, duration_scale=fit_scale, maxiter=maxiter)
    _log(f"fit {'/'.join(key)}: loss {info['loss']:.4f}, {info['evaluations']} evaluations, "
         + ", ".join(f"{k} {v:.4g}" for k, v in eff.to_dict().items()))
    rows = {}
    for run in test:
        rows[run.name] = compare(run, simulate_run(run, eff, seeds=seeds))
        for x in rows[run.name]:
            _log(f"{'/'.join(key)} predicts {run.name} stage {x['stage']}: E2E {x['error_pct']['e2e_mean']:.1f} %, "
                 f"TTFT {x['error_pct']['ttft_mean']:.1f} %{' (overloaded)' if x['overloaded'] else ''}")
    return key, eff, info, rows


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def first_level(runs, *, seeds, fit_scale, maxiter, log=_log, jobs: int = 1) -> dict:
    """Every fit with the predictions it serves (a fold per scored experiment predicting it, the cross-model fits
    predicting the other model; Llama-2-70B's folds first), the fit on all runs, then the in-sample predictions,
    spread over ``jobs`` processes. An experiment without a scored stage never enters a fit: the fit without it is
    the fit on all runs, so its row is its in-sample row."""
    order = sorted((r for r in runs if _scored(r)), key=lambda r: model_of(r) != "llama2-70b")
    tasks = [(("loeo", r.name), [x for x in runs if x is not r], fit_scale, maxiter, [r], seeds) for r in order]
    tasks.insert(len([r for r in order if model_of(r) == "llama2-70b"]), (("all",), runs, fit_scale, maxiter, [], seeds))
    tasks += [(("cross", a, b), [r for r in runs if model_of(r) == a], fit_scale, maxiter,
               [r for r in runs if model_of(r) == b], seeds) for a, b in CROSS]
    done = {key: (eff, info, rows) for key, eff, info, rows in _pool_map(_fold_task, tasks, jobs)}
    all_eff = done[("all",)][0]
    inside = dict(_pool_map(_predict_task, [(r.name, r, all_eff, seeds) for r in runs], jobs))
    fits, loeo = {}, []
    for r in runs:
        eff, info, rows = done.get(("loeo", r.name), (all_eff, {"loss": None}, {r.name: inside[r.name]}))
        fits[r.name] = {"efficiency": eff.to_dict(), "loss": info["loss"]}
        loeo.extend(rows[r.name])
    cross = []
    for a, b in CROSS:
        eff, _, rows = done[("cross", a, b)]
        got = [x for r in runs if model_of(r) == b for x in rows[r.name]]
        cross.append({"source": a, "target": b, "efficiency": eff.to_dict(), "rows": got, "pooled": pooled(got)})
    in_rows = [x for r in runs for x in inside[r.name]]
    return {"loeo": {"rows": loeo, "pooled": pooled(loeo), "per_model": per_model(loeo), "fits": fits},
            "cross": cross, "in_sample": {"efficiency": all_eff.to_dict(), "rows": in_rows, "pooled": pooled(in_rows)}}


def per_model_level(runs, saved: dict, *, seeds, fit_scale, maxiter, log, jobs: int = 1) -> tuple[list[dict], dict]:
    base = {r.name: Efficiency.from_dict(saved["loeo"]["fits"][r.name]["efficiency"]) for r in runs}
    same = {r.name: [x for x in runs if x is not r and model_of(x) == model_of(r) and _scored(x)] for r in runs}
    tasks = [(r.name, same[r.name], fit_scale, maxiter, {"start": base[r.name], "free": ("eta_mem", "eta_flop")})
             for r in runs if same[r.name] and _scored(r)]
    fitted = {key: (eff, info) for key, eff, info in _pool_map(_fit_task, tasks, jobs)}
    fits = {}
    for r in runs:
        eff, info = fitted.get(r.name, (base[r.name], {"loss": None}))
        fits[r.name] = {"efficiency": eff.to_dict(), "loss": info["loss"], "model_runs": [x.name for x in same[r.name]]}
    got = dict(_pool_map(_predict_task, [(r.name, r, fitted.get(r.name, (base[r.name],))[0], seeds) for r in runs],
                         jobs))
    rows = []
    for r in runs:
        rows.extend(got[r.name])
        for x in got[r.name]:
            log(f"per-model {r.name} stage {x['stage']}: E2E {x['error_pct']['e2e_mean']:.1f} %, TTFT "
                f"{x['error_pct']['ttft_mean']:.1f} %{' (overloaded)' if x['overloaded'] else ''}")
    return rows, fits


def per_model(rows: list[dict]) -> dict:
    out = {}
    for name in sorted({architecture(r["model"]).name for r in rows}):
        out[name] = pooled([r for r in rows if architecture(r["model"]).name == name])
    return out


def _f(block: dict | None, key: str = "median") -> str:
    return "-" if not block else f"{block[key]:.1f}"


_GROUP_HEADER = ["| group | stages | E2E mean | E2E p90 | E2E p99 | TTFT mean | TTFT p90 | TTFT p99 | per-token |",
                 "|---|---|---|---|---|---|---|---|---|"]


def _group_line(name: str, p: dict) -> str:
    return (f"| {name} | {p['stages_scored']} | {_f(p['e2e_mean'])} / {_f(p['e2e_mean'], 'p90')} | "
            f"{_f(p['e2e_p90'])} | {_f(p['e2e_p99'])} | {_f(p['ttft_mean'])} / {_f(p['ttft_mean'], 'p90')} | "
            f"{_f(p['ttft_p90'])} | {_f(p['ttft_p99'])} | {_f(p['per_token'])} |")


def _group_lines(level: dict) -> list[str]:
    """The pooled row and one row per model."""
    return [_group_line("all models", level["pooled"]),
            *(_group_line(name, p) for name, p in level["per_model"].items())]


def _header(result: dict) -> list[str]:
    return [
        "# Validation against real serving engines",
        "",
        "Generated by `python -m planner.benchmarks.core.report` (command and protocol below); do not edit by hand.",
        "",
        f"Data: {result['source']} ({len(result['runs'])} experiments: inference-perf against vLLM v0.15.1 on "
        f"{result['gpu']}; see fixtures/benchmarks/SOURCES.md). Latency model: the physics model "
        "(planner/catalogue/physics.py) with one set of efficiency coefficients per GPU type, fitted by "
        "simulate-and-fit (planner/benchmarks/core/calibrate.py). Nothing is fitted per experiment. The engine "
        "schedules as vLLM V1 does (one token budget per step, decodes first, chunked prefills) with prefix caching "
        "on 16-token blocks and vLLM's async scheduling (the default from v0.14.0: a request that arrives while a "
        "step runs joins one step later; simulations/engine/instance/chunked.py).",
        "",
        "Command:",
        "",
        "```sh",
        result["command"],
        "```",
        "",
        "The full result (every row, every fold's coefficients) is kept in docs/results/validation.json; "
        "`--from-json docs/results/validation.json` re-renders this page without simulating.",
        "",
        f"Arrival seeds per prediction: {result['seeds']}; fit on the first {result['fit_scale']:.0%} of every "
        f"stage (one seed) after a warm-up, Nelder-Mead with up to {result['maxiter']} iterations per simplex; "
        f"wall time {result['wall_s'] / 60:.0f} min on a shared 2-core machine ({result.get('jobs', 1)} worker "
        "process(es)).",
    ]


def _loeo_section(loeo: dict) -> list[str]:
    lines = [
        "## Leave one experiment out (the score)",
        "",
        "Absolute percentage error of the simulated vs measured stage statistics, pooled over the scored stages "
        "(median / p90). Overloaded stages (more than 10 % failed, or mean TTFT above half the mean E2E: the 'reasoning' "
        "runs) are shown in the table below but not scored.",
        "",
        *_GROUP_HEADER,
        *_group_lines(loeo),
        "", "Targets: median <= 5 % on the stage E2E mean and <= 10 % on the stage TTFT mean (Llama-2-7B and "
        "-70B at least). Reached here:", "",
    ]
    for name in ("llama2-7b", "llama2-70b"):
        p = loeo["per_model"].get(name)
        if p and p["e2e_mean"] and p["ttft_mean"]:
            e, t = p["e2e_mean"]["median"], p["ttft_mean"]["median"]
            lines.append(f"- {name}: E2E {e:.1f} % ({'met' if e <= 5 else 'missed'}), TTFT {t:.1f} % "
                         f"({'met' if t <= 10 else 'missed'})")
    both = [r for r in loeo["rows"] if architecture(r["model"]).name in ("llama2-7b", "llama2-70b")]
    pb = pooled(both)
    if pb["e2e_mean"] and pb["ttft_mean"]:
        lines.append(f"- Llama-2-7B and -70B pooled ({pb['stages_scored']} stages): E2E "
                     f"{pb['e2e_mean']['median']:.1f} %, TTFT {pb['ttft_mean']['median']:.1f} %")
    return lines


def _per_stage_section(rows: list[dict]) -> list[str]:
    lines = ["### Per stage (leave one experiment out)", "",
             "| experiment | stage | rate | TTFT ms meas / sim | err % | E2E s meas / sim | err % | E2E p90 err % | "
             "E2E p99 err % | per-token ms meas / sim | |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, s, e = r["measured"], r["simulated"], r["error_pct"]
        lines.append(
            f"| {r['run']} | {r['stage']} | {r['rate']:g} | {1e3 * m['ttft_mean']:.1f} / {1e3 * s['ttft_mean']:.1f} | "
            f"{e['ttft_mean']:.1f} | {m['e2e_mean']:.3f} / {s['e2e_mean']:.3f} | {e['e2e_mean']:.1f} | "
            f"{e['e2e_p90']:.1f} | {e['e2e_p99']:.1f} | {1e3 * m['per_token']:.2f} / {1e3 * s['per_token']:.2f} | "
            f"{'overloaded, not scored' if r['overloaded'] else ''} |")
    return lines


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def _signed(r: dict) -> list[float]:
    m, s = r["measured"], r["simulated"]
    return [100 * (s[k] / m[k] - 1) for k in ("e2e_mean", "ttft_mean", "per_token")]


def _misses_section(loeo: dict, in_sample: dict | None = None) -> list[str]:
    """Every scored stage of a model that misses a target, with the signed errors, the coefficients of the fold
    that predicted it, and the same stage's signed E2E error in sample (fitted on all runs, itself included): a
    stage the in-sample fit misses as much is beyond the model's shape, not the fold's coefficients."""
    fits = loeo["fits"].values()
    at_bound = sum(f["efficiency"]["eta_flop"] >= calibrate.BOUNDS["eta_flop"][1] for f in fits)
    lines = ["### Where the targets are missed", "",
             "Signed errors (simulated - measured) of the scored stages of each model over a target (E2E 5 %, TTFT "
             "10 %), with the coefficients of the fold that predicted the stage (fitted without its experiment) and "
             "the stage's E2E error in sample (fitted on all runs, itself included). "
             f"eta_flop sits at its upper bound ({calibrate.BOUNDS['eta_flop'][1]:g}) in {at_bound} of {len(fits)} "
             "folds (the overloaded experiments' folds share the fit on all runs). TP 4 is served by one model only "
             "(Llama-2-70B): its TP terms (all-reduce latency and link share) are shared with TP 2, but leaving one "
             "of its experiments out still moves them.", "",
             "| model | experiment | stage | E2E % | TTFT % | per-token % | in-sample E2E % | fold allreduce_s (us) | "
             "fold eta_link | fold eta_flop |", "|---|---|---|---|---|---|---|---|---|---|"]
    inside = {(r["run"], r["stage"]): r for r in (in_sample or {}).get("rows", [])}
    for name, p in loeo["per_model"].items():
        if not (p["e2e_mean"] and p["ttft_mean"]) or (p["e2e_mean"]["median"] <= 5 and p["ttft_mean"]["median"] <= 10):
            continue
        for r in (r for r in loeo["rows"] if architecture(r["model"]).name == name and not r["overloaded"]):
            eff = loeo["fits"][r["run"]]["efficiency"]
            signed = _signed(r)
            ins = inside.get((r["run"], r["stage"]))
            lines.append(f"| {name} | {r['run']} | {r['stage']} | {signed[0]:+.1f} | {signed[1]:+.1f} | "
                         f"{signed[2]:+.1f} | {f'{_signed(ins)[0]:+.1f}' if ins else '-'} | "
                         f"{1e6 * eff['allreduce_s']:.2f} | {_fmt(eff.get('eta_link'))} | {eff['eta_flop']:.2f} |")
    return lines


def _per_model_level_section(level2: dict) -> list[str]:
    return ["## Second level: per-model eta_mem and eta_flop where the model has other runs", "",
            "Same folds; on top of each fold's GPU-type coefficients, eta_mem and eta_flop refitted on the other "
            "experiments of the same model only. Command:", "", "```sh", level2["command"], "```", "",
            *_GROUP_HEADER, *_group_lines(level2)]


def _cross_section(cross: list[dict]) -> list[str]:
    lines = ["## Calibrate on one model, predict another", "",
             "| fitted on | predicting | stages | E2E mean median / p90 | TTFT mean median / p90 |", "|---|---|---|---|---|"]
    for c in cross:
        p = c["pooled"]
        lines.append(f"| {c['source']} | {c['target']} | {p['stages_scored']} | {_f(p['e2e_mean'])} / "
                     f"{_f(p['e2e_mean'], 'p90')} | {_f(p['ttft_mean'])} / {_f(p['ttft_mean'], 'p90')} |")
    return lines


def _in_sample_and_published(in_sample: dict) -> list[str]:
    p, eff = in_sample["pooled"], in_sample["efficiency"]
    lines = ["## In sample (fitted on all, predicting all)", "",
             f"Median E2E mean error {_f(p['e2e_mean'])} %, TTFT mean {_f(p['ttft_mean'])} %, per-token "
             f"{_f(p['per_token'])} % over {p['stages_scored']} stages. Coefficients: "
             + ", ".join(f"{k} = {v:.4g}" for k, v in eff.items()) + ".",
             "", "## Published figures on the same experiments", "",
             "| simulator | error | source |", "|---|---|---|"]
    lines.extend(f"| {name} | {err} | {src} |" for name, err, src in PUBLISHED)
    lines += ["", "Their errors are per experiment (the whole run); ours are per load stage (finer: a two-stage run "
              "counts twice). Figures copied from the cited file, not re-derived here.", ""]
    return lines


def markdown(result: dict) -> str:
    """docs/validation.md from a report result (fresh or re-read from its JSON)."""
    sections = [_header(result), _loeo_section(result["loeo"]), _per_stage_section(result["loeo"]["rows"]),
                _misses_section(result["loeo"], result.get("in_sample"))]
    if result.get("per_model_level"):
        sections.append(_per_model_level_section(result["per_model_level"]))
    sections += [_cross_section(result["cross"]), _in_sample_and_published(result["in_sample"])]
    return "\n\n".join("\n".join(s) for s in sections)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m planner.benchmarks.core.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs_dir")
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", default="docs/validation.md")
    ap.add_argument("--json", default="")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--fit-scale", type=float, default=0.15)
    ap.add_argument("--maxiter", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes for the fits and predictions (the result "
                    "does not depend on it)")
    ap.add_argument("--source-label", default="", help="how the data folder is named in the report")
    ap.add_argument("--from-json", default="", help="re-render --out from a saved --json result (no simulation)")
    ap.add_argument("--per-model-from-json", default="",
                    help="second level: per-model eta_mem / eta_flop on top of the saved first level; updates the "
                         "saved JSON and --out")
    args = ap.parse_args(argv)
    if args.from_json:
        Path(args.out).write_text(markdown(json.loads(Path(args.from_json).read_text())))
        return 0
    if args.per_model_from_json:
        saved_path = Path(args.per_model_from_json)
        saved = json.loads(saved_path.read_text())
        start = time.time()
        runs = load_runs(Path(args.runs_dir), args.gpu)
        rows, fits = per_model_level(runs, saved, seeds=tuple(range(args.seeds)), fit_scale=args.fit_scale,
                                     maxiter=args.maxiter, log=lambda m: print(m, file=sys.stderr, flush=True),
                                     jobs=args.jobs)
        saved["per_model_level"] = {
            "command": " ".join(["python -m planner.benchmarks.core.report", *(argv or sys.argv[1:])]),
            "rows": rows, "pooled": pooled(rows), "per_model": per_model(rows), "fits": fits,
            "wall_s": time.time() - start}
        saved_path.write_text(json.dumps(saved, indent=1))
        Path(args.out).write_text(markdown(saved))
        print(json.dumps({"pooled": saved["per_model_level"]["pooled"],
                          "per_model": saved["per_model_level"]["per_model"]}))
        return 0
    start = time.time()
    runs = load_runs(Path(args.runs_dir), args.gpu)
    seeds = tuple(range(args.seeds))
    kw = {"seeds": seeds, "fit_scale": args.fit_scale, "maxiter": args.maxiter}

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    level = first_level(runs, log=log, jobs=args.jobs, **kw)
    for c in level["cross"]:
        log(f"cross {c['source']} -> {c['target']}: E2E {_f(c['pooled']['e2e_mean'])} %")
    result = {
        "command": " ".join(["python -m planner.benchmarks.core.report", *(argv or sys.argv[1:])]),
        "source": args.source_label or Path(args.runs_dir).name, "gpu": args.gpu, "runs": [r.name for r in runs],
        "seeds": args.seeds, "fit_scale": args.fit_scale, "maxiter": args.maxiter, "jobs": args.jobs, **level,
    }
    result["wall_s"] = time.time() - start
    Path(args.out).write_text(markdown(result))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1))
    print(json.dumps({"loeo": result["loeo"]["pooled"], "per_model": result["loeo"]["per_model"],
                      "cross": [c["pooled"] for c in result["cross"]], "in_sample": result["in_sample"]["pooled"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
