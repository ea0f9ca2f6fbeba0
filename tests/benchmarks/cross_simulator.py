"""Cross-simulator check: our TTFT / E2E / TPOT percentiles and preemptions per request on the anchor
fleet, before and after vLLM-faithful admission, beside splitwise-sim's and SageServe's simulator's figures.

    python tests/benchmarks/cross_simulator.py                       # all traces and variants (about 1-3 minutes)
    python tests/benchmarks/cross_simulator.py --traces code --variants before,after
    python tests/benchmarks/cross_simulator.py --json                # one JSON object on the last line

Fleet: fixtures/scenarios/code_anchor.json (8 x Llama-2-70B on A100-80GB TP8, KV 1.33M tokens, max batch 512,
max 8,192 batch tokens, FCFS, token-JSQ, one region, no autoscaling, no network delay). Traces (bundled fixtures):
``code`` the Azure code trace (8,819 requests, 1 h) at its own rate; ``code_x20`` the same at 20x its rate (an
overloaded replay: queues, but the 1.33M-token KV caches never fill); ``code_x20_2inst`` the same on 2 of the 8
instances (KV-bound: preemptions); ``mooncake`` the Mooncake synthetic trace (3,993 requests, prompts to ~120k
tokens).

Variants: ``before`` = the earlier model (engine.preemption "legacy", kv_watermark 0, no chunked prefill);
``after`` = the defaults (vLLM admission: 1 % watermark, V1 victim, no re-admission in a preempting step);
``after_chunked`` = after + chunked prefill (vLLM V1's default scheduling); ``after_ctx`` = after + Llama-2's
4,096-token context limit, reject (what vLLM does with max_model_len 4096).
Neither peer simulator applies a context limit, so only before / after / after_chunked are comparable to them.

Peer figures: splitwise-sim and the SageServe authors' simulator on this fleet and the code trace at its own
rate, TTFT and E2E p50 / p90 / p99, as reported with the issue that set up this anchor (BENCHMARKS.md, "Anchor
latencies"; docs/simulator.md "Anchor"): splitwise-sim with its token-JSQ router and 2,048 batch tokens; SageServe's
simulator in its default configuration (constant 1 s routing delay). No TPOT figure was reported for either, and no
figure exists for code_x20 or mooncake from either peer: those cells print "n/a" (none is invented).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(ROOT))

PEERS = {
    "code": {
        "splitwise-sim": {"ttft": (0.33, 1.61, 8.52), "e2e": (1.83, 8.03, 21.1), "tpot": None,
                          "source": "reported with the anchor issue (BENCHMARKS.md 'Anchor latencies'); token-JSQ, "
                                    "2,048 batch tokens"},
        "sageserve-sim": {"ttft": (1.43, 4.93, 23.2), "e2e": (3.66, 17.3, 36.3), "tpot": None,
                          "source": "reported with the anchor issue (BENCHMARKS.md 'Anchor latencies'); default "
                                    "configuration: constant 1 s routing delay"},
    },
}
TRACES = {"code": ("azure_code_2023", 1.0, 8), "code_x20": ("azure_code_2023", 20.0, 8),
          "code_x20_2inst": ("azure_code_2023", 20.0, 2), "mooncake": ("mooncake_synthetic", 1.0, 8)}
VARIANTS = {
    "before": {"preemption": "legacy", "kv_watermark": 0.0, "chunked_prefill": False},
    "after": {},
    "after_chunked": {"chunked_prefill": True},
    "after_ctx": {"max_model_len": 4096},
}


def run(trace: str, variant: str) -> dict:
    from simulations.engine import parse_scenario, simulate

    d = json.loads((ROOT / "fixtures/scenarios/code_anchor.json").read_text())
    fixture, scale, instances = TRACES[trace]
    for e in d["fleet"]["endpoints"]:
        e.update(initial=instances, min=instances, max=instances)
    d["workload"] = {"fixture": fixture, "model": "llama2-70b", "region": "us-west", "tier": "IW-F",
                     **({"rate_scale": scale} if scale != 1.0 else {})}
    eng = dict(VARIANTS[variant])
    limit = eng.pop("max_model_len", 0)
    if limit:
        for dep in d["deployments"].values():
            dep["max_model_len"] = limit
    d["engine"] = {**(d.get("engine") or {}), "mode": "fast", "timeline_step_s": 0, **eng}
    sc = parse_scenario(d)
    t0, c0 = time.perf_counter(), time.process_time()
    r = simulate(sc)
    s = r.summary
    pick = ("p50", "p90", "p99")
    return {
        "trace": trace, "variant": variant, "requests": s["requests"], "completed": s["completed"],
        "dropped": s["dropped"], "makespan_s": round(s["duration_s"], 1),
        "ttft": [s["ttft"][p] for p in pick], "e2e": [s["e2e"][p] for p in pick],
        "tpot": [s["tbt_mean"][p] for p in pick],
        "preemptions": s["preemptions"], "preemptions_per_request": s["preemptions_per_request"],
        "context_limits": s.get("context_limits"), "wall_s": round(time.perf_counter() - t0, 2),
        "cpu_s": round(time.process_time() - c0, 2), "engine_build": s["engine_build"],
    }


def _fmt(v) -> str:
    return "n/a" if v is None else " / ".join("-" if x is None else f"{x:.3g}" for x in v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default=",".join(TRACES), help=f"comma list of {', '.join(TRACES)}")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma list of {', '.join(VARIANTS)}")
    ap.add_argument("--json", action="store_true", help="print one JSON object (all rows and peer figures) last")
    args = ap.parse_args(argv)
    rows = []
    for trace in args.traces.split(","):
        if trace not in TRACES:
            ap.error(f"unknown trace {trace!r}")
        print(f"\n== {trace} ({TRACES[trace][0]}, rate x{TRACES[trace][1]:g}, {TRACES[trace][2]} instances); "
              "TTFT / E2E / TPOT p50 / p90 / p99 (s)")
        for variant in args.variants.split(","):
            if variant not in VARIANTS:
                ap.error(f"unknown variant {variant!r}")
            row = run(trace, variant)
            rows.append(row)
            ppr = row["preemptions_per_request"]
            print(f"  ours {variant:<14} TTFT {_fmt(row['ttft'])} | E2E {_fmt(row['e2e'])} | TPOT {_fmt(row['tpot'])}"
                  f" | done {row['completed']}/{row['requests']} dropped {row['dropped']} | makespan "
                  f"{row['makespan_s']} s | preemptions {row['preemptions']} on {ppr['requests_preempted']} requests,"
                  f" max {ppr['max']}, p99 {ppr['p99']:g} | {row['cpu_s']} CPU-s")
        for peer, fig in PEERS.get(trace, {}).items():
            print(f"  {peer:<19} TTFT {_fmt(fig['ttft'])} | E2E {_fmt(fig['e2e'])} | TPOT {_fmt(fig['tpot'])}"
                  f"  [{fig['source']}]")
        if trace not in PEERS:
            print("  splitwise-sim, sageserve-sim: n/a (no published or measured figure for this trace)")
    if args.json:
        print(json.dumps({"rows": rows, "peers": PEERS}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
