"""Writes docs/reproduction_preserve.md from the results of tests/benchmarks/reproduce_preserve.py (``--write-doc``).

Every number in the tables comes from the results passed in; the prose (DIFFERENCES) states what the paper says and
why ours differs. Re-running the script with ``--write-doc`` regenerates the whole file.
"""

from __future__ import annotations

import math
import time

from tests.benchmarks.reproduce_preserve import BASELINES, BASELINES_EXT, MU, MUQ, SEED_ROUTERS, SENS_ROUTERS
from tests.benchmarks.support.preserve_llumnix_doc import interference_short, rq2_short
from tests.benchmarks.support.preserve_llumnix_doc import sections as llumnix_sections


def _f(x, n=3):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else (f"{x:.{n}f}" if isinstance(x, float)
                                                                              else str(x))


ORACLE, TABLE2 = "preserve (oracle lengths)", "preserve (Table-2 noise)"


def _pt(res: dict, factor: float, router: str, key: str = "p99_nl_s"):
    return next((p[key] for p in res["rq3"]["points"] if p["factor"] == factor and p["router"] == router), None)


def _seed_cuts(res: dict, factor: float) -> dict:
    """seed -> (best of the paper's set, its P99, PreServe oracle's cut against it) at ``factor`` x the knee."""
    pts = [*res.get("rq3_seeds", {}).get("points", []),
           *[p for p in res["rq3"]["points"] if p["factor"] == factor and p["router"] in SEED_ROUTERS]]
    out = {}
    for seed in sorted({p.get("seed", 1) for p in pts if p["factor"] == factor}):
        row = {p["router"]: p["p99_nl_s"] for p in pts if p["factor"] == factor and p.get("seed", 1) == seed}
        if len(row) < len(SEED_ROUTERS):
            continue
        bname = min(BASELINES, key=lambda b: row[b])
        out[seed] = (bname, row[bname], 1 - row[ORACLE] / row[bname])
    return out


def _rng(vals, fmt="{:.1%}") -> str:
    vals = sorted(vals)
    if not vals:
        return "-"
    lo, hi = fmt.format(vals[0]), fmt.format(vals[-1])
    return lo if lo == hi else f"{lo} to {hi}"


def _rq2_differences(res: dict) -> list[str]:
    """The RQ2 bullets of the differences: Llumnix-like against the paper's, and the week's caveats."""
    L: list[str] = []
    by = {x["strategy"]: x for x in res["rq2"]["runs"]}
    ll = [by[n] for n in ("Llumnix-like", "Llumnix-like (live migration)") if n in by]
    L.append(
        "- RQ2 against Llumnix (miss): our Llumnix-like, with or without migration, peaks at "
        + _rng([x["peak_5min_nl_s"] / x["slo_s_per_token"] for x in ll], "{:.2f}x")
        + " the SLO (the paper's: 2.3x) while using "
        + _rng([x["saving_vs_static8"] for x in ll]) + " fewer instance-hours than static-8 (the paper's "
        "Llumnix: 48 %; at equal resources: the RQ2 equal-resources section). The paper puts its Llumnix's "
        "spikes down to migration interference; our live-migration Llumnix-like migrates "
        + ", ".join(f"{x['migrations']:,}" for x in ll if "live" in x["strategy"])
        + " requests over the replay"
        + ("" if "rq2_equal" not in res else
           " (the equal-resources sweep: " + ", ".join(f"{r['migrations']:,}" for r in
                                                      res["rq2_equal"]["live migration"]["sweep"]) + ")")
        + ", so no migration cost, however large, could make it spike here. The synthetic week has no "
        "unexpected spike (the paper's "
        "Proactive / Hybrid fail at one, ~20 h into the code trace), so forecast-only and hybrid with the "
        "oracle-noise forecaster do as well as PreServe here.")
    L.append(
        "- RQ2: the week is synthetic, the forecaster an oracle with Table 1 noise or our seasonal naive, not an "
        "mLSTM; the request rate of the compressed replay is our choice (the paper does not say how it scaled "
        "the rate). Instance-hours include the drain after the last arrival (column): the window target then "
        "falls to 1 (forecast 0) and the surplus instances are isolated, finishing their own requests (the "
        "paper's isolation rule), so nothing is stranded.")
    return L


