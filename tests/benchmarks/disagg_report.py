"""docs/disaggregation.md's figures: the splitwise-sim cross-check and aggregated vs disaggregated on two traces.

    python tests/benchmarks/disagg_report.py                  # our runs + the stored splitwise-sim figures -> the doc
    python tests/benchmarks/disagg_report.py --run-peer DIR --peer-python PY   # re-run splitwise-sim first
    python tests/benchmarks/disagg_report.py --json > figures.json; ... --figures figures.json   # runs, then the doc

Cross-check (the rules, fixed before running): the bundled Azure code trace (8,819 requests, 1 h, its own rate)
on splitwise-sim's Splitwise-HA configuration: prompt instances on DGX-H100, token instances on DGX-A100, both
Llama-2-70B TP8 (its ``start_state=splitwise``: max batch 512, 2,048 batch tokens), its ``kv_token_jsq`` scheduler
(prompt and token instance by fewest pending tokens, every KV cache shipped at ``transfer_bandwidth`` 200 GiB/s,
no overlap), its ``db`` performance model (data/perf_model.csv, the table our deployments are fitted to), seed 0.
Ours: the same counts, prefill deployment = the catalogue's llama2-70b/h100-80gb/tp8 with 2,048 batch tokens,
decode deployment = code_anchor.json's llama2-70b/a100-80gb/tp8, KV bytes per token as splitwise-sim sizes a
transfer (2 x hidden x layers x 2 B = 2,621,440: multi-head, not GQA), a link of 200 GiB/s and no latency, static
counts. Compared: TTFT and E2E p50 / p90 over all requests; within 10 % or the difference explained. Nothing is
tuned to agree.

splitwise-sim is run in its own environment (``--peer-python``: a Python with its requirements; ``--run-peer``: its
checkout): this script writes its trace CSV from the same fixture our run reads, runs ``run.py`` with Hydra
overrides and a local config without the Ray launcher, and stores the per-request percentiles in
tests/benchmarks/support/splitwise_sim_disagg.json (with the command and the checkout's commit); without
``--run-peer`` the stored figures are used. Its requirements that a run needs: hydra-core 1.3.2, omegaconf 2.3.0,
numpy, pandas, scipy, networkx (the Ray launcher is not used).

Splitwise's mixed pool: the same trace and machines under splitwise-sim's ``mixed_pool`` scheduler (its
configs/orchestrator_repo/schedulers/mixed_pool.yml: prompt queue threshold 8,192 tokens, 200 GiB/s), stored in
tests/benchmarks/support/splitwise_sim_mixed_pool.json with where each phase ran (its request_nodes.csv), against
ours with ``"mixed_pool": {"prefill_queue_tokens": 8192}``; each compared with its own run without the mixed pool.

Aggregated vs disaggregated (same GPUs: 4 instances of Llama-2-70B A100 TP8 as 4 aggregated instances or P + D =
4): the Azure code trace (prompt-heavy: mean prompt ~2,050 tokens, output ~28) and a decode-heavy synthetic
workload (no bundled trace is decode-heavy: 18,000 requests in 1 h, log-normal prompt mean 256 / output mean 512
tokens), InfiniBand HDR between the pools; each P + D split also with the mixed pool (threshold 8,192).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(ROOT))

PEER_FILE = ROOT / "tests" / "benchmarks" / "support" / "splitwise_sim_disagg.json"
MIXED_PEER_FILE = ROOT / "tests" / "benchmarks" / "support" / "splitwise_sim_mixed_pool.json"
PEER_TRACE = "planner_azure_code"
MIXED = {"prefill_queue_tokens": 8192}  # splitwise-sim's mixed_pool.yml prompt_max_pending_batch_tokens
DOC = ROOT / "docs" / "disaggregation.md"
# one prompt and one token machine: splitwise-sim's KVTokenJSQScheduler never adds a request's tokens to the
# instance's sched_pending_tokens (only completions subtract them), so with more machines it sends every request
# to the same prompt / token pair (seen in its request_nodes.csv); one of each is the configuration it simulates
CROSS = {"prompt_h100": 1, "token_a100": 1}
GIB_S = 200 * 1024**3 / 1e9  # splitwise-sim's transfer_bandwidth 200 (GiB/s) in GB/s
MHA_KV_BYTES = 2 * 8192 * 80 * 2  # splitwise-sim's estimate_kv_cache_size for Llama-2-70B fp16, per token
PCTS = ("p50", "p90")


def _anchor() -> dict:
    return json.loads((ROOT / "fixtures" / "scenarios" / "code_anchor.json").read_text())


def cross_scenario(prefill: dict | None = None, mixed: bool = False) -> dict:
    from planner.catalogue import builtin_engine_spec

    d = _anchor()
    a100 = dict(d["deployments"]["llama2-70b/a100-80gb/tp8"], kv_bytes_per_token=MHA_KV_BYTES)
    h100 = dict(builtin_engine_spec("llama2-70b/h100-80gb/tp8"), max_batch_tokens=2048, max_batch_size=512,
                kv_bytes_per_token=MHA_KV_BYTES)
    h100.pop("max_model_len", None)  # splitwise-sim applies no context limit
    if prefill:  # the diagnostic: another prefill latency curve, nothing else changed
        h100["prefill"] = {k: max(0.0, v) for k, v in prefill.items() if k in ("c0", "c1", "c2")}
    d["deployments"] = {"a100": a100, "h100": h100}
    d["name"] = "splitwise-sim cross-check: Splitwise-HA on the Azure code trace"
    d["fleet"]["endpoints"] = [{
        "region": "us-west", "model": "llama2-70b",
        "prefill_pool": {"deployment": "h100", "initial": CROSS["prompt_h100"], "min": CROSS["prompt_h100"],
                         "max": CROSS["prompt_h100"]},
        "decode_pool": {"deployment": "a100", "initial": CROSS["token_a100"], "min": CROSS["token_a100"],
                        "max": CROSS["token_a100"]},
        "kv_link": {"link_class": "infiniband-hdr", "bandwidth_gb_s": GIB_S, "latency_s": 0.0}}]
    if mixed:
        d["fleet"]["endpoints"][0]["mixed_pool"] = dict(MIXED)
    d["strategy"] = "static"
    return d


def _run(d: dict) -> dict:
    import numpy as np

    from simulations.engine import build_workload, parse_scenario, simulate

    sc = parse_scenario(d)
    r = simulate(sc, build_workload(sc))
    s = r.summary
    done = r.requests["completed"]
    phase = (r.requests["e2e_s"] - r.requests["ttft_s"])[done]
    out = {"requests": s["requests"], "completed": s["completed"], "gpu_hours": s["gpu_hours"],
           "ttft": s["ttft"], "e2e": s["e2e"], "tbt_mean": s["tbt_mean"], "queueing": s["queueing"],
           "decode_phase": {k: float(np.percentile(phase, int(k[1:]))) for k in ("p50", "p90", "p99")}}
    if "disaggregation" in s:
        out["disaggregation"] = {k: s["disaggregation"][k] for k in ("transfers", "transfer_s", "decode_wait_s",
                                                                     "kv_gb_moved", "mixed_pool")
                                 if k in s["disaggregation"]}
    return out


# ---------------------------------------------------------------------------------------------- the peer
def peer_trace(path: Path) -> None:
    """The fixture trace as splitwise-sim reads it (the same requests and arrival times our run simulates)."""
    from simulations.engine import build_workload, parse_scenario

    w = build_workload(parse_scenario(cross_scenario()))
    with path.open("w") as f:
        f.write("request_id,request_type,application_id,arrival_timestamp,batch_size,prompt_size,token_size\n")
        for i in range(len(w)):
            # +1 s: splitwise-sim's instances start at t = 0, after a request arriving then (no latency changes)
            f.write(f"{i},2,0,{float(w.arrival_s[i]) + 1.0!r},1,{int(w.input_tokens[i])},{int(w.output_tokens[i])}\n")


def _peer_args(scheduler: str) -> list[str]:
    p, t = CROSS["prompt_h100"], CROSS["token_a100"]
    return ["run.py", "--config-name", "planner_local", f"applications.0.scheduler={scheduler}",
            "applications.0.model_architecture=llama2-70b", "applications.0.model_size=llama2-70b-fp16",
            "cluster=half_half", f"cluster.servers.0.count={t}", f"cluster.servers.1.count={p}",
            "start_state=splitwise", "start_state.split_type=heterogeneous",
            "performance_model=db", f"trace.filename={PEER_TRACE}", "seed=0"]


def _peer_prepare(checkout: Path) -> None:
    peer_trace(checkout / "traces" / f"{PEER_TRACE}.csv")
    cfg = (checkout / "configs" / "config.yaml").read_text().splitlines()
    local, skip = [], False
    for line in cfg:  # the same configuration without the Ray launcher (a local run)
        if "override hydra/launcher: ray" in line:
            continue
        if line.startswith("  launcher:"):
            skip = True
        if not skip:
            local.append(line)
    (checkout / "configs" / "planner_local.yaml").write_text("\n".join(local) + "\n")


def _peer_run(checkout: Path, python: str, scheduler: str) -> Path:
    """Run splitwise-sim with ``scheduler``; its output folder."""
    subprocess.run([python, *_peer_args(scheduler)], cwd=checkout, check=True, capture_output=True)
    p, t = CROSS["prompt_h100"], CROSS["token_a100"]
    return checkout / "results" / "0" / "splitwise_1_1" / PEER_TRACE / f"{t}_{p}" / "llama2-70b" / scheduler


def _pct(x) -> dict:
    import numpy as np

    return {k: float(np.percentile(x, int(k[1:]))) for k in ("p50", "p90", "p99")}


def run_peer(checkout: Path, python: str) -> dict:
    import numpy as np

    _peer_prepare(checkout)
    out_dir = _peer_run(checkout, python, "kv_token_jsq")
    rows = np.genfromtxt(out_dir / "detailed" / "0.csv", delimiter=",", names=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True).stdout.strip()
    pct = _pct
    # its prompt service times (TTFT - queueing) of the requests that did not queue, fitted as ours are
    # (c0 + c1 P + c2 P^2): the diagnostic run below uses them in place of our fitted H100 prefill
    alone = rows["queue_times"] == 0
    size = rows["prompt_sizes"][alone]
    a = np.stack([np.ones_like(size), size, size * size], axis=1)
    coef = np.linalg.lstsq(a, (rows["ttft_times"] - rows["queue_times"])[alone], rcond=None)[0]
    peer = {"requests": int(len(rows)), "ttft": pct(rows["ttft_times"]), "e2e": pct(rows["response_times"]),
            "queue": pct(rows["queue_times"]), "decode_phase": pct(rows["response_times"] - rows["ttft_times"]),
            "prompt_time_fit": {"c0": float(coef[0]), "c1": float(coef[1]), "c2": float(coef[2]),
                                "requests": int(alone.sum())}, "commit": commit,
            "command": "python " + " ".join(_peer_args("kv_token_jsq")), "source": "Mutinifni/splitwise-sim"}
    PEER_FILE.write_text(json.dumps(peer, indent=1) + "\n")
    MIXED_PEER_FILE.write_text(json.dumps(run_peer_mixed(checkout, python, commit), indent=1) + "\n")
    return peer


def run_peer_mixed(checkout: Path, python: str, commit: str) -> dict:
    """splitwise-sim's ``MixedPoolScheduler`` (its configs/orchestrator_repo/schedulers/mixed_pool.yml: prompt
    queue threshold 8,192 tokens, the same 200 GiB/s) on the cross-check's trace and machines: its percentiles and
    where each phase ran (request_nodes.csv: PROMPT / TOKEN rows by machine, KVCacheTransfer rows)."""
    import csv
    from collections import Counter

    import numpy as np

    out_dir = _peer_run(checkout, python, "mixed_pool")
    rows = np.genfromtxt(out_dir / "detailed" / "0.csv", delimiter=",", names=True)
    where = Counter()
    with (out_dir / "request_nodes.csv").open() as f:
        for row in csv.DictReader(f):
            where[f"{row['node_type']}:{row['runner'].split('_')[0]}"] += 1
    return {"requests": int(len(rows)), "ttft": _pct(rows["ttft_times"]), "e2e": _pct(rows["response_times"]),
            "decode_phase": _pct(rows["response_times"] - rows["ttft_times"]),
            "prompts_on_token_machine": where["PROMPT:a100-80gb"], "tokens_on_prompt_machine": where["TOKEN:h100-80gb"],
            "transfers": where["KVCacheTransfer:DummyLink"], "commit": commit,
            "command": "python " + " ".join(_peer_args("mixed_pool")), "source": "Mutinifni/splitwise-sim"}


# ---------------------------------------------------------------------------------------------- agg vs disagg
def _fleet(d: dict, p: int | None, q: int | None, total: int, mixed: bool = False) -> dict:
    d = copy.deepcopy(d)
    name = "llama2-70b/a100-80gb/tp8"
    d["deployments"][name]["kv_bytes_per_token"] = 327680  # Llama-2-70B GQA fp16: 80 x 8 x 128 x 2 x 2 B
    if p is None:
        d["fleet"]["endpoints"] = [{"region": "us-west", "model": "llama2-70b", "deployment": name,
                                    "initial": total, "min": total, "max": total}]
    else:
        d["fleet"]["endpoints"] = [{"region": "us-west", "model": "llama2-70b",
                                    "prefill_pool": {"deployment": name, "initial": p, "min": p, "max": p},
                                    "decode_pool": {"deployment": name, "initial": q, "min": q, "max": q},
                                    "kv_link": {"link_class": "infiniband-hdr"}}]
        if mixed:
            d["fleet"]["endpoints"][0]["mixed_pool"] = dict(MIXED)
    d["strategy"] = "static"
    return d


def traces() -> dict:
    code = _anchor()
    chat = _anchor()
    chat["workload"] = {"synthetic": {
        "duration_s": 3600, "total_requests": 18000, "diurnal_amplitude": 0.0, "tier_mix": {"IW-F": 1.0},
        "model_weights": {"llama2-70b": 1.0}, "region_weights": {"us-west": 1.0},
        "input_tokens": {"mean": 256, "sigma": 1.0, "max": 4096},
        "output_tokens": {"mean": 512, "sigma": 0.8, "max": 4096}}}
    return {"prompt-heavy (Azure code trace: prompt mean 2,048, output mean 28 tokens)": code,
            "decode-heavy (synthetic, 5 req/s for 1 h: prompt mean 256, output mean 512 tokens, log-normal)": chat}


def comparison(total: int = 4) -> dict:
    out = {}
    for name, base in traces().items():
        rows = {"aggregated": _run(_fleet(base, None, None, total))}
        for p in range(1, total):
            rows[f"disaggregated {p}P + {total - p}D"] = _run(_fleet(base, p, total - p, total))
        for p in range(1, total):
            rows[f"{p}P + {total - p}D, mixed pool"] = _run(_fleet(base, p, total - p, total, mixed=True))
        out[name] = rows
    return out


# ---------------------------------------------------------------------------------------------- the doc
def _row(label: str, r: dict, extra: str = "") -> str:
    t, e, b = r["ttft"], r["e2e"], r["tbt_mean"]
    return (f"| {label} | {t['p50']:.3f} / {t['p90']:.3f} / {t['p99']:.2f} | {e['p50']:.2f} / {e['p90']:.2f} / "
            f"{e['p99']:.2f} | {b['p50'] * 1000:.1f} |{extra}")


def render_mixed(ours: dict, mixed: dict, peer: dict) -> list[str]:
    """The mixed-pool section: splitwise-sim's MixedPoolScheduler against ours, each against its own split."""
    mp, mo = mixed["peer"], mixed["ours"]
    lines = ["## Splitwise's mixed pool against splitwise-sim's", "",
             f"The cross-check's trace and machines (1 H100 prompt + 1 A100 token machine), with the mixed pool: "
             f"splitwise-sim's `mixed_pool` scheduler (commit `{mp['commit'][:12]}`, command `{mp['command']}`), ours "
             f"with `\"mixed_pool\": {json.dumps(MIXED)}` (its threshold). Each simulator's change is against its own "
             "run without the mixed pool (the table above).", "",
             "| figure (s) | splitwise-sim | with mixed pool | change | ours | with mixed pool | change |",
             "|---|---|---|---|---|---|---|"]
    names = {"ttft": "TTFT", "e2e": "E2E", "decode_phase": "E2E - TTFT"}
    for metric in ("ttft", "e2e", "decode_phase"):
        for p in ("p50", "p90", "p99"):
            a, b, c, d = peer[metric][p], mp[metric][p], ours[metric][p], mo[metric][p]
            lines.append(f"| {names[metric]} {p} | {a:.3f} | {b:.3f} | {100 * (b - a) / a:+.1f} % | {c:.3f} | "
                         f"{d:.3f} | {100 * (d - c) / c:+.1f} % |")
    m = mo["disaggregation"]["mixed_pool"]
    lines += ["", "| where the work ran | splitwise-sim | ours |", "|---|---|---|",
              f"| prompts on the token (decode) machine | {mp['prompts_on_token_machine']:,} | "
              f"{m['prompts_on_decode_instances']:,} |",
              f"| decodes on the prompt (prefill) machine | {mp['tokens_on_prompt_machine']:,} | "
              f"{m['decodes_on_prefill_instances']:,} |",
              f"| KV transfers | {mp['transfers']:,} | {mo['disaggregation']['transfers']:,} |", "",
              open(ROOT / "tests" / "benchmarks" / "support" / "disagg_doc_mixed.md").read().rstrip(), ""]
    return lines


