"""The analysis of docs/reproduction_slinfer.md: where ours meets the targets, every difference explained, and how the
executor works. Every measured figure is read from the results (docs/results/slinfer.json), and so are the engine's
settings (its ``setting`` block); the figures typed here are the paper's, named as such.
"""

from __future__ import annotations

from tests.benchmarks.support.slinfer_paper import (
    GAIN_TARGET,
    MODELS,
    PAPER_GAIN,
    PAPER_WATERMARK,
    SIZES,
    gains,
    met_ratio,
    pct,
    ratio,
    t3_ok,
)

TRACE_S = 1800  # the artefact's test length: the trace's 30 minutes


def _run(res: dict, size: str, n: str, system: str) -> dict | None:
    return res.get("main", {}).get(size, {}).get(n, {}).get(system)


def _inside(vals: list[tuple[str, float]], lo: float, hi: float) -> tuple[list[str], list[str]]:
    ok = [f"{size} {g:.2f}" for size, g in vals if lo <= g <= hi]
    bad = [f"{size} {g:.2f}" for size, g in vals if not lo <= g <= hi]
    return ok, bad


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else "none"


def _count(k: int) -> str:
    return {0: "no", 1: "only one", 2: "two", 3: "three"}.get(k, str(k))


def _gpus(runs: list[dict]) -> str:
    return " / ".join(f"{r['avg_gpu_nodes']:.2f}" for r in runs)


def _slos(runs: list[dict]) -> str:
    return " / ".join(pct(r["slo_attainment"]) for r in runs)


def _table3_bullet(res: dict) -> list[str]:
    m = res.get("main", {}).get("7B", {})
    cs = [m[n]["sllm+c+s"] for n in MODELS if "sllm+c+s" in m.get(n, {})]
    sl = [m[n]["slinfer"] for n in MODELS if "slinfer" in m.get(n, {})]
    if len(cs) < 3 or len(sl) < 3:
        return []
    met = sum(t3_ok("sllm+c+s", n, m[n]["sllm+c+s"]) + t3_ok("slinfer", n, m[n]["slinfer"]) for n in MODELS)
    shared = res.get("slots", {}).get("7B", {})
    lost = [f"{n}-model ({shared[n]['avg_gpu_nodes']:.2f} GPUs, {pct(shared[n]['slo_attainment'])} % SLO)"
            for n in MODELS if n in shared and not t3_ok("sllm+c+s", n, shared[n])]
    return [f"- **Table III, 7B:** {met} of 6 cells are met. SLINFER: "
            f"{_gpus(sl)} GPUs and {_slos(sl)} % SLO against the paper's 0.9 / 2.5 / 4.0 and 99 / 99 "
            f"/ 86. sllm+c+s, with its half-node slots read as the paper describes them (static halves, item 5): "
            f"{_gpus(cs)} GPUs and {_slos(cs)} % SLO against the paper's 2.0 / 3.6 / 4.0 and 99 / "
            "93 / 65"
            + (". The first build's slots (alternating on the whole node) miss the " + _and(lost) + " cell"
               + ("s" if len(lost) > 1 else "") + "; see the half-node-slots table." if lost else ".")]


def _gain_bullets(res: dict) -> list[str]:
    L = []
    for base in ("sllm", "sllm+c", "sllm+c+s"):
        g = gains(res, base)
        if not g:
            continue
        lo, hi = GAIN_TARGET.get(base, tuple(float(x) for x in PAPER_GAIN[base]))
        ok, bad = _inside(g, lo, hi)
        what = (f"the target [{lo}, {hi}]" if base in GAIN_TARGET else
                f"the paper's range [{PAPER_GAIN[base][0]}, {PAPER_GAIN[base][1]}] (no target was set)")
        line = f"- **128 models, SLINFER / {base}:** inside {what}: {_and(ok)}"
        if bad:
            line += f"; **outside: {_and(bad)}**"
        rd = res.get("readings", {})
        extra = [f"{size} {ratio(res, size, '128', base, rd[size]['128']):.2f}" for size, v in g
                 if not lo <= v <= hi and "128" in rd.get(size, {})]
        if extra:
            line += f" (with the replayed shadow validation, item 12: {_and(extra)})"
        sl = res.get("slots", {})
        if base == "sllm+c+s":
            shared = [f"{size} {met_ratio(_run(res, size, '128', 'slinfer'), sl[size]['128']):.2f}"
                      for size, _ in g if "128" in sl.get(size, {})]
            if shared:
                line += f". Against the first build's work-conserving slots: {_and(shared)}"
        L.append(line + ".")
    return L


