"""Writes docs/reproduction_preserve.md from the results of tests/benchmarks/reproduce_preserve.py (``--write-doc``).

Every number in the tables comes from the results passed in; the prose (DIFFERENCES) states what the paper says and
why ours differs. Re-running the script with ``--write-doc`` regenerates the whole file.
"""

from __future__ import annotations

import math
import time

from tests.benchmarks.reproduce_preserve import BASELINES, BASELINES_EXT, MUQ, SEED_ROUTERS, SENS_ROUTERS


def _f(x, n=3):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else (f"{x:.{n}f}" if isinstance(x, float)
                                                                              else str(x))


DIFFERENCES = [
    "- Testbed: the paper ran vLLM 0.6.6 on 8 real A40s; we simulate a derived A40 (see Setting). Absolute "
    "latencies differ (our isolated normalised latency is ~0.035 s/token against the paper's ~0.067, which includes "
    "HTTP and streaming); compare ratios, not seconds.",
    "- Llumnix-like: reported WITHOUT and WITH live migration of running requests (session 5: "
    "simulations/engine/policies/llumnix_migration.py on the public `migrate_running` call; Llumnix's defaults: "
    "0.05 s poll, migrate out below freeness -3 blocks per request, least free paired with most free, shortest "
    "request first, pipelined copy at 25 GB/s while the request keeps decoding, last stage <= 16 blocks + a 20 ms "
    "switch-over). In our model a migration costs the moved request ~20-80 ms and the destination's batch the same "
    "pause; the copy itself does not slow either GPU. Migrations are rare (only instances whose queued demand "
    "exceeds their free KV migrate out) and change little: migration is not what sets Llumnix-like's P99 or peak "
    "here. The paper attributes Llumnix's spikes to 'communication overhead and delays from KV cache migration' "
    "(with Llumnix's default gloo backend, through host memory): an interference our transfer model, which follows "
    "Llumnix's own near-zero-downtime design, does not produce. Sia, Magnus, PASS and LoongServe are not built.",
    "- Hold queue: the paper gives no capacity; ours is 256. Dropped requests are excluded from the P99 column (the "
    "paper's metric is over served requests) and shown beside it. On current main no run drops: the hold queue "
    "never fills (the ablation 'hold off' gave the same P99 at 12.5 req/s: 1.097 vs 1.091; session 5, before the "
    "max_model_len fix).",
    "- Anticipator: computed on demand from the running requests (exact, no per-iteration events); the map the "
    "paper maintains gives the same U_j. Requests waiting for prefill are outside the map, as in the paper ('the "
    "map is updated once the prefill phase is complete', sec. 4.3.1): an overload made of a long waiting queue is "
    "seen by the scaler only as those requests are admitted (not changed: it is the paper's rule); the router sees "
    "the queue through L_p (queued prompt tokens).",
    "- Router score, current_d: we count the running requests' predicted remaining decode (the anticipator's). The "
    "other reading of 'the total tokens to be generated in the decode phase' (queued requests' predicted output "
    "too) is the row 'preserve (oracle, queued decode)': worse in our engine, so not the default. The memory "
    "penalty does its job: without it (beta = 0) P99 at 12.5 req/s was 2.53 instead of 1.09 s/token (ablation, "
    "session 5, before the max_model_len fix).",
    "- MU baseline (session 6): the paper's MU (sec. 3.2.2, 'the lowest weighted average of GPU utilization and "
    "memory usage') is the router `gpu-memory-usage`: 0.5 x GPU utilisation + 0.5 x KV in use / capacity. "
    "Utilisation is 1 while the instance has any unfinished request, else 0 (nvidia-smi's sampled utilisation of a "
    "vLLM engine, which steps back to back while it has work); KV in use counts the running requests only, as "
    "vLLM's gpu_cache_usage_perc (queued prompts hold no blocks without chunked prefill). The equal weights are "
    "ours (the paper gives none; knob `mu_util_weight`). At RQ3 rates every instance is busy at almost every "
    "arrival (ad hoc probe: 6 of 5,396 arrivals at 9 req/s and 5 of 8,262 at 13.75 req/s saw an idle instance, "
    "at the start), so this MU is in effect 'lowest KV in use', blind to queued prompts. Sessions 1-5 used our "
    "`memory-usage` (KV in use + queued prompt tokens) as MU: token-aware, which the paper's MU is not. It stays as "
    "an extra, and the targets are given against both sets. At 1.1x the paper's MU is the best baseline of either "
    "set (3.663 s/token; ours 3.780).",
    "- vLLM 0.6.6 defaults (session 6; checked in vllm-project/vllm: EngineArgs, SchedulerConfig.__post_init__, "
    "the V0 default-args rule): max_num_seqs 256, max_num_batched_tokens = max(max_model_len, 2048) = 4,096 "
    "without chunked prefill, chunked prefill on by default only when max_model_len > 32K, "
    "gpu_memory_utilization 0.9, recompute preemption, block-manager watermark 0.01 were already ours. "
    "max_model_len 4,096 (Llama-2) was MISSING from the deployment: at 13.75 req/s 63 of 8,262 requests have "
    "prompt + output > 4,096 (8,960 output tokens over the limit). With the limit (vLLM: outputs stop at it) "
    "P99 past the knee falls by ~30 % for every router (memory-usage at 1.1x: 5.422 without, 3.780 with; "
    "PreServe oracle 6.21 -> 4.41): a few 4-8k-token requests held an instance's KV for minutes. The fixture "
    "now also sets the engine's vLLM settings explicitly (chunked_prefill false, watermark 0.01, vllm "
    "preemption, recompute, reject over-context), so a change of the engine's defaults cannot move it.",
    "- RQ3 knee: 12.5 req/s with either baseline set (paper: 9.3-9.5). Past it the backlog grows through the 10 "
    "minutes, and the worst 1 % are short requests arriving late behind seconds of queue. The paper's 1.1x point "
    "(10.5 QPS: P99 0.45-1.23 s, mean TTFT 2.2-4.3 s, SLO 0.2 s) is ~2-6x its SLO; ours at 1.0x (12.5) is ~3x "
    "(Llumnix-like 0.313 vs an SLO of ~0.105 s/token) and at 1.1x ~35x: our knee definition (best baseline P99 > "
    "2x its light-load value) lands later than the paper's 'overload boundary'. The table 'PreServe against the "
    "best baseline at every grid rate' shows this does not decide the target: at NO grid rate does PreServe beat "
    "the best baseline by 30 % (best: +7.8 % at 14 req/s). The seed spread shows how fragile one 10-minute run "
    "past the knee is: at 13.75 req/s the best baseline's P99 is 0.20-0.71 s/token on seeds 2-5 against 3.66 on "
    "seed 1; PreServe (oracle) is behind on every seed (cuts -20 % on seed 1, -40 % to -270 % on seeds 2-5).",
    "- RQ3 below the knee (miss): the worst 1 % of normalised latency are short requests (median 6-7 output "
    "tokens) whose few decode iterations are stretched by other requests' prefills (no chunked prefill in vLLM "
    "0.6.6: every admission stalls the batch; a 4k-token prompt takes ~0.6 s): their decode time per token is "
    "0.12-0.17 s against a mean of 0.08 (10 req/s, session 5). A count-based router (least-requests, Llumnix-like) "
    "puts each stall among fewer requests; a token-based one does not: at 0.8x (10 req/s) Llumnix-like 0.116 and "
    "LR 0.122 against the paper's MU 0.156, our memory-usage 0.143 and PreServe 0.167 (oracle) / 0.150 (Table-2); "
    "PreServe is 28-44 % behind the best on all five seeds. The what-if testbeds rule out the two obvious "
    "suspects: with the paper's 40 GB KV or with a 4x flatter batch cost PreServe is still behind at every rate.",
    "- RQ2 against Llumnix (miss): our Llumnix-like, with or without migration, peaks near 1.4x the SLO (the "
    "paper's: 2.3x) while using fewer instance-hours than PreServe: the paper's Llumnix spikes come from migration "
    "interference we do not model (above). The synthetic week has no unexpected spike (the paper's Proactive / "
    "Hybrid fail at one, ~20 h into the code trace), so forecast-only and hybrid with the oracle-noise forecaster "
    "do as well as PreServe here.",
    "- RQ2: the week is synthetic, the forecaster an oracle with Table 1 noise or our seasonal naive, not an "
    "mLSTM; the request rate of the compressed replay is our choice (the paper does not say how it scaled the "
    "rate). Instance-hours include the drain after the last arrival (column): the window target then falls to 1 "
    "(forecast 0) and the surplus instances are isolated, finishing their own requests (the paper's isolation "
    "rule), so nothing is stranded.",
    "- Scaler (session 5 fix): the once-per-window low-load scale-down is floored at the window's target; the "
    "paper's formula alone fired at start-up on empty instances and isolated what the window start had just "
    "pre-started (test_preserve.py).",
]