def _rq3_setup(res: dict) -> list[str]:
    """RQ3: migration, hold queue, anticipator, router score, MU baseline, vLLM defaults."""
    q = res["rq3"]
    L = []
    migs = {f: _pt(res, f, "llumnix (live migration)", "migrations") for f in (0.8, 1.0, 1.1, 1.2)}
    L.append(
        "- Llumnix-like: reported WITHOUT and WITH live migration of running requests "
        "(simulations/engine/policies/llumnix_migration.py on the public `migrate_running` call; Llumnix's "
        "defaults: 0.05 s poll, migrate out below freeness -3 blocks per request, least free paired with most "
        "free, shortest request first, pipelined copy at 25 GB/s while the request keeps decoding, last stage <= "
        "16 blocks + a 20 ms switch-over). In our model the copy does not slow either GPU. Migrations are rare "
        "(live migrations in the 10-minute runs at 0.8 / 1.0 / 1.1 / 1.2x the knee: "
        + " / ".join(str(v) for v in migs.values()) + ") and change little: migration is not what sets "
        "Llumnix-like's P99 here. The paper attributes Llumnix's spikes to 'communication overhead and delays "
        "from KV cache migration' (with Llumnix's default gloo backend, through host memory): the pipelined "
        "copy, which follows Llumnix's own near-zero-downtime design, does not produce it; the blocking-copy "
        "rows (section 'RQ3 with the migration interference') do"
        + ("" if "rq3_interference" in res else " (not run for this page)")
        + ". Sia, Magnus, PASS and LoongServe are not built.")
    drops = sum(p["dropped"] for p in q["points"])
    t11 = q["targets"]["1.1x"]
    L.append(
        "- Hold queue: the paper gives no capacity; ours is 256. Dropped requests are excluded from the P99 "
        f"column (the paper's metric is over served requests) and shown beside it. Requests dropped over all "
        f"RQ3 points: {drops}; at 1.1x the knee PreServe (oracle) with an unbounded hold queue cuts "
        f"{t11['cut_oracle_unbounded_hold']:.1%} against {t11['cut_oracle']:.1%} with it.")
    L.append(
        "- Anticipator: computed on demand from the running requests (exact, no per-iteration events); the map "
        "the paper maintains gives the same U_j. Requests waiting for prefill are outside the map, as in the "
        "paper ('the map is updated once the prefill phase is complete', sec. 4.3.1): an overload made of a long "
        "waiting queue is seen by the scaler only as those requests are admitted (the paper's rule); the router "
        "sees the queue through L_p (queued prompt tokens).")
    qd, po = _pt(res, 1.1, "preserve (oracle, queued decode)"), _pt(res, 1.1, ORACLE)
    L.append(
        "- Router score, current_d: we count the running requests' predicted remaining decode (the "
        "anticipator's). The other reading of 'the total tokens to be generated in the decode phase' (queued "
        "requests' predicted output too) is the row 'preserve (oracle, queued decode)': at 1.1x the knee its P99 "
        f"is {_f(qd)} against {_f(po)} s/token, so it is not the default.")
    mu, muq = _pt(res, 1.1, MU), _pt(res, 1.1, MUQ)
    L.append(
        "- MU baseline: the paper's MU (sec. 3.2.2, 'the lowest weighted average of GPU utilization and memory "
        "usage') is the router `gpu-memory-usage`: 0.5 x GPU utilisation + 0.5 x KV in use / capacity. "
        "Utilisation is 1 while the instance has any unfinished request, else 0 (nvidia-smi's sampled "
        "utilisation of a vLLM engine, which steps back to back while it has work); KV in use counts the running "
        "requests only, as vLLM's gpu_cache_usage_perc (queued prompts hold no blocks without chunked prefill). "
        "The equal weights are ours (the paper gives none; knob `mu_util_weight`). At RQ3 rates every instance "
        "is busy at almost every arrival, so this MU is in effect 'lowest KV in use', blind to queued prompts. "
        "Our `memory-usage` (KV in use + queued prompt tokens) is token-aware, which the paper's MU is not; it "
        f"stays as an extra and the targets are given against both sets. At 1.1x the knee: the paper's MU "
        f"{_f(mu)}, ours {_f(muq)} s/token; the best of the paper's set is {t11['best_baseline']}.")
    L.append(
        "- vLLM 0.6.6 defaults (checked in vllm-project/vllm: EngineArgs, SchedulerConfig.__post_init__, the V0 "
        "default-args rule): max_num_seqs 256, max_num_batched_tokens = max(max_model_len, 2048) = 4,096 "
        "without chunked prefill, chunked prefill on by default only when max_model_len > 32K, "
        "gpu_memory_utilization 0.9, recompute preemption, block-manager watermark 0.01, max_model_len 4,096 "
        "(Llama-2; outputs stop at it). The fixture sets these explicitly (chunked_prefill false, watermark "
        "0.01, vllm preemption, recompute, reject over-context), so a change of the engine's defaults cannot "
        "move it.")
    return L