def targets_met(res: dict) -> list[str]:
    L = ["## Where ours meets the reproduction targets and where it does not", "",
         "(The simulation is deterministic, so the figures above are the ones this text discusses.)", ""]
    L += _table3_bullet(res) + _gain_bullets(res)
    wm = res.get("watermark", {})
    if "0" in wm and "0.25" in wm:
        a, b = wm["0"], wm["0.25"]
        L.append(f"- **Watermark: {'missed' if not (0.5 <= a['resizing_share_gpu'] / 0.113 <= 2) else 'met'}.** The "
                 f"share of lifetime spent resizing is {pct(a['resizing_share'])} % at w = 0 (paper 11.3 %) and "
                 f"{pct(b['resizing_share'])} % at w = 25 % (paper 1.4 %) over all instances; over GPU instances "
                 f"only (the only ones that resize: CPU pools are fixed in the artefact) {pct(a['resizing_share_gpu'])} "
                 f"% and {pct(b['resizing_share_gpu'])} %: {PAPER_WATERMARK['0'] / a['resizing_share_gpu']:.1f}x and "
                 f"{PAPER_WATERMARK['0.25'] / b['resizing_share_gpu']:.1f}x below the paper. The trend is "
                 + ("right: a larger watermark means less resizing." if b["resizes"] < a["resizes"] else "NOT the "
                    "paper's.") + " Item 1 explains why we did not add a fixed resize cost.")
    ab = res.get("ablation", {})
    full = _run(res, "7B", "64", "slinfer")
    if "w/o sharing" in ab and full:
        more = all(r["avg_gpu_nodes"] > full["avg_gpu_nodes"] for r in ab.values())
        L.append(f"- **Ablation, 64 x 7B:** without sharing, SLO attainment is "
                 f"{pct(ab['w/o sharing']['slo_attainment'])} % (paper 89 %). "
                 + ("Every ablation uses more GPUs than full SLINFER, as in the paper." if more else
                    "Not every ablation uses more GPUs than full SLINFER (the paper: every one does)."))
    return L + [""]


def differences(res: dict) -> list[str]:
    L = ["## Differences explained (nothing was tuned to agree)", ""]
    for item in (_resize, _migration, _shadow, _prefill, _baselines, _nodes, _cpu_memory, _cold_start, _big_model,
                 _metrics, _small_model, _readings, _sllm_c):
        L += item(res)
    return L


def _resize(res: dict) -> list[str]:
    st = res["setting"]
    gb = st["min_tokens"] * st["models"]["7B"]["kv_kib_per_token"] * 1024 * (1 + st["watermark"]) / 1e9
    L = ["1. **Resizing cost model (the watermark miss).** The paper gives only two GPU measurements: 32 -> 16 GB "
         "takes 0.3 s and 32 -> 64 GB takes 1.9 s, and describes the cost as re-allocating blocks and copying the "
         f"old KV (VII-B). We charge a time proportional to the new pool size: {st['resize_shrink_s_per_gb']:.4f} "
         f"s/GB to shrink and {st['resize_grow_s_per_gb']:.4f} s/GB to grow, which fits both points exactly. A 7B "
         f"instance's pool is at least L_min x KV x (1 + w) = {st['min_tokens']:,} tokens x "
         f"{st['models']['7B']['kv_kib_per_token']:.0f} KiB x {1 + st['watermark']:.2f} = {gb:.2f} GB, whose grow "
         f"costs {gb * st['resize_grow_s_per_gb']:.3f} s."]
    wm = res.get("watermark", {})
    if "0" in wm and "0.25" in wm:
        a, b = wm["0"], wm["0.25"]
        need = [(PAPER_WATERMARK[w] * r["instance_lifetime_s"] - r["resize_seconds"]) / r["resizes"]
                for w, r in (("0", a), ("0.25", b))]
        # GPU instances only: all resizes are theirs, so their lifetimes are resize seconds / their share
        need_gpu = [(PAPER_WATERMARK[w] / r["resizing_share_gpu"] - 1) * r["resize_seconds"] / r["resizes"]
                    for w, r in (("0", a), ("0.25", b))]
        L[0] += (f" A resize took {a['resize_seconds'] / a['resizes']:.3f} s on average at w = 0 "
                 f"({a['resizes']:,} resizes, 64 x 7B) and {b['resize_seconds'] / b['resizes']:.3f} s at w = 25 % "
                 f"({b['resizes']:,}). The paper states no fixed per-resize cost, and its two points do not support "
                 "one: fitting `a + b x new size`, or the spec's `a + b x allocated + c x copied`, gives a negative "
                 "intercept or a negative copy cost. A fixed cost also could not explain both figures: with our "
                 f"resize counts, matching 11.3 % would need {need[0]:.2f} s more per resize and matching 1.4 % "
                 f"{need[1]:.2f} s over all instances ({need_gpu[0]:.2f} s and {need_gpu[1]:.2f} s over GPU "
                 "instances only): no single fixed cost fits both. So we did not add one. The resizing share is also given over GPU "
                 "instances only (`resizing_share_gpu`), since CPU instances hold the artefact's fixed pool and "
                 "never resize.")
    return L


