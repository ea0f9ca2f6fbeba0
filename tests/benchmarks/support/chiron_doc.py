"""Writes docs/reproduction_chiron.md from the results of tests/benchmarks/reproduce_chiron.py (``--write-doc``).

Every number in the tables comes from the results passed in; the prose around them states what the paper says and
why ours differs. Re-running the script with ``--write-doc`` regenerates the whole file.
"""

from __future__ import annotations

import datetime as dt

from tests.benchmarks.support.chiron_wb_doc import fig19x_knobs, wb_section, wb_short


def _pct(x, digits=1):
    return "n/a" if x is None else f"{100 * x:.{digits}f} %"


def _ok(flag):
    return "met" if flag else "**missed**"


VARIANTS = (("llumnix", "live migration of running requests (Llumnix's default; primary)"),
            ("llumnix_queued", "queued-request rebalancing every 10 s (our earlier approximation)"),
            ("llumnix_no_migration", "no migration"))


def _fig19(res: dict, scale: float) -> list[str]:
    c, ll = res["chiron"], res["llumnix"]
    saved = 1 - c["gpu_hours"] / ll["gpu_hours"] if ll["gpu_hours"] else None
    done_in_window = c["batch_done_by_71.5min"]
    cap = max(2, round(50 * scale))
    left = ll.get("batch_unfinished_at_80min", 0)
    rows = [
        ("Chiron: batch finished by 65 min (+10 % = 71.5 min)", ">= 99 %", "100 % at 65 min",
         f"{_pct(c['batch_done_by_65min'])} / {_pct(done_in_window)} (99 % done at {c['batch_99pct_done_at_min']} min)",
         _ok(done_in_window >= 0.99)),
        ("Chiron: interactive SLO attainment (TTFT 10 s and mean ITL 200 ms)", ">= 99 %", "all SLOs met",
         f"{_pct(c['interactive_attainment'], 2)} (TTFT {_pct(c['interactive_ttft_attainment'], 2)}, "
         f"ITL {_pct(c['interactive_itl_attainment'], 2)})", _ok((c["interactive_attainment"] or 0) >= 0.99)),
        ("Chiron: batch SLO attainment (TTFT 1 h and mean ITL 2 s)", "-", "all SLOs met",
         f"{_pct(c['batch_attainment'], 2)} (TTFT {_pct(c['batch_ttft_attainment'], 2)}, "
         f"ITL {_pct(c['batch_itl_attainment'], 2)})", "-"),
        ("GPU-hours, 0-80 min: Chiron / Llumnix-like (live migration)", "-", "-",
         f"{c['gpu_hours']:.1f} / {ll['gpu_hours']:.1f}"
         + (f" (Llumnix-like has {left:,} batch requests unfinished at 80 min)" if left else ""), "-"),
        ("Chiron's saving in GPU-hours against Llumnix-like", ">= 45 %", "60 %", _pct(saved), _ok((saved or 0) >= 0.45)),
        ("Chiron: largest one-step batch scale-up", ">= 5 instances", "10",
         f"{c['largest_batch_step']} (steps at min: {', '.join(f'{t}: +{n}' for t, n in c['batch_steps']) or 'none'})",
         _ok(c["largest_batch_step"] >= 5)),
        ("Chiron: peak instances", "-", "~25 (15 + 10)", f"{c['peak_instances']} (at {c['peak_at_min']} min)", "-"),
        ("Llumnix-like: reaches the cap", f"{cap}", "50", f"peak {ll['peak_instances']} at {ll['peak_at_min']} min",
         _ok(ll["peak_instances"] >= cap)),
        ("Llumnix-like: batch SLO attainment", "<= 60 %", "50 %", _pct(ll["batch_attainment"]),
         _ok((ll["batch_attainment"] or 1) <= 0.60)),
        ("Llumnix-like: batch finished by 65 / 80 min", "-", "-",
         f"{_pct(ll['batch_done_by_65min'])} / {_pct(ll['batch_done_by_80min'])}", "-"),
        ("Llumnix-like: interactive SLO attainment", "-", "-", _pct(ll["interactive_attainment"], 2), "-"),
        ("scale-outs / scale-ins: Chiron, Llumnix-like", "-", "-",
         f"{c['scale_outs']} / {c['scale_ins']}, {ll['scale_outs']} / {ll['scale_ins']}", "-"),
        ("simulated requests; CPU seconds (Chiron, Llumnix-like)", "-", "-",
         f"{c['requests']:,}; {c['cpu_s']} s, {ll['cpu_s']} s", "-"),
    ]
    out = ["| figure | target | paper | ours | |", "|---|---|---|---|---|"]
    out += [f"| {a} | {b} | {p} | {o} | {m} |" for a, b, p, o, m in rows]
    out += ["", "The Llumnix-like variants side by side (same scenario; Chiron's saving against each):", "",
            "| Llumnix-like | GPU-hours 0-80 min | Chiron's saving | peak (at min) | batch attainment | batch done by "
            "65 / 80 min | batch unfinished at 80 min | interactive attainment | running requests migrated live | "
            "queued requests moved | CPU s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, label in VARIANTS:
        v = res.get(key)
        if not v:
            continue
        out.append(f"| {label} | {v['gpu_hours']:.1f} | {_pct(1 - c['gpu_hours'] / v['gpu_hours'])} | "
                   f"{v['peak_instances']} ({v['peak_at_min']}) | {_pct(v['batch_attainment'])} | "
                   f"{_pct(v['batch_done_by_65min'])} / {_pct(v['batch_done_by_80min'])} | "
                   f"{v.get('batch_unfinished_at_80min', 0):,} | {_pct(v['interactive_attainment'], 2)} | "
                   f"{v.get('live_migrations', 0):,} | {v.get('queued_moved', 0):,} | {v['cpu_s']} |")
    return out


def _wb_live(w: dict, wq: dict | None) -> list[str]:
    """The W_B Llumnix-like sweep again with live migration of running requests, at the queue sizes run."""
    chiron = {p["queue"]: p for p in (wq or {}).get("chiron", [])}
    out = ["### W_B, Llumnix-like with live migration (Llumnix's default)", "",
           f"The same 8-point sweep with `migration: live`, at queues {', '.join(f'{q:,}' for q in w['queues'])} "
           f"(each point a full 65-min run). Tuned: {w['llumnix_tuned_knobs']}.", "",
           "| batch queue | Chiron batch / interactive | Llumnix-tuned (live) batch / interactive | GPU-hours Chiron / "
           "Llumnix-tuned (live) |", "|---|---|---|---|"]
    for ll in w["llumnix_tuned"]:
        c = chiron.get(ll["queue"])
        cc = f"{_pct(c['batch'])} / {_pct(c['interactive'])}" if c else "-"
        cg = f"{c['gpu_hours']:.1f}" if c else "-"
        out.append(f"| {ll['queue']:,} | {cc} | {_pct(ll['batch'])} / {_pct(ll['interactive'])} | "
                   f"{cg} / {ll['gpu_hours']:.1f} |")
    out += ["", f"Largest queue within SLO, Llumnix-tuned (live): **{w['llumnix_tuned_largest']:,}**. Every sweep "
            "point's: " + ", ".join(f"{k}: {v:,}" for k, v in w["llumnix_sweep_largest"].items()), ""]
    return out + wb_live_notes(w)


def _header(args) -> list[str]:
    """The page's title and the command it was generated by."""
    return ["# Chiron reproduction", "",
             "Generated by `python tests/benchmarks/reproduce_chiron.py "
             f"--scale {args.scale:g} --wb-scale {args.wb_scale:g} --tp {args.tp}"
             + (f" --wb-live-queues {args.wb_live_queues}" if getattr(args, "wb_live_queues", None) else "")
             + "".join(f" --only {c}" for c in (getattr(args, "only", None) or []))
             + (" --cached-only" if getattr(args, "cached_only", False) else "")
             + f" --write-doc` on "
             f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
             + (", W_B added from the points `--wb-prefetch` cached (after `--load docs/results/chiron.json "
                "--seed-cache` put the saved points back into the cache) with `--load docs/results/chiron.json "
                "--wb-from-cache`" if getattr(args, "wb_from_cache", False) else "")
             + " (compiled engine; results in "
             "docs/results/chiron.json, `--load` rewrites this page from them). Paper: Patke et al., *Hierarchical Autoscaling for Large Language Model "
             "Serving with Chiron*. The paper has no numeric "
             "tables and its figures carry no data: every paper number below is from its text.", ""]


def write_doc(results: dict, path, args) -> None:
    mf = facts(results.get("model_facts") or model_facts_json())
    lines = _header(args)
    lines += in_short(results)
    lines += setting(mf)
    if "fig19" in results:
        lines += ["## Fig. 19 (appendix A.2): interactive + a 1M-request batch dump, Llama-3.1-8B", "",
                  f"Scale {args.scale:g} (1 = the paper's size: Gamma 30 req/s CV 4 interactive, 1,000,000 batch "
                  "requests at t = 5 min, 50-instance cap, 30 s load; 80 simulated minutes).", ""]
        lines += _fig19(results["fig19"], args.scale) + [""] + _model_table(mf) + fig19_notes(results["fig19"], mf)
    if "fig19x" in results:
        lines += fig19x_section(results["fig19x"])
        lines += fig19x_knobs(results)
    if "estimator" in results:
        e = results["estimator"]
        at = e.get("at_target") or {}
        lines += ["## Waiting-time estimator (Fig. 14)", "",
                  "Two mixed instances (no autoscaling), 400 batch requests at t = 0 (output statistics), 6,000 at "
                  "t = 2 min; every 10 s the estimator gives each queued request its mean wait (q - 1) mu_o / "
                  "Theta_tok; the actual wait is the time it left the global queue. R^2 per snapshot:", "",
                  "| queued | R^2 | median estimate / actual |", "|---|---|---|"]
        for row in sorted(e["snapshots"], key=lambda r: -r["queued"])[::max(1, len(e["snapshots"]) // 12)]:
            lines.append(f"| {row['queued']:,} | {row['r2']:.4f} | {row['overestimate']:.2f} |")
        lines += ["", f"At the snapshot nearest 2,000 queued ({at.get('queued', 'n/a')}): **R^2 = "
                  f"{at.get('r2', float('nan')):.4f}** (target: >= 0.95, paper 0.99): "
                  f"{_ok((at.get('r2') or 0) >= 0.95)}.", ""] + estimator_notes(e)
    if "batchsize" in results:
        b = results["batchsize"]
        lines += ["## Converged interactive batch size, 8B vs 70B (sec. 6.1)", "",
                  "One instance, Poisson interactive arrivals well above its capacity for 10 min, ITL SLO 200 ms; the "
                  "local autoscaler's limit and the running batch at its steps in the second half (median).", "",
                  "| deployment | rate | converged limit | running batch | ITL at the steps |", "|---|---|---|---|---|"]
        for m in ("8b", "70b"):
            r = b[m]
            lines.append(f"| {r['deployment']} | {r['rate_rps']:g} req/s | {r['converged_limit']:.0f} | "
                         f"{r['running_batch']:.0f} | {1000 * r['itl_s']:.0f} ms |")
        lines += ["", f"Ratio 8B / 70B: limit **{b['ratio_limit']:.1f}x**, running batch **{b['ratio_running']:.1f}x** "
                  f"(target: >= 3x, paper 5x): {_ok(b['ratio_limit'] >= 3)}.", ""] + batchsize_notes(b, mf)
    lines += wb_section(results)
    if "wb" in results:
        w = results["wb"]
        lines += ["## W_B: 50 req/s interactive + a batch queue (Fig. 10)", "",
                  f"Scale {w['scale']:g} (interactive {50 * w['scale']:g} req/s, cap {max(2, round(50 * w['scale']))} "
                  "instances, 65 min); a queue size is served within SLO when both classes reach >= 99 % attainment. "
                  "Llumnix-like tuned = the best of 8 sweep points (the bundles' grid: scale-up threshold 10/50 x scale-down "
                  "60/200 x max batch 256/1,024; largest queue within SLO, then mean SLO attainment, then GPU-hours), "
                  f"with `migration: {w.get('migration', 'queued')}` (the live-migration sweep follows if run): "
                  f"{w['llumnix_tuned_knobs']}.", "",
                  "| batch queue | Chiron batch / interactive | Llumnix-tuned batch / interactive |", "|---|---|---|"]
        for c, ll in zip(w["chiron"], w["llumnix_tuned"], strict=True):
            lines.append(f"| {c['queue']:,} | {_pct(c['batch'])} / {_pct(c['interactive'])} | "
                         f"{_pct(ll['batch'])} / {_pct(ll['interactive'])} |")
        top = max(w["queues"])

        def largest(n):
            return f"{n:,}" + (" (the largest tested: >=)" if n == top else "")

        ratio = w["chiron_largest"] / w["llumnix_tuned_largest"] if w["llumnix_tuned_largest"] else None
        lines += ["", f"Largest queue within SLO: Chiron **{largest(w['chiron_largest'])}**, Llumnix-tuned "
                  f"**{largest(w['llumnix_tuned_largest'])}** (ratio {'n/a' if ratio is None else f'{ratio:.1f}x'}; "
                  f"target >= 2x): {_ok(ratio is None and w['chiron_largest'] > 0 or (ratio or 0) >= 2)}"
                  f"{' (ratio undefined: Llumnix-tuned serves none of the queues tried within SLO)' if ratio is None else ''}. "
                  "Every sweep point's largest queue: " + ", ".join(f"{k}: {v:,}" for k, v in
                                                                  w["llumnix_sweep_largest"].items()), ""]
        lines += ["GPU-hours per point (Chiron / Llumnix-tuned): " + ", ".join(
            f"{c['queue']:,}: {c['gpu_hours']:.1f} / {ll['gpu_hours']:.1f}"
            for c, ll in zip(w["chiron"], w["llumnix_tuned"], strict=True)) + ".", ""] + wb_notes(w, mf)
    if "wb_live" in results:
        lines += _wb_live(results["wb_live"], results.get("wb"))
    lines += LEFT_OUT
    missing = [label for key, label in (("fig19", "Fig. 19 (80 minutes)"), ("fig19x", "Fig. 19 like-for-like"),
                                        ("estimator", "the waiting-time estimator (Fig. 14)"),
                                        ("batchsize", "the converged batch size (sec. 6.1)"),
                                        ("wb", "W_B (Fig. 10)"), ("wb_live", "W_B with live migration"))
               if key not in results]
    if missing:
        lines.append("- Not in the results file this page was generated from (not re-run for it; the script runs "
                     "them without `--only` / `--cached-only`): " + ", ".join(missing) + ".")
    path.write_text("\n".join(lines) + "\n")


def model_facts() -> dict:
    """Figures of the 8B / 70B latency models and the Fig. 19 lengths the prose quotes (computed, not typed)."""
    from simulations.engine.policies.chiron import scenarios as S
    from simulations.engine.simulator.scenario import build_workload, parse_scenario

    dep = S.deployment("8b")
    d = S.scenario(parts=[S.batch_part(dep["model"], 200_000, 0.0)], dep=dep, initial=1, cap=1,
                   strategy=S.strategy("chiron"), max_time_s=10.0)
    w = build_workload(parse_scenario(d))
    p_in, p_out = float(w.input_tokens.mean()), float(w.output_tokens.mean())
    ctx = p_in + p_out / 2
    c = dep["decode"]

    def rate(b):
        return b / (c["c0"] + c["c_batch"] * b + c["c_ctx"] * b * ctx)

    kv_b = int(dep["kv_capacity_tokens"] / ctx)
    itl_b = int((0.2 - c["c0"]) / (c["c_batch"] + c["c_ctx"] * ctx))  # the batch whose iteration is 200 ms
    d70, d70_2 = S.deployment("70b", tp=4), S.deployment("70b", tp=2)
    return {"dep": dep, "p_in": p_in, "p_out": p_out, "ctx": ctx, "kv_b": kv_b, "rate": rate, "top": rate(kv_b),
            "itl_bound_batch": itl_b, "d70": d70, "kv70_tp2": d70_2["kv_capacity_tokens"],
            "c_batch_ratio": d70["decode"]["c_batch"] / c["c_batch"],
            "prefill_ratio": d70["prefill"]["c1"] / dep["prefill"]["c1"]}


FACT_BATCHES = (48, 64, 256, 1024)


def model_facts_json() -> dict:
    """``model_facts`` as the results file keeps it: the decode rate at the batches the prose quotes, no function."""
    m = model_facts()
    out = {k: v for k, v in m.items() if k != "rate"}
    out["rates"] = {**{str(b): m["rate"](b) for b in FACT_BATCHES}, "kv_bound": m["rate"](m["kv_b"])}
    return out


def facts(saved: dict) -> dict:
    """The saved model facts with ``rate(batch)`` read from their table."""
    m = dict(saved)
    m["rate"] = lambda b: m["rates"]["kv_bound"] if b == m["kv_b"] else m["rates"][str(b)]
    return m


def _model_table(m: dict) -> list[str]:
    """Decode-only throughput of one 8B instance on our latency model at batch sizes the paper talks about, with
    the mean lengths of the Fig. 19 workload."""
    rate, kv_b, p_out = m["rate"], m["kv_b"], m["p_out"]
    out = [f"Our 8B latency model, decode only (mean prompt {m['p_in']:.0f}, mean output {p_out:.0f} tokens, mean "
           f"context {m['ctx']:.0f}; KV-bound batch {kv_b:,}):", "",
           "| batch | iteration | tokens/s | requests/s | share of the KV-bound rate | paper |", "|---|---|---|---|---|---|"]
    notes = {48: "~50x below 2,048-4,096 (sec. 6.2's Llumnix-untuned)", 64: "", 256: "vLLM's default max_num_seqs",
             1024: "", kv_b: "Chiron's batch here (KV-bound)"}
    for b in (*FACT_BATCHES, kv_b):
        it = b / rate(b)
        out.append(f"| {b:,} | {1000 * it:.0f} ms | {rate(b):,.0f} | {rate(b) / p_out:.1f} | {rate(b) / m['top']:.0%} | "
                   f"{notes[b]} |")
    return out + [""]


def setting(m: dict) -> list[str]:
    dep, d70, c = m["dep"], m["d70"], m["dep"]["decode"]
    return [
        "## Setting", "",
        "- Engine: the fleet simulator (docs/simulator.md), policies in `simulations/engine/policies/chiron/` "
        "(public policy API only), scenarios built by `simulations/engine/policies/chiron/scenarios.py`.",
        f"- 8B: `{dep['name']}` from the hardware catalogue (fitted to the SLINFER authors' measured A100 table): "
        f"decode {1000 * c['c0']:.1f} ms + {1000 * c['c_batch']:.3f} ms per request + {1e6 * c['c_ctx']:.3f} us per "
        f"context token; KV {dep['kv_capacity_tokens']:,} tokens; {dep['kv_bytes_per_token'] // 1024} KiB per token "
        "swapped at 25 GB/s.",
        f"- 70B: the catalogue has no Llama-3.1-70B; `{d70['name']}` (SageServe's perf_model.csv fit; the same 80 "
        f"layers and 8 KV heads), TP a parameter (`--tp`), 4 used: KV {d70['kv_capacity_tokens']:,} tokens. TP2 "
        f"leaves {m['kv70_tp2']:,}.",
        "- Lengths: ShareGPT-like log-normals fitted to published quantiles (prompt p5/p50/p95 = 7/52/911, response "
        f"5/87/632, capped at 4,096; mean prompt {m['p_in']:.0f}, mean response {m['p_out']:.0f} tokens).",
        "- SLOs: interactive (tier IW-F) TTFT 10 s, mean ITL 200 ms; batch (NIW) TTFT 1 h, mean ITL 2 s. A request "
        "unfinished at the end of the run misses.",
        f"- KV bounds the batch: with these lengths one 8B instance holds about {m['kv_b']:,} requests at once (KV / "
        "mean context), not the paper's 2,048-4,096 (limit capped at 4,096; the running batch is KV-bound and "
        "reported as such).",
        "- Not modelled: prefix caching and speculative decoding (the paper enables both; its Fig. 11 on their "
        "effect is left out), Llumnix's priorities, chunked prefill (swap-out needs the non-chunked engine).",
        "- Llumnix-like (`llumnix-batch`, `policies/chiron/baselines.py`): freest-instance dispatch at arrival, a "
        "static max batch, Llumnix's average-freeness scaler, and by default (`migration: live`) Llumnix's live "
        "migration of running requests: the `llumnix-migrate` loop (`policies/llumnix_migration.py`, "
        "AlibabaPAI/llumnix `llumnix/config/default.py`: poll 0.05 s, migrate out above load 3, least free paired "
        "with most free, `REQUEST_MIGRATION_POLICY = 'SR'` = the shortest *running* request, per "
        "`llumnix/llumlet/local_migration_scheduler.py`, where waiting requests move only under 'FCW' / 'FCWSR'; "
        "pipelined copy at 25 GB/s, last stage <= 16 blocks + 20 ms switch-over). Its load reads the queued "
        "prompts as `llumnix-approx` does (queued requests x mean prompt so far, O(1) per instance; the exact sum "
        "is O(queue) and the loop polls every 50 ms). `migration: queued` is our earlier stand-in (waiting queues "
        "rebalanced every 10 s, nothing running moves), `none` no migration.",
        "- Local autoscaler measurement (the paper leaves it open): ITL = window / decode iterations, throughput = "
        "tokens generated / window, windows of >= 1 s closed at a batch change; a throughput sample only while the "
        "instance is saturated (requests waiting locally or in the global queue for it, or turned away for lack of "
        "room, or the batch at its limit); TBP only after an increase (after a decrease every halving would lower "
        "throughput and halve again). delta = 0.1 around theta = 1/3 (one instance moves IBP by 1/15 to 1/10 at "
        "10-15 instances); both global autoscalers tick every 10 s. Theta of eq. 1 = batch output tokens "
        "completed per second over the last 60 s (see the estimator section); Alg. 2 waits for it unless a group "
        "is due within 15 min. Batch requests reach an instance paced at 2,048 prompt tokens per decode iteration "
        "(the engine, like vLLM without chunked prefill, pauses decodes for admissions).", "",
    ]


def _llumnix_primary_note(ll: dict, saved: float) -> str:
    """Fig. 19: what the live-migration Llumnix-like run did, from its measured figures."""
    mis = ll["interactive_misses_by_arrival"]
    return (
        "- **Llumnix-like, primary (live migration of running requests, decided before any result).** Before the "
        f"dump its scaler drains the 15 initial instances to {ll['instances_at_5min']} "
        f"({ll['scale_ins_before_5min']} scale-ins in the first 5 min: with a static batch of 256 and "
        "ShareGPT-like contexts the average freeness stays high; the paper's Llumnix idles at ~15). "
        "Freest-instance dispatch then puts the whole dump on those instances. Llumnix's 'SR' policy migrates "
        "only *running* requests, one per source-destination pair per 50 ms poll, and there are only "
        f"{ll['instances_at_5min']} sources: {ll['live_migrations_per_s_5_80min']:.1f} live migrations per "
        "second on average from 5 to 80 min, while the sources' queues hardly move: "
        f"{ll['running_mean_40_80min']:,.0f} requests running fleet-wide on average from 40 to 80 min, against "
        f"{ll['peak_instances']} x 256 slots. The scaler keeps adding one instance at a time and reaches its peak "
        f"of {ll['peak_instances']} at {ll['peak_at_min']} min, and {1 - ll['batch_done_by_80min']:.0%} of the "
        f"dump is still unfinished at 80 min. Chiron's saving over the same 80 min is {saved:.1%} (paper 60 %), "
        "and understated: Llumnix-like needs much longer to finish what is left (the like-for-like section "
        f"below). Its batch attainment is {_pct(ll['batch_attainment'])} (paper 50 %). Its interactive class: "
        f"{_pct(ll['interactive_attainment'], 2)}; of its {ll['interactive_misses']:,} interactive misses "
        f"{mis['0-5 min']:,} arrive in the first 5 min (while the fleet drains, with queues), {mis['5-10 min']:,} "
        f"from 5 to 10 min (behind the dump until new instances are ready) and {mis['10-80 min']:,} later (new "
        "arrivals go to the freest, i.e. new, instances, which the dump never reaches). Real Llumnix would do "
        "the same under these defaults as far as the cited code shows; our transfer-time stages are a model, "
        "not measured.")


def fig19_notes(f: dict, m: dict) -> list[str]:
    c, ll, q, nm = f["chiron"], f["llumnix"], f.get("llumnix_queued"), f.get("llumnix_no_migration")
    share256 = m["rate"](256) / m["top"]
    dump = round(1_000_000 * c.get("scale", 1.0))
    work_m = dump * m["p_out"] / 1e6
    saved = 1 - c["gpu_hours"] / ll["gpu_hours"]
    out = [
        "Differences, explained:", "",
        "- **How our Chiron differs from a literal reading (all in `policies/chiron/policy.py`, each a difference "
        "from the paper, not a knob):** (1) *Interactive scale-in.* Sec. 5.2: \"if IBP decreases below Theta, mixed "
        "and interactive instances are removed\". During a dump every mixed instance holds batch work and is never "
        "idle, so retiring only idle instances ratcheted the mixed count up; a mixed instance running only batch "
        "requests is drained instead (its batch requests finish, nothing new is routed to it); an instance running "
        "interactive requests is never retired. (2) *Spills are packed*: an interactive request that finds no room "
        "evicts batch work on the mixed instance already running the most interactive requests, so a burst "
        "occupies as few instances as it needs (IBP counts instances). (3) *Mixed instances are preemptible* "
        "(sec. 3) and \"the interactive request SLO can be used to determine batch size\" (sec. 2.3): a mixed "
        "instance running interactive requests swaps out the batch requests above its Alg. 1 limit. (4) A batch "
        "instance just ready counts as still coming for one Theta window (its ramp is not yet in the measured "
        "Theta; counting it at once made the next tick add again). (5) *A rule we chose*: Alg. 2 acts on a "
        "measured Theta only (two 60 s windows after the dump) unless a group is due within 15 min "
        "(`measure_first_s`), because batch instances retire only when the queue is empty (Alg. 2, lines 17-19): "
        "an instance added on the ramp's under-read stays for the whole dump.",
    ]
    if "instances_at_5min" in ll:
        out.append(_llumnix_primary_note(ll, saved))
    if q and nm:
        out.append(
            "- **The two other variants bracket it.** With our earlier queued-request rebalancing the dump is spread "
            f"over every new instance within 10 s of its start, 99 % of it is done by {q['batch_99pct_done_at_min']} "
            f"min (a static batch of 256 gives {share256:.0%} of the KV-bound decode rate, table above), and "
            f"Llumnix-like uses {q['gpu_hours']:.1f} GPU-h against Chiron's {c['gpu_hours']:.1f}, but pays with the "
            f"interactive class ({_pct(q['interactive_attainment'], 2)}: no priority between classes, interactive "
            "arrivals wait in FCFS queues behind the migrated batch requests). With no migration the dump stays on "
            f"the instances it landed on ({_pct(nm['batch_done_by_65min'])} done by 65 min; interactive "
            f"{_pct(nm['interactive_attainment'], 2)}). Real Llumnix's default is the live row. The GPU-hour "
            "comparison is therefore not at equal interactive SLO.")
    if "fleet_mean" in c:
        out.append(
            f"- **Chiron's GPU-hours.** Chiron's fleet (serving + starting) is {c['fleet_min']}-{c['fleet_max']} "
            f"instances, {c['fleet_mean']:.1f} on average over the 80 min (the paper: ~15 before the dump, ~25 at "
            "most): 1/theta = 3x the instances that run interactive requests, plus the batch instances Alg. 2 adds "
            f"for the dump. The work itself is fixed: {dump:,} x {m['p_out']:.0f} output tokens = {work_m:.0f}M tokens.")
    first = c["batch_steps"][0][0] if c["batch_steps"] else None
    out += [
        "- **The paper's Fig. 19 is not self-consistent.** A.2 says the Llumnix of Fig. 19 is the *tuned* one "
        "\"which has similar instance-level throughput as Chiron\", yet \"as Llumnix does not adapt the batch size "
        "for the newly added instances, it continues to serve the requests at a reduced throughput\" and its 50 "
        "instances finish 50 % while Chiron's ~25 finish all. Chiron's own rate in A.2 (\"20 requests/s\" per "
        f"instance on the over-provisioned capacity) agrees with our table ({m['top'] / m['p_out']:.1f} req/s "
        "decode-only at the KV-bound batch; prefill pauses lower it). In our live-migration run the reduced "
        "throughput comes from how work reaches the new instances (migration of running requests only), not from "
        "their batch size.",
        ("- **Largest one-step scale-up** (paper: 10 added at t = 50 min). "
         + ("Ours adds no batch instance." if first is None else
            f"Ours adds its first step at {first} min (the dump lands at 5 min), as soon as Theta is measured: with "
            f"our throughput the multiplexed capacity cannot finish {work_m:.0f}M tokens in the hour, so the wait of "
            "the last group exceeds its deadline at once; in the paper's telling the spare capacity nearly sufficed "
            "and the estimator caught up at 50 min.")),
        "- The paper's ~15 GPUs at t = 0 come from its own 8B throughput; ours are set by the IBP rule (instances "
        "running interactive work x 3) on our latency model. GPU-hours in the first table are counted over the same "
        "80 minutes for every run (provisioning included); the like-for-like section counts them to 65 min and to "
        "each run's own completion.",
        "- **Batch size and throughput (the paper's Fig. 3).** Our latency model has no throughput inflection: "
        "decode tokens/s rise monotonically to the KV bound, and a batch of 256 already reaches "
        f"{share256:.0%} of the KV-bound rate (table above). The paper's Fig. 3 shows throughput rising with batch "
        "size up to an inflection and then falling (preemptions and attention cost; no values given). So in our "
        "engine a static batch of 256 (Llumnix-like) costs little throughput: the GPU-hour gap is not a batch-size "
        "effect but how the dump reaches the instances.", ""]
    return out


def fig19x_section(x: dict) -> list[str]:
    """The like-for-like accounting: GPU-hours to the paper's 65-minute deadline and to each run's completion."""
    cfg_label = {"default": "as above (floor 1, Llumnix's default knobs)",
                 "floor15": "idling at the paper's size (floor 15, default knobs)",
                 "floor15_tuned": "floor 15, knobs the W_B live sweep selected"}
    mig_label = {"llumnix": "live", "llumnix_queued": "queued", "llumnix_no_migration": "none"}
    c = x["chiron"]
    out = ["### Fig. 19 like-for-like: GPU-hours to the 65-minute deadline and to completion of the dump", "",
           f"The same scenario run until the dump is done (at most {c['max_h']:g} h; interactive arrivals stop at "
           "80 min). GPU-hours: every instance billed from request to release, cut at 65 min (the paper's "
           "deadline) and at the run's own last batch completion. Rules fixed before the first run (script "
           "docstring).", "",
           "| run | migration | GPU-h to 65 min | batch done by 65 min | dump done at (min) | GPU-h at completion | "
           "interactive attainment | CPU s |", "|---|---|---|---|---|---|---|---|"]

    def row(label, mig, v):
        done = (f"{v['dump_done_at_min']}" if v["dump_finished"]
                else f"not finished by {v['max_h']:g} h ({_pct(v['batch_done_share'])} done)")
        comp = "-" if v["gpu_hours_at_completion"] is None else f"{v['gpu_hours_at_completion']:.1f}"
        return (f"| {label} | {mig} | {v['gpu_hours_65min']:.1f} | {_pct(v['batch_done_by_65min'])} | {done} | "
                f"{comp} | {_pct(v['interactive_attainment'], 2)} | {v['cpu_s']} |")

    out.append(row("Chiron", "-", c))
    for cfg, label in cfg_label.items():
        for key, mig in mig_label.items():
            v = x.get(f"{cfg}/{key}")
            if v:
                out.append(row(f"Llumnix-like {label}", mig, v))
    out += ["", "Chiron's saving in GPU-hours, band over the three migration models (live / queued / none):", "",
            "| Llumnix-like | to 65 min | at completion of the dump |", "|---|---|---|"]
    for cfg, label in cfg_label.items():
        cells = []
        for window in ("gpu_hours_65min", "gpu_hours_at_completion"):
            b = x["bands"][f"{cfg}/{window}"]
            per = " / ".join("n/a" if v is None else f"{v:.1%}" for v in b["savings"].values())
            cells.append("n/a" if b["min"] is None else f"**{b['min']:.1%} to {b['max']:.1%}** ({per})")
        if any(x.get(f"{cfg}/{key}") for key in mig_label):
            out.append(f"| {label} | {cells[0]} | {cells[1]} |")
    out += ["", "n/a: that Llumnix-like run did not finish the dump within the limit (or was not run); the band is over the runs "
            "that did. The paper: 60 % fewer GPU node-hours, Llumnix tuned and idling at about 15 GPUs.", ""]
    return out


def estimator_notes(e: dict) -> list[str]:
    snaps = e["snapshots"]
    first = max(snaps, key=lambda r: r["queued"])
    low = [r for r in snaps if r["queued"] <= 4000 and r["r2"] is not None]
    neg = [r for r in snaps if r["r2"] is not None and r["r2"] < 0]
    r2s = [r["r2"] for r in low]
    ovs = [r["overestimate"] for r in low]
    return [
        "Theta_tok is the batch output tokens completed per second over the previous 60 s. Right after the dump "
        "(the largest queues, first rows) that window still holds the ramp, when few requests have finished, so "
        f"the estimate is far too high ({first['overestimate']:.1f}x at {first['queued']:,} queued) and R^2 "
        f"negative ({len(neg)} snapshots); from 4,000 queued down R^2 is {min(r2s):.2f}-{max(r2s):.3f} and estimate "
        f"/ actual {min(ovs):.2f}-{max(ovs):.2f}, below 1 in {sum(o < 1 for o in ovs)} of {len(ovs)} snapshots (the "
        "instances speed up as the local autoscaler grows their batch). The paper's R^2 rises with queue size (CLT); ours is limited by the "
        "throughput reading rather than by the CLT. Reading Theta as the batch tokens *generated* per second "
        "(`theta_from: generated`, the literal \"token generation throughput\") is the other option: mu_o comes "
        "from completed requests, which two minutes into a dump are the short ones, and the completed-token Theta "
        "shares that bias and cancels it, the generated-token Theta does not. The paper fits mu_o \"from previous "
        "requests\" without saying how; we keep the completed-token Theta.", ""]


def batchsize_notes(b: dict, m: dict) -> list[str]:
    r8 = b["8b"]
    return [
        f"Both converge well below the ITL bound ({1000 * r8['itl_s']:.0f} ms against 200 ms): in overload every "
        "admission prefill pauses the batch, so the throughput measured after an increase often does not rise and "
        "TBP halves the limit; the ratio is what matters here, the absolute sizes are lower than a pure ITL bound "
        f"would give ({m['itl_bound_batch']:,} for 8B at the Fig. 19 mean context). The interactive attainment "
        f"of these runs is {_pct(r8['interactive_attainment'])} (8B) and "
        f"{_pct(b['70b']['interactive_attainment'])} (70B) by design (arrivals far above one instance's capacity).",
        "Our latency model has no throughput inflection (sec. 4.1, Fig. 3: throughput falls past a batch size "
        "because of preemptions and attention cost): decode tokens/s rise monotonically to the KV bound (table in "
        "the Fig. 19 section), and the engine's own preemptions when the KV is full are the only drop; TBP still "
        "fires because admission prefills pause the batch.",
        f"The 70B decode cost per added request is {m['c_batch_ratio']:.1f}x the 8B's (plus context), and its "
        f"prefill is {m['prefill_ratio']:.1f}x slower per token, so under the same 200 ms SLO it holds fewer "
        "requests; the paper's 5x also reflects speculative decoding on 70B (8B as draft), which is not modelled "
        "and which the paper says prefers smaller batches.", ""]


def wb_notes(w: dict, m: dict) -> list[str]:
    ch = w["chiron"]
    base = min(p["gpu_hours"] for p in ch) if ch else None
    grow = next((p["queue"] for p in ch if base and p["gpu_hours"] > 1.05 * base), None)
    sweep = w.get("llumnix_sweep", {})
    iw_any = [p["interactive"] or 0 for pts in sweep.values() for p in pts]
    b_any = [p["batch"] or 0 for pts in sweep.values() for p in pts]
    it1024 = 1024 / m["rate"](1024)
    return [
        "The paper: Chiron handles \"a batch request queue of 700k requests\" for 8B (sec. 6.2); Llumnix-tuned's "
        "limit is only drawn in Fig. 10. Ours: Chiron keeps both classes within SLO up to "
        f"{w['chiron_largest']:,}, with the same interactive fleet at every size (the GPU-hours at small queues are "
        "its 1/theta headroom; they grow " + (f"from {grow:,} on" if grow else "at none of the sizes tried")
        + ", where the multiplexed capacity no longer covers the deadline). Llumnix-like misses the *interactive* "
        "SLO: it has no priority between classes, so interactive arrivals wait in the instances' FCFS queues behind "
        "batch requests (dispatched at once, then spread by the queued-request migration); over the whole sweep "
        "its interactive attainment is " + (f"{min(iw_any):.1%}-{max(iw_any):.1%}" if iw_any else "-")
        + " and its batch attainment " + (f"{min(b_any):.1%}-{max(b_any):.1%}" if b_any else "-")
        + " (a static batch of 256 gives "
        f"{m['rate'](256) / m['top']:.0%} of the KV-bound decode rate on our latency model). That matches the "
        "paper's account (\"Llumnix does not enable queuing for these batch requests\"), but the ratio Chiron / "
        f"Llumnix-tuned is undefined when Llumnix-tuned's largest queue within SLO is "
        f"{w['llumnix_tuned_largest']:,}. The sweep is the comparison bundles' grid (scale-up threshold 10/50 x "
        f"scale-down 60/200 x max batch 256/1,024); at 1,024 interactive requests share ~{1000 * it1024:.0f} ms "
        "decode iterations (ITL SLO 200 ms).", ""]


def wb_live_notes(w: dict) -> list[str]:
    sweep = w.get("llumnix_sweep", {})
    if not sweep:
        return []
    qs = w["queues"]
    best_iw = {q: max((p["interactive"] or 0) for pts in sweep.values() for p in pts if p["queue"] == q) for q in qs}
    dflt = next((pts for k, pts in sweep.items()
                 if '"scale_up_below": 10.0' in k and '"scale_down_above": 60.0' in k), None)
    big = [p for pts in sweep.values() for p in pts if p["queue"] >= 700_000]
    t = {p["queue"]: p for p in w["llumnix_tuned"]}
    cpus = {q: [p["cpu_s"] for pts in sweep.values() for p in pts if p["queue"] == q] for q in qs}
    head = ("With live migration no sweep point serves any queue within SLO either."
            if w["llumnix_tuned_largest"] == 0 else
            f"With live migration the tuned point serves queues up to {w['llumnix_tuned_largest']:,} within SLO.")
    return [
        head + " Best interactive attainment over the sweep per queue: "
        + ", ".join(f"{q:,}: {v:.1%}" for q, v in best_iw.items())
        + ("; with Llumnix's default thresholds (10 / 60): "
           + ", ".join(f"{p['queue']:,}: {p['interactive']:.1%}" for p in dflt) if dflt else "")
        + (". Batch attainment from 700,000 on: "
           f"{min(p['batch'] for p in big):.1%}-{max(p['batch'] for p in big):.1%} across the sweep (the dump sits "
           "on the few instances it was dispatched to and only running requests move, one per pair and poll; see "
           "Fig. 19)" if big else "")
        + "; tuned: "
        + ", ".join(f"{q:,}: {t[q]['batch']:.1%} batch, {t[q]['gpu_hours']:.1f} GPU-h" for q in qs if q in t)
        + ". CPU per point: " + ", ".join(f"{q:,}: {min(v):.0f}-{max(v):.0f} s" for q, v in cpus.items() if v) + ".",
        ""]


def in_short(results: dict) -> list[str]:
    """The headlines, like-for-like first (every figure from the results)."""
    out = ["## In short", ""]
    x = results.get("fig19x")
    if x and "bands" in x:
        c = x["chiron"]
        for cfg, label in (("floor15", "Llumnix-like idling at the paper's ~15 instances"),
                           ("floor15_tuned", "the same with the W_B-tuned knobs"),
                           ("default", "Llumnix-like draining to its floor of 1")):
            b65, bdone = x["bands"][f"{cfg}/gpu_hours_65min"], x["bands"][f"{cfg}/gpu_hours_at_completion"]
            if b65["min"] is None:
                out.append(f"- Fig. 19 like-for-like against {label}: not run.")
                continue
            done_txt = ("n/a (no run finished the dump)" if bdone["min"] is None
                        else f"{bdone['min']:.1%} to {bdone['max']:.1%}")
            missing = sum(v is None for v in bdone["savings"].values())  # not run or not finished
            out.append(
                f"- Fig. 19, Chiron's GPU-hour saving against {label}, band over the three migration models: "
                f"**{b65['min']:.1%} to {b65['max']:.1%}** over the paper's 65-minute deadline, **{done_txt}** at "
                "completion of the dump" + (f" ({missing} of 3 runs not finished within {c['max_h']:g} h or not run, left out "
                                            "of the band)" if missing and bdone["min"] is not None else "")
                + "; paper: 60 %.")
    wb = wb_short(results)
    if wb:
        out.append(wb)
    f = results.get("fig19")
    if f:
        c, ll = f["chiron"], f["llumnix"]
        out.append(f"- The earlier reading (0-80 min, Llumnix-like live migration draining to "
                   f"{ll.get('instances_at_5min', '-')} before the dump): {1 - c['gpu_hours'] / ll['gpu_hours']:.1%} "
                   f"with {ll.get('batch_unfinished_at_80min', 0):,} of Llumnix-like's batch requests unfinished at "
                   "80 min.")
    return [*out, ""]


LEFT_OUT = [
    "## Left out", "",
    "- Figures 3, 5, 6, 9, 11-13, 15-18 (sweeps over rates, SLOs, CV and configurations) are not reproduced here; "
    "the mechanisms they exercise are the same classes.",
    "- Prefix caching and speculative decoding (Fig. 11): not modelled, so left out.",
    "- W_B for 70B and the mixed-model configuration (Fig. 10's other panels): not run.",
]