def _rq3_knee(res: dict) -> list[str]:
    """RQ3: where the knee lands and how fragile one run past it is."""
    q = res["rq3"]
    L = []
    best = {f: min(_pt(res, f, b) for b in BASELINES) for f in (0.8, 1.0, 1.1)}
    by_cuts = []
    for rate in q["grid"]:
        row = {p["router"]: p["p99_nl_s"] for p in q["stage1"] + q.get("by_rate", []) if p["rate_rps"] == rate}
        if ORACLE in row:
            b = min(row[x] for x in BASELINES)
            by_cuts.append((1 - row[ORACLE] / b, rate))
    top_cut = max(by_cuts) if by_cuts else None
    sc = _seed_cuts(res, 1.1)
    other = {s: v for s, v in sc.items() if s != 1}
    L.append(
        f"- RQ3 knee: {q['knee_rps']} req/s (paper: 9.3-9.5). Past it the backlog grows through the 10 minutes, "
        "and the worst 1 % are short requests arriving late behind seconds of queue. The paper's 1.1x point "
        "(10.5 QPS: P99 0.45-1.23 s, mean TTFT 2.2-4.3 s, SLO 0.2 s) is ~2-6x its SLO; ours: the best baseline's "
        f"P99 is {_f(best[0.8])} s/token at 0.8x, {_f(best[1.0])} at 1.0x and {_f(best[1.1])} at 1.1x: our knee "
        "definition (best baseline P99 > 2x its light-load value) lands later than the paper's 'overload "
        "boundary'. The table 'PreServe against the best baseline at every grid rate' shows this does not decide "
        "the target: the largest cut at any grid rate is "
        + ("-" if top_cut is None else f"{top_cut[0]:+.1%} (at {top_cut[1]:g} req/s)") + ". One 10-minute run "
        "past the knee is fragile: at 1.1x the best of the paper's set has P99 "
        + (_rng([v[1] for v in other.values()], "{:.2f}") + " s/token on seeds " + ", ".join(map(str, other))
           + (f" against {sc[1][1]:.2f} on seed 1" if 1 in sc else "") if other else "-")
        + "; PreServe (oracle) cuts " + _rng([v[2] for v in sc.values()]) + " across the seeds.")
    return L


def _rq3_below_knee(res: dict) -> list[str]:
    """RQ3 below the knee: why PreServe misses there."""
    L = []
    s8 = _seed_cuts(res, 0.8)
    sens = res.get("sensitivity", {})
    ahead = []  # (testbed, rate, cut) where PreServe (oracle) is not behind the best of LR, MU, Llumnix-like
    for label, blk in sens.items():
        for rate in blk["grid"]:
            row = {p["router"]: p["p99_nl_s"] for p in blk["points"] if p["rate_rps"] == rate}
            cut = 1 - row[ORACLE] / min(row[n] for n in SENS_ROUTERS[:3])
            if cut >= 0:
                ahead.append((label.split(" (")[0], rate, cut))
    L.append(
        "- RQ3 below the knee (miss): the worst 1 % of normalised latency are short requests whose few decode "
        "iterations are stretched by other requests' prefills (no chunked prefill in vLLM 0.6.6: every "
        "admission stalls the batch). A count-based router (least-requests, Llumnix-like) puts each stall among "
        f"fewer requests; a token-based one does not: at 0.8x Llumnix-like {_f(_pt(res, 0.8, 'llumnix'))} and "
        f"LR {_f(_pt(res, 0.8, 'least-requests'))} against the paper's MU {_f(_pt(res, 0.8, MU))}, our "
        f"memory-usage {_f(_pt(res, 0.8, MUQ))} and PreServe {_f(_pt(res, 0.8, ORACLE))} (oracle) / "
        f"{_f(_pt(res, 0.8, TABLE2))} (Table-2); PreServe (oracle) cuts " + _rng([v[2] for v in s8.values()])
        + f" against the best on the {len(s8)} seeds."
        + ("" if not sens else " The what-if testbeds (the paper's 40 GB KV, a 4x flatter batch cost) do not "
           "turn it round: PreServe is behind at every rate "
           + ("of both." if not ahead else "but " + ", ".join(f"{r:g} req/s with {lbl} ({c:+.1%})"
                                                            for lbl, r, c in ahead) + ".")))
    return L