def _migration(res: dict) -> list[str]:
    r = res.get("watermark", {}).get("0.25")
    tail = "" if r is None else (f" At w = 25 % ours is {pct(r['underestimation_eviction_rate'])} % (inside the paper's "
                                 f"0-0.3 %); all migrations {pct(r['migration_rate'])} %.")
    return ["2. **Migration rate.** The paper's 0-0.3 % counts only evictions caused by KV underestimation. Our "
            "`underestimation_eviction_rate` is that figure. `migration_rate` also counts requests moved by "
            "proactive preemption, which the paper does not report." + tail]


def _shadow(res: dict) -> list[str]:
    return ["3. **Shadow validation.** The paper replays the node's future schedule virtually. By default we bound it "
            "analytically (policies.Slinfer.shadow):",
            "   - r's prefill waits for the running iteration, the node's pending prefills, and the cold start or "
            "resize;",
            "   - every decoding request on the node must still meet its next deadline after that delay plus one "
            "decode of its instance;",
            "   - the sum of one decode per instance stays within TPOT_SLO.", "",
            f"   All estimates are x{res['setting']['margin']:g}. The bound is conservative for requests that are less "
            "urgent than r, optimistic for a more urgent request that runs before r's prefill, and ignores the time "
            "of a resize triggered by the admission itself. The paper's reading (a virtual replay) is the switch "
            "`shadow: \"replay\"`; item 12."]


def _prefill(res: dict) -> list[str]:
    return ["4. **Prefill handling.** The table only measures batch-1 prefills, so each prefill runs alone (one "
            "request per prefill iteration, no chunking). Decode joins the instance's continuous batch. The "
            "baselines use the same rule inside an instance. vLLM would batch prefills, so the GPU baselines are "
            "slightly pessimistic at bursts."]


def _baselines(res: dict) -> list[str]:
    st = res["setting"]
    sl = res.get("slots", {})
    tail = ""
    if "32" in sl.get("7B", {}) and "128" in sl.get("3B", {}) and _run(res, "3B", "128", "slinfer"):
        tail = (f"; it used {sl['7B']['32']['avg_gpu_nodes']:.2f} GPUs at 32 x 7B (paper 2.0) and put SLINFER's "
                f"gain over sllm+c+s at 128 x 3B at "
                f"{met_ratio(_run(res, '3B', '128', 'slinfer'), sl['3B']['128']):.2f}")
    return ["5. **The baselines' compute.** sllm and sllm+c hold a whole node per instance. sllm+c+s gives each "
            f"instance a fixed half node ({st['gpu_memory_gb'] / 2:g} GB of GPU memory) and, by default, half of the "
            "node's compute: the paper says each instance \"is allocated only half of the per-node resources\" and "
            "attributes sllm+c+s's weakness to \"fixed resource partitioning\" (IX-B, IX-F). So each slot computes "
            "on its own half: its iterations take twice the table's time, the two slots run in parallel, and an "
            "idle or cold-starting slot's half is wasted (its energy counts half the node as busy). Twice the time "
            "is the linear assumption for half the cores or half the GPU; decode on a CPU is memory-bound, so half "
            "the cores may do better than half. The first build alternated the two slots' iterations on the whole "
            "node (`slot_compute: \"shared\"`), which gives a lone busy slot the full node and no partitioning loss"
            + tail + ". The half-node-slots table shows both readings."]