def _seed_section(res: dict) -> list:
    q = res["rq3_seeds"]
    pts = q["points"] + [p for p in res["rq3"]["points"] if p["factor"] in (0.8, 1.1) and p["router"] in SEED_ROUTERS]
    L = ["### RQ3 seed spread (the same points with other workload seeds; the targets use seed 1)", "",
         "P99 normalised latency (s/token). cut = 1 - PreServe / best of the paper's set (LR, MU, Llumnix-like with "
         "and without migration); spread = max/min - 1 over these seven routers (round-robin and the PreServe "
         "ablations not run here).", "",
         "| x knee | seed | best of the paper's set | its P99 | our memory-usage (+ queued) | PreServe oracle | cut | "
         "PreServe Table-2 | cut | spread |", "|---|---|---|---|---|---|---|---|---|---|"]
    for f in (0.8, 1.1):
        for seed in [1, *q["seeds"]]:
            row = {p["router"]: p["p99_nl_s"] for p in pts if p["factor"] == f and p.get("seed", 1) == seed}
            if len(row) < len(SEED_ROUTERS):
                continue
            bname = min(BASELINES, key=lambda b: row[b])
            best, po, pt = row[bname], row["preserve (oracle lengths)"], row["preserve (Table-2 noise)"]
            L.append(f"| {f} | {seed} | {bname} | {_f(best)} | {_f(row[MUQ])} | {_f(po)} | {1 - po / best:.1%} | "
                     f"{_f(pt)} | {1 - pt / best:.1%} | {max(row.values()) / min(row.values()) - 1:.1%} |")
    return [*L, ""]