def differences(res: dict) -> list[str]:
    """The differences from the paper; every figure of ours is read from ``res`` (paper figures are quoted)."""
    L = ["- Testbed: the paper ran vLLM 0.6.6 on 8 real A40s; we simulate a derived A40 (see Setting). Absolute "
         "latencies differ (the paper's isolated normalised latency is ~0.067 s/token, HTTP and streaming "
         "included); compare ratios, not seconds."]
    if "rq3" in res:
        L += _rq3_setup(res) + _rq3_knee(res) + _rq3_below_knee(res)
    if "rq2" in res:
        L += _rq2_differences(res)
    L.append(
        "- Scaler: the once-per-window low-load scale-down is floored at the window's target; the paper's formula "
        "alone fired at start-up on empty instances and isolated what the window start had just pre-started "
        "(test_preserve.py).")
    return L


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


def _ci(t, pct=False) -> str:
    m, lo, hi = t
    return f"{m:+.1%} [{lo:+.1%}, {hi:+.1%}]" if pct else f"{m:.3f} [{lo:.3f}, {hi:.3f}]"


def _best_attainment(q: dict, rate: float) -> tuple[str, float] | None:
    att = {}
    for p in q["points"]:
        if p["rate_rps"] == rate and not p["chunked"] and p["router"] in BASELINES:
            att.setdefault(p["router"], []).append(p["attainment"])
    if not att:
        return None
    name = max(att, key=lambda n: sum(att[n]) / len(att[n]))
    return name, sum(att[name]) / len(att[name])


def _cliff(q: dict) -> str:
    """The best baseline's attainment one step below the operating point: how sharp the crossing is."""
    before = [r for r in q["rates_tried"] if r < q["operating_point_rps"]]
    prev = _best_attainment(q, before[-1]) if before else None
    now = _best_attainment(q, q["operating_point_rps"])
    if not prev or not now:
        return ""
    return (f"One step below, at {before[-1]:g} req/s, the best baseline ({prev[0]}) has {prev[1]:.1%}; at the "
            f"operating point {now[0]} has {now[1]:.1%}: the attainment falls off a cliff between the two, so the "
            "rule's point is past the paper's ~93 %, not at it.")


def rq3_op_section(res: dict) -> list[str]:
    """RQ3 at the paper's operating point (tests/benchmarks/reproduce_preserve_rq3.py)."""
    q = res["rq3_op"]
    L = ["## RQ3 at the paper's operating point (vLLM-sampled lengths, 5 seeds)", "",
         f"Rules: {q['rules']} (docstring). Lengths pruned as vLLM's serving benchmark prunes ShareGPT (prompt and "
         "output >= 4 tokens, prompt <= 1,024, prompt + output <= 2,048); Poisson arrivals; seeds "
         f"{', '.join(map(str, q['seeds']))}; {q['minutes']:g} minutes per point. Operating point: the first rate "
         f"from {q['rates_tried'][0]:g} req/s upwards (steps of 0.5; tried up to {q['rates_tried'][-1]:g}) at which "
         f"the best of the paper's baselines has a mean attainment <= {q['target_attainment']:.0%} (the paper's "
         f"Llumnix point at 1.1x its knee, 10.5 QPS: about 93 %, P99 about 3.8x its SLO): "
         f"**{q['operating_point_rps']:g} req/s**. {_cliff(q)} Mean and 95 % t-interval over the seeds:", "",
         "| chunked prefill | router | P99 norm. latency (s/token) | attainment | P99 / SLO |", "|---|---|---|---|---|"]
    for key in ("off", "on"):
        blk = q[key]
        for name, r in blk["routers"].items():
            L.append(f"| {key} | {name} | {_ci(r['p99_nl_s'])} | {_ci(r['attainment'], True).replace('+', '')} | "
                     f"{_ci(r['p99_over_slo'])} |")
    L += ["", "PreServe's P99 cut against the best of the paper's set, seed by seed (1 - PreServe / best; the paper: "
          "41.3 % against Llumnix):", "", "| chunked prefill | PreServe | per seed | mean [95 % interval] |",
          "|---|---|---|---|"]
    for key in ("off", "on"):
        blk = q[key]
        for name in ("preserve (oracle lengths)", "preserve (Table-2 noise)"):
            c = blk[f"cut {name}"]
            L.append(f"| {key} | {name} | {', '.join(f'{x:+.1%}' for x in c['per_seed'])} | "
                     f"**{_ci(c['mean_ci'], True)}** |")
    L += ["", ("The Llumnix-like rows here copy without interference; with the interference the paper blames for "
               "Llumnix's loss: the next section." if "rq3_interference" in res else
               "Not modelled: the migration interference the paper gives as the reason for Llumnix's loss (our live "
               "migration copies without slowing either GPU), so the Llumnix-like rows are without it."), ""]
    return L