def _nodes(res: dict) -> list[str]:
    r = _run(res, "7B", "128", "slinfer")
    if r is None:
        return []
    return [f"6. **Nodes in use.** A node counts as in use while it hosts at least one instance, including while "
            f"loading or in keep-alive. We divide by the whole run, from the first arrival until the last request "
            f"drains ({r['run_length_s']:,.0f} s at 128 x 7B under SLINFER). The artefact divides the gateway's "
            f"usage by the 30-minute test length, which gives {100 * (r['run_length_s'] / TRACE_S - 1):.1f} % higher "
            "averages than ours for that run."]


def _cpu_memory(res: dict) -> list[str]:
    st = res["setting"]
    return [f"7. **CPU memory.** The paper does not report it. We use the catalogue's assumed "
            f"{st['cpu_memory_gb']:g} GB per CPU node, and each CPU instance holds the artefact's fixed KV pool "
            f"({st['models']['7B']['cpu_kv_gb']:g} GB; {st['models']['3B']['cpu_kv_gb']:g} GB for 3B). CPU nodes are "
            "compute-bound long before memory binds."]


def _cold_start(res: dict) -> list[str]:
    m = res["setting"]["models"]
    return [f"8. **Cold start.** Cold start scales with weight bytes: {m['7B']['cold_start_s']:.1f} s for the 7B "
            f"model's {m['7B']['weights_gb']:g} GB (the paper: about 1 second for a 7B model), "
            f"{m['13B']['cold_start_s']:.1f} s for 13B. The artefact uses ServerlessLLM's loader, whose measured "
            "times we do not have."]