def write_doc(res: dict, cmd: str, note: str = "") -> str:
    L = ["# PreServe reproduction (issue 16)", "",
         f"Generated by `{cmd}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}{note}; do not edit by "
         "hand.",
         "Paper: ../shared/seeds/001 (authority), extraction ../shared/specs/001_spec.md. Engine: the compiled fleet "
         "simulator (docs/simulator.md), policies in simulations/engine/policies/preserve/.", "",
         "**Setting.** LLaMA-2-7B on one A40 per instance is a DERIVED deployment (fixtures/scenarios/"
         "preserve_routing.json): the llama-2-7b A100-80GB fit to the SLINFER authors' measured table, prefill "
         "coefficients x 1.99 and decode coefficients x 2.47, the median A40/A100 time ratios of Vidur's Llama-2-7B "
         "linear-operator profiles (128-4,096 tokens: p10-p90 1.88-2.26; 1-256 tokens: 2.12-2.91). Attention has "
         "no A40 profile and takes the same ratio: decode times are uncertain by roughly +/-15 %. KV = (0.9 x 48 GB "
         "- 12.6 GB) / 512 KiB = 58,365 tokens (the paper's '40 GB' would give 44,632). Lengths: log-normals "
         "fitted to the paper's ShareGPT quantiles. No model weights or ShareGPT text are reachable offline: "
         "the output-length predictor is an oracle, the oracle plus errors distributed as the paper's Table 2 "
         "(`table2-noise`), or the bucket-median baseline. SLO: normalised latency (E2E / output tokens) within "
         "3x the request's isolated run (the paper: 3x an isolated request's, 0.2 s on its testbed).", ""]
    if "rq3" in res:
        q = res["rq3"]
        t = q["targets"]
        L += ["## RQ3: routing (Fig. 10)", "",
              f"4 instances, Poisson, {q['minutes']:g} minutes per rate. Knee: the first rate of the grid "
              f"{q['grid']} at which the best of the baselines (least-requests, the paper's MU, Llumnix-like with and "
              f"without migration, our memory-usage + queued prompts) has a P99 normalised "
              f"latency above twice its value at the lowest rate: **{q['knee_rps']} req/s** (the paper's four "
              f"alone: {q.get('knee_paper_set_rps', '-')} req/s; paper: 9.3-9.5 "
              "req/s for 4 A40s; ours is higher, probably because our A40 is derived from A100 measurements "
              "without vLLM's scheduling and HTTP overheads and holds 58k KV tokens; not verified). vLLM 0.6.6 "
              "defaults (the paper's engine; checked in vllm-project/vllm): max_num_seqs 256, max_num_batched_tokens "
              "max(max_model_len, 2048) = 4,096, no chunked prefill (default on only above 32K context), "
              "gpu_memory_utilization 0.9, recompute preemption, watermark 0.01, max_model_len 4,096 (session 6: "
              "the limit was missing; 0.8 % of the requests have prompt + output > 4,096 and are now cut or "
              "rejected as vLLM does). MU is the paper's (sec. 3.2.2): the lowest 0.5 x GPU utilisation (1 with "
              "any unfinished request) + 0.5 x KV in use / capacity, queued prompts ignored as vLLM's "
              "gpu_cache_usage_perc ignores them; 'memory-usage (ours: + queued prompts)' is the token-aware "
              "variant earlier sessions used as MU, kept as an extra.", "",
              "Knee search (P99 normalised latency, s/token):", "",
              "| rate | " + " | ".join(BASELINES_EXT) + " |", "|---" * (len(BASELINES_EXT) + 1) + "|"]
        for rate in q["grid"]:
            L.append(f"| {rate} | " + " | ".join(_f(next((p["p99_nl_s"] for p in q["stage1"] if p["rate_rps"] == rate
                                                          and p["router"] == b), None)) for b in BASELINES_EXT) + " |")
        if q.get("by_rate"):
            L += ["", "PreServe against the best baseline at every grid rate (P99 normalised latency, s/token; cut = "
                  "1 - PreServe / best; paper's set = LR, MU, Llumnix-like with and without migration; extended = "
                  "+ our memory-usage with queued prompts):", "",
                  "| rate | best of the paper's set | its P99 | PreServe oracle | cut | PreServe Table-2 | cut | "
                  "best of the extended set | oracle cut | Table-2 cut |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
            for rate in q["grid"]:
                row = {p["router"]: p["p99_nl_s"] for p in q["stage1"] + q["by_rate"] if p["rate_rps"] == rate}
                po, pt = row["preserve (oracle lengths)"], row["preserve (Table-2 noise)"]
                cells = []
                for bset in (BASELINES, BASELINES_EXT):
                    bname = min(bset, key=lambda b: row.get(b, math.inf))
                    cells.append((bname, row[bname]))
                (bn, best), (xn, xbest) = cells
                L.append(f"| {rate} | {bn} | {_f(best)} | {_f(po)} | {1 - po / best:.1%} | {_f(pt)} | "
                         f"{1 - pt / best:.1%} | {xn} ({_f(xbest)}) | {1 - po / xbest:.1%} | {1 - pt / xbest:.1%} |")
        L += ["", "| x knee | rate | router | P99 norm. latency (s/token) | P99 counting drops | mean TTFT (s) | "
              "attainment | dropped | preemptions | migrations |", "|---|---|---|---|---|---|---|---|---|---|"]
        for p in q["points"]:
            wd = p["p99_nl_with_drops_s"]
            if (wd is None or math.isnan(wd)) and p["dropped"]:  # results saved before the percentile fix
                wd = math.inf if p["dropped"] >= 0.01 * p["requests"] else None
            L.append(f"| {p['factor']} | {p['rate_rps']} | {p['router']} | {_f(p['p99_nl_s'])} | "
                     f"{'inf (> 1 % dropped)' if wd == math.inf else _f(wd)} | {_f(p['mean_ttft_s'], 2)} | {_f(p['attainment'])} | "
                     f"{p['dropped']} | {p['preemptions']} | {p.get('migrations', 0)} |")
        sp = t["below_knee_spread"]
        ok3 = all(v <= 0.10 for v in sp.values())
        L += ["", "| target (issue 16) | paper | ours | met |", "|---|---|---|---|"]
        for suffix, label in (("", "the paper's set: LR / MU (paper's) / Llumnix-like with and without live "
                                   "migration"),
                              ("_ext", "the EXTENDED set: the paper's + our memory-usage with queued prompts")):
            t11 = t.get(f"1.1x{suffix}")
            if t11 is None:  # results saved before session 6
                continue
            ok1 = t11["cut_oracle"] >= 0.30
            ok2 = t11["cut_table2"] >= 0.20
            L += [f"| P99 cut vs best of {label}, 1.1x knee, oracle lengths, >= 30 % | 41.3 % (vs Llumnix, "
                  f"10.5 QPS: P99 Llumnix 0.767, Sia 0.956, Magnus 1.23, PreServe 0.45 s; LR / MU only in Fig. 10) | "
                  f"{t11['cut_oracle']:.1%} (best baseline {t11['best_baseline']}, P99 "
                  f"{t11['best_baseline_p99']:.3f}; {t11['drops_oracle']} requests dropped by the hold queue) | "
                  f"{'yes' if ok1 else 'NO'} |",
                  f"| same with Table-2 noise, >= 20 % | (robust, not quantified) | {t11['cut_table2']:.1%} "
                  f"({t11['drops_table2']} dropped) | {'yes' if ok2 else 'NO'} |",
                  f"| same, oracle, unbounded hold queue (no drops) | - | {t11['cut_oracle_unbounded_hold']:.1%} | - |",
                  f"| at 1.2x knee, oracle | - | {t['1.2x' + suffix]['cut_oracle']:.1%} | - |"]
        L += ["| below 0.95x knee all routers within 10 % (P99, max/min - 1) | 'comparable' below 9.3 QPS | "
              + ", ".join(f"{k}: {v:.1%}" for k, v in sp.items()) + f" | {'yes' if ok3 else 'NO'} |", ""]
    if "rq3_seeds" in res:
        L += _seed_section(res)
    if "sensitivity" in res:
        L += ["### RQ3 what-if testbeds (explaining the misses; not used for the targets)", "",
              "P99 normalised latency (s/token); cut = 1 - PreServe (oracle) / best of LR, MU (paper's), "
              "Llumnix-like.", ""]
        for label, blk in res["sensitivity"].items():
            L += [f"**{label}**", "", "| rate | " + " | ".join(SENS_ROUTERS) + " | cut |",
                  "|---" * (len(SENS_ROUTERS) + 2) + "|"]
            for rate in blk["grid"]:
                row = {p["router"]: p["p99_nl_s"] for p in blk["points"] if p["rate_rps"] == rate}
                best = min(row[n] for n in SENS_ROUTERS[:3])
                L.append(f"| {rate:g} | " + " | ".join(_f(row.get(n)) for n in SENS_ROUTERS)
                         + f" | {1 - row['preserve (oracle lengths)'] / best:.1%} |")
            L.append("")
    if "rq2" in res:
        q = res["rq2"]
        c = q["calibration"]
        L += ["## RQ2: scaling (Figs. 8/9) on a SYNTHETIC week", "",
              "The Azure 2024 week traces are not available offline. The replay runs on a **synthetic** week "
              f"(simulations/engine/policies/preserve/week.py) calibrated to the paper's section 3.1: peak/average "
              f"{c['peak_over_avg']:.2f}x (paper 3.3x), peak/minimum {c['peak_over_min']:.1f}x (35.6x), highest/"
              f"lowest weekday peak {c['weekday_peak_spread']:.2f} (+35 %), at 30-minute aggregation. Days 1-2 are "
              f"the forecasters' history, days 3-4 are replayed compressed {q['compression']:g}x (the paper: 24x, two "
              f"days in two hours), "
              f"{q['requests']:,} requests, peak 30-minute rate {q['peak_rps']:.1f} req/s (7 instances' worth at our "
              f"knee), windows of {q['window_s']:g} s (10 trace minutes), cold start = the deployment's 30 s, "
              f"N in [1, 8]. Capacity profile measured in our engine: mu_p {q['capacity']['mu_p']}, mu_d "
              f"{q['capacity']['mu_d']}, mu_t {q['capacity']['mu_t']} tokens/s per instance. The 'oracle-noise' "
              "forecaster is an ORACLE with Table 1's Azure-code errors, standing in for the paper's mLSTM; the "
              "seasonal-naive one is ours (forecasts.core).", "",
              "| strategy | instance-hours | vs static-8 | peak 5-min mean norm. latency (s/token) | x SLO | "
              "5-min windows over SLO | P99 norm. latency | dropped | scale-outs | migrations | drain after the last "
              "arrival (s) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for x in q["runs"]:
            L.append(f"| {x['strategy']} | {x['instance_hours']:.2f} | {_f(x['saving_vs_static8'] and -x['saving_vs_static8'], 3)} | "
                     f"{_f(x['peak_5min_nl_s'])} | {x['peak_5min_nl_s'] / x['slo_s_per_token']:.2f} | "
                     f"{x['windows_over_slo']}/{x['windows']} | {_f(x['p99_nl_s'])} | {x['dropped']} | "
                     f"{x['scale_outs']} | {x.get('migrations', 0)} | {_f(x.get('drain_after_last_arrival_s'), 0)} |")
        L += ["", "(vs static-8: relative change of instance-hours; negative = fewer.) SLO = 3x the mean isolated "
              "normalised latency of the replay's requests.", ""]
        by = {x["strategy"]: x for x in q["runs"]}
        llx = by.get("Llumnix-like")
        llm = by.get("Llumnix-like (live migration)")
        s4 = by.get("static-4")
        L += ["| target (issue 16) | paper | ours | met |", "|---|---|---|---|"]
        for name in ("PreServe (Table-2 noise, oracle-noise forecast)", "PreServe (oracle lengths, oracle-noise forecast)",
                     "PreServe (Table-2 noise, seasonal-naive forecast)"):
            x = by.get(name)
            if not x or x.get("saving_vs_static8") is None:
                continue
            sv = x["saving_vs_static8"]
            ratio = x["peak_5min_nl_s"] / x["slo_s_per_token"]
            L.append(f"| {name}: 40-58 % fewer instance-hours than static-8 | 49.4 % | {sv:.1%} | "
                     f"{'yes' if 0.40 <= sv <= 0.58 else 'NO'} |")
            L.append(f"| {name}: peak 5-min norm. latency <= 1.25x SLO | 0.197-0.25 s vs SLO 0.2 s | {ratio:.2f}x | "
                     f"{'yes' if ratio <= 1.25 else 'NO'} |")
            for label, ll in (("Llumnix-like's (no migration)", llx), ("Llumnix-like's (live migration)", llm)):
                if ll:
                    cut = 1 - x["peak_5min_nl_s"] / ll["peak_5min_nl_s"]
                    L.append(f"| {name}: peak >= 30 % below {label} | 45.1 % (0.25 vs 0.455 s) | {cut:.1%} | "
                             f"{'yes' if cut >= 0.30 else 'NO'} |")
        if s4:
            L.append(f"| static-4 violates the SLO in most 5-min windows | 4.20 s peak (Fig. 9) | "
                     f"{s4['windows_over_slo']}/{s4['windows']} windows, peak {s4['peak_5min_nl_s']:.1f} s/token | "
                     f"{'yes' if s4['windows_over_slo'] > s4['windows'] / 2 else 'NO'} |")
        L.append("")
    L += ["## Differences from the paper, explained", "", *DIFFERENCES, ""]
    return "\n".join(L) + "\n"