def in_short(res: dict) -> list[str]:
    """The headlines, like-for-like first; every figure of ours from ``res``."""
    L = ["## In short", ""]
    if "rq3_op" in res:
        q = res["rq3_op"]
        off, on = q["off"], q["on"]
        best = off["routers"][off["best_baseline"]]
        L.append(
            f"- **RQ3 (Fig. 10) at the paper's operating point** ({q['operating_point_rps']:g} req/s, where the best of "
            f"the paper's baselines, {off['best_baseline']}, has {best['attainment'][0]:.1%} attainment and P99 "
            f"{best['p99_over_slo'][0]:.1f}x its SLO; paper: ~93 %, ~3.8x), vLLM-sampled lengths, "
            f"{len(q['seeds'])} seeds: PreServe's P99 cut (1 - PreServe / best of the paper's set, per seed; "
            f"negative = PreServe behind) is **{_ci(off['cut preserve (oracle lengths)']['mean_ci'], True)}** with "
            f"oracle lengths and {_ci(off['cut preserve (Table-2 noise)']['mean_ci'], True)} with Table-2 noise; "
            f"with chunked prefill on {_ci(on['cut preserve (oracle lengths)']['mean_ci'], True)} (oracle). Paper: "
            "+41.3 % (PreServe 0.45 s against Llumnix 0.767 s)."
            + (" Llumnix-like with the migration interference the paper blames for its loss: next line."
               if "rq3_interference" in res else
               " Llumnix-like is without the migration interference the paper blames for its loss (not modelled)."))
    for line in (interference_short(res), rq2_short(res)):
        if line:
            L.append(line)
    if "rq3" in res:
        q = res["rq3"]
        t11 = q["targets"]["1.1x"]
        sc = _seed_cuts(res, 1.1)
        L.append(
            f"- RQ3 (Fig. 10) by our knee rule, P99 normalised latency at 1.1x the knee, PreServe (oracle lengths) against the best of "
            f"the paper's baselines (LR, MU, Llumnix-like with and without migration): **{t11['cut_oracle']:+.1%}** "
            f"(best: {t11['best_baseline']}; Table-2 noise {t11['cut_table2']:+.1%}); paper: -41.3 % against "
            f"Llumnix. Over {len(sc)} workload seeds the oracle cut is " + _rng([v[2] for v in sc.values()])
            + f". Our knee rule puts 1.0x at {q['knee_rps']} req/s, where the paper's knee is 9.3-9.5 req/s, and our "
            "1.1x point is far deeper into overload than the paper's (see the knee paragraph below)"
            + ("; the operating-point run above is the like-for-like one." if "rq3_op" in res
               else "; the run at the paper's operating point is not made yet."))
    if "rq2" in res:
        by = {x["strategy"]: x for x in res["rq2"]["runs"]}
        pre = by.get("PreServe (Table-2 noise, oracle-noise forecast)")
        ll = by.get("Llumnix-like")
        if pre and pre.get("saving_vs_static8") is not None:
            L.append(
                f"- RQ2 (Figs. 8/9) on a synthetic week: PreServe uses **{pre['saving_vs_static8']:.1%}** fewer "
                "instance-hours than static-8 (paper: 49.4 %) with a peak 5-minute normalised latency of "
                f"{pre['peak_5min_nl_s'] / pre['slo_s_per_token']:.2f}x the SLO (paper: <= 1.25x)."
                + ("" if not ll else
                   f" Our Llumnix-like at its default thresholds saves {ll['saving_vs_static8']:.1%} (the paper's "
                   f"Llumnix: 48 %), {1 - ll['instance_hours'] / pre['instance_hours']:.1%} fewer instance-hours than "
                   "PreServe (the paper's ran with about the same); its peak is "
                   f"{ll['peak_5min_nl_s'] / ll['slo_s_per_token']:.2f}x the SLO (paper: 2.3x)"
                   + ("; at equal resources: the line above." if "rq2_equal" in res else ".")))
    return [*L, ""]