def render(ours: dict, diag: dict, peer: dict, comp: dict, mixed: dict | None = None) -> str:
    lines = [open(ROOT / "tests" / "benchmarks" / "support" / "disagg_doc_head.md").read().rstrip(), "",
             "## splitwise-sim cross-check", "",
             f"Generated by `python tests/benchmarks/disagg_report.py` (rules in its docstring). splitwise-sim "
             f"commit `{peer['commit'][:12]}`, command `{peer['command']}`; {peer['requests']:,} requests there, "
             f"{ours['requests']:,} here ({ours['completed']:,} completed).", "",
             "| figure (s) | splitwise-sim | ours | difference | ours, its prompt times (diagnostic) | difference |",
             "|---|---|---|---|---|---|"]
    names = {"ttft": "TTFT", "e2e": "E2E", "decode_phase": "E2E - TTFT"}
    for metric in ("ttft", "e2e", "decode_phase"):
        for p in ("p50", "p90", "p99"):
            a, b, c = peer[metric][p], ours[metric][p], diag[metric][p]
            lines.append(f"| {names[metric]} {p} | {a:.3f} | {b:.3f} | {100 * (b - a) / a:+.1f} % | {c:.3f} | "
                         f"{100 * (c - a) / a:+.1f} % |")
    f = peer["prompt_time_fit"]
    lines += ["", f"The diagnostic column replaces only our H100 prefill curve by splitwise-sim's own prompt times, "
                  f"fitted the same way (c0 + c1 P + c2 P^2 by least squares over the {f['requests']:,} requests "
                  f"that did not queue there: c0 {f['c0']:.4f} s, c1 {f['c1']:.3e} s, c2 {f['c2']:.3e} s)."]
    d = ours["disaggregation"]
    lines += ["", f"Ours also reports the KV transfer (p50 / p90 {d['transfer_s']['p50'] * 1000:.2f} / "
                  f"{d['transfer_s']['p90'] * 1000:.2f} ms) and the decode-side wait (p50 / p90 "
                  f"{d['decode_wait_s']['p50'] * 1000:.1f} / {d['decode_wait_s']['p90'] * 1000:.1f} ms); "
                  f"{d['kv_gb_moved']:,.0f} GB moved.", "",
              open(ROOT / "tests" / "benchmarks" / "support" / "disagg_doc_cross.md").read().rstrip(), ""]
    if mixed:
        lines += render_mixed(ours, mixed, peer)
    lines += ["## Aggregated vs disaggregated: when the split pays", "",
              "Four Llama-2-70B A100 TP8 instances either way (same GPU-hours); TTFT and E2E p50 / p90 / p99 in s, "
              "mean time between tokens p50 in ms.", ""]
    for name, rows in comp.items():
        lines += [f"### {name}", "", "| fleet | TTFT p50 / p90 / p99 | E2E p50 / p90 / p99 | TBT p50 (ms) |",
                  "|---|---|---|---|"]
        lines += [_row(label, r) for label, r in rows.items()]
        lines.append("")
    lines.append(open(ROOT / "tests" / "benchmarks" / "support" / "disagg_doc_tail.md").read().rstrip())
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-peer", type=Path, help="a splitwise-sim checkout: run it and store its figures")
    ap.add_argument("--peer-python", default=sys.executable, help="the Python that has splitwise-sim's requirements")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON instead of writing the doc")
    ap.add_argument("--figures", type=Path, help="write the doc from the figures a --json run printed (no runs)")
    args = ap.parse_args(argv)
    if args.figures:
        f = json.loads(args.figures.read_text())
        DOC.write_text(render(f["ours"], f["diagnostic"], f["peer"], f["comparison"], f.get("mixed")))
        return 0
    peer = run_peer(args.run_peer, args.peer_python) if args.run_peer else json.loads(PEER_FILE.read_text())
    ours = _run(cross_scenario())
    diag = _run(cross_scenario(peer["prompt_time_fit"]))
    mixed = {"peer": json.loads(MIXED_PEER_FILE.read_text()), "ours": _run(cross_scenario(mixed=True))}
    comp = comparison()
    if args.json:
        print(json.dumps({"peer": peer, "ours": ours, "diagnostic": diag, "comparison": comp, "mixed": mixed}))
        return 0
    DOC.write_text(render(ours, diag, peer, comp, mixed))
    print(f"wrote {DOC.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        sys.exit(main(sys.argv[1:]))