def _big_model(res: dict) -> list[str]:
    st, g = res["setting"], ratio(res, "13B", "128", "sllm")
    r = _run(res, "13B", "128", "slinfer")
    if g is None or r is None:
        return []
    m = st["models"]["13B"]
    dec = m["cpu_decode_b1_ms"] * st["margin"]
    kv = st["min_tokens"] * m["kv_kib_per_token"] * 1024 * (1 + st["watermark"]) / 1e9
    fit = int(st["gpu_memory_gb"] // (m["weights_gb"] + kv))
    rd = res.get("readings", {}).get("13B", {}).get("128")
    lo, hi = GAIN_TARGET["sllm"]
    state = "a miss we have not resolved" if not lo <= g <= hi else "met"
    L = [f"9. **13B vs sllm ({state}).** Our ratio is {g:.2f}, while the paper reports 1.86-2.54 across sizes (it does "
         "not say which size gives which end). At 128 x 13B every system saturates the nodes, and our SLINFER still "
         f"drops {r['dropped']:,} requests (SLO attainment {pct(r['slo_attainment'])} %). Two mechanisms cap "
         "SLINFER's 13B capacity here:",
         f"   - a 13B decode on the CPU table takes {m['cpu_decode_b1_ms']:.0f} ms at batch 1 (512-token context), "
         f"or {dec:.0f} ms with the x{st['margin']:g} margin, so case 3 of shadow validation allows "
         f"{_count(int(1000 * st['tpot_slo_s'] // dec))} decoding 13B instance per CPU node (two would need "
         f"{2 * dec:.0f} ms against the {1000 * st['tpot_slo_s']:.0f} ms TPOT SLO);",
         f"   - on a GPU, a 13B instance needs {m['weights_gb']:g} GB of weights plus at least {kv:.1f} GB of KV "
         f"(L_min x {m['kv_kib_per_token']:.0f} KiB x {1 + st['watermark']:.2f}), so only {_count(fit)} fit in the "
         f"{st['gpu_memory_gb']:g} GB node.", ""]
    L.append("   We tested two of the candidate causes: the replayed shadow validation (item 12)"
             + (f" gives {ratio(res, '13B', '128', 'sllm', rd):.2f}" if rd else " (not run)")
             + "; the static half-node slots change only the sllm+c+s baseline. The artefact's 0.95 SLO factor "
             "(item 10) is untested. " + ("The miss stands." if state != "met" else ""))
    return L


def _metrics(res: dict) -> list[str]:
    return [f"10. **Metrics.** SLO-met means TTFT <= TTFT_SLO(L) (plus the cold-start grace, as the paper's IX-A) "
            f"and average TPOT <= {res['setting']['tpot_slo_s']:g} s. Dropped requests count as misses. Per-token "
            "deadline compliance (Eq. 1 semantics) is reported beside it. The artefact multiplies both SLOs by 0.95 "
            "internally; we use the paper's values."]


def _small_model(res: dict) -> list[str]:
    low = [n for n in ("32", "64") if _run(res, "3B", n, "slinfer") and _run(res, "3B", n, "sllm+c")
           and _run(res, "3B", n, "slinfer")["slo_attainment"] < _run(res, "3B", n, "sllm+c")["slo_attainment"]]
    if not low:
        return ["11. **3B at 32 and 64 models:** SLINFER's SLO attainment is not below sllm+c's in this run."]
    r = _run(res, "3B", low[0], "slinfer")
    m = r["slo_misses"]
    miss = r["requests"] - r["slo_met"]
    return [f"11. **3B at {_and(low)} models: SLINFER's SLO attainment is below sllm+c's, against the paper** "
            f"({_and([pct(_run(res, '3B', n, 'slinfer')['slo_attainment']) + ' vs ' + pct(_run(res, '3B', n, 'sllm+c')['slo_attainment']) + ' %' for n in low])}), "
            f"although SLINFER uses far fewer GPUs ({_and([format(_run(res, '3B', n, 'slinfer')['avg_gpu_nodes'], '.2f') for n in low])} "
            f"against {_and([format(_run(res, '3B', n, 'sllm+c')['avg_gpu_nodes'], '.2f') for n in low])}). "
            f"The {miss:,} misses at {low[0]} x 3B, by cause:",
            f"    - {m['dropped']:,} dropped, {m['unfinished']:,} unfinished and {m['ttft']:,} TTFT misses;",
            f"    - {m['tpot_only']:,} fail only the *average-TPOT* test, and {m['tpot_only_tokens_on_time']:,} of "
            "these had every token by its Eq. 1 deadline;",
            f"    - {m['migrated']:,} of all the misses were migrated at least once.", "",
            "    The headroom scheduler spends a request's early slack (TTFT slack, tokens ahead of schedule) on other "
            "requests' prefills. That is allowed under the paper's per-token deadlines, but it stretches the gap "
            "between tokens of a request with few output tokens. The column \"SLO % per-token\" (every token by its "
            "deadline, the first included) shows the same runs under Eq. 1 semantics "
            f"({_and([pct(_run(res, '3B', n, 'slinfer')['slo_attainment_per_token']) + ' %' for n in low])} here). "
            "Which definition the paper's \"SLO-met\" uses is not stated (spec 2.16). We keep average TPOT as the "
            "headline figure and did not change the scheduler."]


def _readings(res: dict) -> list[str]:
    rd = res.get("readings", {})
    L = ["12. **Readings of the paper tried for the misses.** Each is a switch; the tables \"Reading of the paper\" "
         "above put it beside the default, on the same workload:"]
    small, b = rd.get("7B", {}).get("32"), _run(res, "7B", "32", "slinfer")
    big, bb = rd.get("13B", {}).get("128"), _run(res, "13B", "128", "slinfer")
    if small and b and big and bb:
        drops = [f"{size} {pct(rd[size]['128']['slo_attainment_per_token'])} % vs "
                 f"{pct(_run(res, size, '128', 'slinfer')['slo_attainment_per_token'])} %" for size in SIZES
                 if "128" in rd.get(size, {}) and _run(res, size, "128", "slinfer")]
        L.append("    - *Shadow validation as a virtual replay* (`shadow: \"replay\"`, simulations/engine/serverless/"
                 "shadow.py): the node's future is replayed with the executor's own rules (least headroom first, a "
                 "prefill alone, a decode of the instance's batch, with the margin) until r's first token plus one "
                 f"TPOT. At 32 x 7B it uses {small['avg_gpu_nodes']:.2f} GPUs (bound {b['avg_gpu_nodes']:.2f}), SLO "
                 f"{pct(small['slo_attainment'])} % (bound {pct(b['slo_attainment'])} %), per-token "
                 f"{pct(small['slo_attainment_per_token'])} % (bound {pct(b['slo_attainment_per_token'])} %): the "
                 "real schedule diverges from the replay (later arrivals take priority). At 128 x 13B it gives "
                 f"{big['slo_met']:,} vs {bb['slo_met']:,} SLO-met ({ratio(res, '13B', '128', 'sllm', big):.2f} vs "
                 f"sllm). Per-token compliance at 128 models, replay vs bound: {_and(drops)}. Not the default: it "
                 "does not close a miss.")
    t3 = [n for n in MODELS if _run(res, "7B", n, "sllm+c+s") and t3_ok("sllm+c+s", n, _run(res, "7B", n, "sllm+c+s"))]
    g3 = ratio(res, "3B", "128", "sllm+c+s")
    L.append("    - *sllm+c+s's half-node slots as a static partition* (`slot_compute: \"half\"`): the default (item "
             f"5). With it {len(t3)} of Table III's 3 sllm+c+s cells are within tolerance"
             + (f" and the 3B gain over sllm+c+s is {g3:.2f}." if g3 is not None else "."))
    s13, b13 = _run(res, "13B", "128", "slinfer"), _run(res, "13B", "128", "sllm")
    if s13 and b13:
        L.append("    - *SLO definition* (average TPOT vs every token by its deadline): both are reported; at 128 x 13B "
                 f"per-token SLINFER {pct(s13['slo_attainment_per_token'])} % vs sllm "
                 f"{pct(b13['slo_attainment_per_token'])} %: "
                 f"{s13['slo_attainment_per_token'] / b13['slo_attainment_per_token']:.2f}.")
    return L + [""]


def _sllm_c(res: dict) -> list[str]:
    g = gains(res, "sllm+c")
    if not g:
        return []
    lo, hi = (float(x) for x in PAPER_GAIN["sllm+c"])
    ok, bad = _inside(g, lo, hi)
    if not bad:
        return [f"13. **128 models, SLINFER / sllm+c:** inside the paper's range for every size ({_and(ok)}).", ""]
    rows = [(size, _run(res, size, "128", "sllm+c"), _run(res, size, "128", "sllm")) for size, _ in g]
    return [f"13. **128 models, SLINFER / sllm+c (a miss, cause open).** Ours {_and(bad)} lie outside the paper's "
            f"{PAPER_GAIN['sllm+c'][0]}-{PAPER_GAIN['sllm+c'][1]}: our sllm+c meets the SLO for "
            + _and([f"{pct(c['slo_attainment'])} %" for _, c, _ in rows]) + " of the requests at 3B / 7B / 13B, "
            + _and([f"{met_ratio(c, s):.2f}x" for _, c, s in rows]) + " sllm's SLO-met. The paper gives no figure of sllm+c's own at 128 models, so whether our sllm+c is "
            "stronger or our SLINFER weaker than the paper's is not known. Untested candidates: the prefill rule "
            "(item 4) and the CPU tables' extension beyond their measured batches. Open."]


def executor(res: dict) -> list[str]:
    st = res["setting"]
    return ["## How the executor works", "",
            "The code is in simulations/engine/serverless/. It is Django-free and separate from the fleet loop.", "",
            "- **Nodes:** each CPU or GPU node is one time-multiplexed executor. For every iteration it picks the "
            "instance holding the request with the least headroom (Eq. 1).",
            "- **Performance model:** prefill is interpolated linearly in prompt length; decode is bilinear in "
            "batch size and average context, over the authors' tables.",
            f"- **Memory:** M_require = C x max(sum(I + max(O, mean O)), {st['min_tokens']:,}). The pool grows early "
            "to M_require x (1 + w), falling back to M_require when that is refused. It shrinks lazily, only when "
            "M_recommend x (1 + w) < M_current.",
            "- **No-OOM invariant:** hazard-aware budgets (optimistic budget, pessimistic tracking, reservation "
            "station) keep memory within capacity. `actual <= pessimistic <= capacity` is asserted after every "
            "memory operation.",
            "- **Underestimation:** the instance grows its pool; if the grow is refused, it evicts the request with "
            "the longest headroom.",
            "- **Consolidation:** proactive consolidation preempts smaller-batch neighbours, smallest first, when "
            "the victims can still make their SLO. Reactive consolidation routes to the largest batch, CPU first.",
            f"- **Life cycle:** cold start with grace, keep-alive {st['keep_alive_s']:g} s, and a drop once queueing "
            "exceeds the TTFT SLO.", "",
            "A single scenario runs with `manage.py serverless SPEC.json --json` (example: "
            "fixtures/serverless/slinfer_32x7b.json)."]