def _rq3_section(res: dict) -> list[str]:
    """RQ3: the knee search, PreServe against the best baseline per rate."""
    q = res["rq3"]
    L: list[str] = []
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
          "gpu_memory_utilization 0.9, recompute preemption, watermark 0.01, max_model_len 4,096 (requests "
          "with prompt + output > 4,096 are cut or rejected as vLLM does). MU is the paper's (sec. 3.2.2): the lowest 0.5 x GPU utilisation (1 with "
          "any unfinished request) + 0.5 x KV in use / capacity, queued prompts ignored as vLLM's "
          "gpu_cache_usage_perc ignores them; 'memory-usage (ours: + queued prompts)' is the token-aware "
          "variant, kept as an extra.", "",
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
    return L


def _rq3_points(q: dict) -> list[str]:
    """RQ3: every point of the runs around the knee."""
    L: list[str] = []
    L += ["", "| x knee | rate | router | P99 norm. latency (s/token) | P99 counting drops | mean TTFT (s) | "
          "attainment | dropped | preemptions | migrations |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in q["points"]:
        wd = p["p99_nl_with_drops_s"]
        if (wd is None or math.isnan(wd)) and p["dropped"]:  # results saved before the percentile fix
            wd = math.inf if p["dropped"] >= 0.01 * p["requests"] else None
        L.append(f"| {p['factor']} | {p['rate_rps']} | {p['router']} | {_f(p['p99_nl_s'])} | "
                 f"{'inf (> 1 % dropped)' if wd == math.inf else _f(wd)} | {_f(p['mean_ttft_s'], 2)} | {_f(p['attainment'])} | "
                 f"{p['dropped']} | {p['preemptions']} | {p.get('migrations', 0)} |")
    return L


def _rq3_targets(q: dict) -> list[str]:
    """RQ3: the targets, the paper beside ours."""
    t = q["targets"]
    L: list[str] = []
    sp = t["below_knee_spread"]
    ok3 = all(v <= 0.10 for v in sp.values())
    L += ["", "| target | paper | ours | met |", "|---|---|---|---|"]
    for suffix, label in (("", "the paper's set: LR / MU (paper's) / Llumnix-like with and without live "
                               "migration"),
                          ("_ext", "the EXTENDED set: the paper's + our memory-usage with queued prompts")):
        t11 = t.get(f"1.1x{suffix}")
        if t11 is None:  # results saved before the paper's-set targets existed
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
    return L


def _sensitivity_section(res: dict) -> list[str]:
    """RQ3 what-if testbeds."""
    L: list[str] = []
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
    return L


def _rq2_section(res: dict) -> list[str]:
    """RQ2: scaling on the synthetic week."""
    L: list[str] = []
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
    L += ["| target | paper | ours | met |", "|---|---|---|---|"]
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
    return L


def write_doc(res: dict, cmd: str, note: str = "") -> str:
    L = ["# PreServe reproduction", "",
         f"Generated by `{cmd}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}{note}; do not edit by "
         "hand.",
         "Paper: *PreServe: hierarchical prediction for LLM-as-a-service management* (the authority). Engine: the compiled fleet "
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
    L += in_short(res)
    L += (rq3_op_section(res) if "rq3_op" in res else []) + llumnix_sections(res)
    if "rq3" in res:
        L += _rq3_section(res) + _rq3_points(res["rq3"]) + _rq3_targets(res["rq3"])
    if "rq3_seeds" in res:
        L += _seed_section(res)
    if "sensitivity" in res:
        L += _sensitivity_section(res)
    if "rq2" in res:
        L += _rq2_section(res)
    L += ["## Differences from the paper, explained", "", *differences(res), ""]
    return "\n".join(L) + "\n"
