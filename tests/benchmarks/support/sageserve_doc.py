"""docs/reproduction.md's prose about the two presets, computed from docs/results/sageserve_fair.json (the blocks
``presets-in-short`` and ``saving-sources``; written by tests/benchmarks/reproduce_fair.py --write-doc)."""

from __future__ import annotations

import json
from pathlib import Path


def _stats(values) -> dict | None:
    vals = [float(v) for v in values if v is not None]
    return {"min": min(vals), "mean": sum(vals) / len(vals), "max": max(vals), "n": len(vals)} if vals else None


def _rng(st: dict | None, bold: bool = False) -> str:
    if not st:
        return "-"
    txt = f"{st['mean']:.1f} % [{st['min']:.1f}, {st['max']:.1f}]"
    return f"**{txt}**" if bold else txt


class Fair:
    """One results file of reproduce_fair.py, read for the prose."""

    def __init__(self, source: Path | dict):
        self.data = source if isinstance(source, dict) else json.loads(Path(source).read_text())

    def row(self, case: str, key: str) -> dict:
        return next(r for r in self.data["cases"][case]["fair"]["rows"] if r["key"] == key)

    def saved(self, case: str, key: str = "lt-ua", tuned: bool = False) -> dict | None:
        r = self.row(case, key)
        return (r["vs_tuned"] if tuned else r["vs_untuned"]).get("saved_gpu_hours_pct")

    def tuned_point(self, case: str, key: str = "lt-ua") -> str:
        t = self.row(case, key)["vs_tuned"]
        p = t.get("point") or {}
        if not p or t.get("baseline") == self.data["cases"][case]["fair"]["baseline"]:
            return "no cheaper Reactive point keeps LT-UA's attainment"
        return f"Reactive at {100 * p['scale_out_above']:.0f} % / {100 * p['scale_in_below']:.0f} %"

    def recount(self, case: str, **kw) -> dict | None:
        """LT-UA's saving over the untuned Reactive, per seed, with reproduce_fair's other accountings."""
        from tests.benchmarks.reproduce_fair import _gpu_h

        v = self.data["cases"][case]
        vals = []
        for seed in v["seeds"]:
            a, b = v["runs"].get(f"lt-ua+s{seed}"), v["runs"].get(f"reactive-unified+s{seed}")
            if a and b:
                ga, gb = _gpu_h(a, **kw), _gpu_h(b, **kw)
                vals.append(100.0 * (gb - ga) / gb)
        return _stats(vals)

    def total(self, case: str, key: str, field: str) -> float:
        v = self.data["cases"][case]
        vals = [v["runs"][f"{key}+s{s}"]["totals"][field] for s in v["seeds"] if f"{key}+s{s}" in v["runs"]]
        return sum(vals) / len(vals)

    def att(self, case: str, key: str, tier: str) -> float:
        return 100.0 * self.row(case, key)["attainment"][tier]["mean"]


def presets_in_short(path: Path | dict) -> str:
    f = Fair(path)
    n = {c: f.saved(c)["n"] for c in ("code-1x", "code-2x", "code-llama2")}
    w1, w2 = f.recount("code-1x", waste=False), f.recount("code-2x", waste=False)
    w2n = f.recount("code-2x-noreserve", waste=False)
    r1, nr1 = f.saved("code-1x"), f.saved("code-1x-noreserve")
    lt_move = abs(f.row("code-1x", "lt-ua")["gpu_hours"]["mean"] / f.row("code-1x-noreserve", "lt-ua")["gpu_hours"]["mean"] - 1)
    tl = f.data["cases"]["text-llama2"]
    per_seed = []
    for s in tl["seeds"]:
        a, b = tl["runs"][f"lt-ua+s{s}"]["totals"]["gpu_hours"], tl["runs"][f"reactive-unified+s{s}"]["totals"]["gpu_hours"]
        per_seed.append(f"{abs(100 * (a / b - 1)):.1f} % {'more' if a > b else 'less'}")
    tl_saved = f.saved("text-llama2")
    return "\n".join([
        f"- Authors'-code preset, full: LT-UA saves {_rng(f.saved('code-1x'), True)} (n={n['code-1x']}) of GPU-hours "
        f"against the untuned Reactive on the 1x day, {_rng(f.saved('code-2x'), True)} (n={n['code-2x']}) on the 2x day "
        f"and {_rng(f.saved('code-llama2'), True)} (n={n['code-llama2']}) on the Llama-2-only day. Against the "
        f"equal-SLO tuned Reactive: {_rng(f.saved('code-1x', tuned=True))} at 1x ({f.tuned_point('code-1x')}), "
        f"{_rng(f.saved('code-2x', tuned=True), True)} at 2x ({f.tuned_point('code-2x')}) and "
        f"{_rng(f.saved('code-llama2', tuned=True), True)} on the Llama-2-only day ({f.tuned_point('code-llama2')}). "
        "The audit's partial preset measured ~15 % (1x) and ~20 % (2x). What accounts for the difference, from the "
        "same runs re-counted (the accounting table) and the no-reservation cases: the provisioning waste counted "
        "into GPU-hours for Reactive's thousands of instant scale-outs is the largest part (a reading the authors' "
        "code does not support for Fig. 11: their Fig. 11 count leaves the waste out and plots it as a figure of its "
        f"own; see \"Fig. 11 like-for-like\") (1x without it: {_rng(w1, True)}, the audit's ~15 %; 2x: "
        f"{_rng(w2)} without it, {_rng(w2n)} without it and without the reservation, the audit's ~20 %); the output "
        f"reservation adds {r1['mean'] - nr1['mean']:.1f} points at 1x ({nr1['mean']:.1f} % without it, "
        f"{r1['mean']:.1f} % with it) because it makes Reactive, which scales on the signal, hold more instances "
        f"while LT-UA's hourly plan hardly moves (its GPU-hours change by {100 * lt_move:.1f} %).",
        f"- **Paper-text preset**: LT-UA saves {_rng(f.saved('text-1x'), True)} against the untuned Reactive on the 1x "
        f"day and {_rng(f.saved('text-1x', tuned=True), True)} against the equal-SLO tuned one "
        f"({f.tuned_point('text-1x')}: our memory signal is an overload alarm, and a Reactive that reaches LT's "
        f"latency with it is expensive); on the 2x day {_rng(f.saved('text-2x'), True)} and "
        f"{_rng(f.saved('text-2x', tuned=True), True)} ({f.tuned_point('text-2x')}). On the paper-text Llama-2-only "
        f"day LT-UA costs **{-tl_saved['mean']:.1f} % more** than Reactive on average (per seed "
        f"{', '.join(per_seed)}) with IW-F {f.att('text-llama2', 'lt-ua', 'IW-F'):.1f} % (theta leaves no headroom "
        "on some seeds), and no Reactive variant is needed to beat it.",
    ])


def saving_sources(path: Path | dict) -> str:
    f = Fair(path)
    ab = "code-1x-noreserve-ablate"
    ahead = f.row(ab, "lt-ua.ahead")
    lt3 = f.data["cases"]["code-1x"]["runs"]["reactive-unified+s2025"]["endpoints"]
    small = [e for e in lt3 if str(e["model"]).startswith("llama3")]
    floor_extra = len(small) * 2 * 24 * (8 - 2)  # min 2 instances a day per Llama-3.x endpoint, 8 vs 2 GPUs
    r_res, r_nores = (f.row(c, "reactive-unified")["gpu_hours"]["mean"] for c in ("code-1x", "code-1x-noreserve"))
    return "\n".join([
        "- **Provisioning accounting.** With no cooldown and instant instances the authors'-code Reactive scales out "
        f"{f.total('code-1x', 'reactive-unified', 'scale_out_events'):,.0f} times a day on average; the nominal "
        f"start-up of each, added afterwards, is {f.total('code-1x', 'reactive-unified', 'provisioning_gpu_hours'):,.0f} "
        f"GPU-hours. Without it the 1x saving is {_rng(f.recount('code-1x-noreserve', waste=False))} without the output "
        f"reservation and {_rng(f.recount('code-1x', waste=False), True)} with it (the accounting table), about what "
        "the audit's partial preset (KV size + thresholds only) measured (~15 %). So most of the full preset's extra "
        "points over the audit come from charging Reactive's churn, the rest from the reservation. The authors' own "
        "Fig. 11 does not charge it (section \"Fig. 11 like-for-like\": their count is the 15-minute maximum of the "
        "instances deployed, waste plotted separately), so the \"without provisioning waste\" column is the closer one.",
        f"- **8 GPUs for every model** puts {floor_extra:,} extra floor GPU-hours on both sides ({len(small)} Llama-3.x "
        "endpoints at their floor of 2 all day); it lowers the percentage (1x: "
        f"{f.recount('code-1x', small_gpus=2)['mean']:.1f} % with Llama-3.x on 2 GPUs). It does not change which "
        "strategy wins.",
        "- **The hindsight forecast buys LT-UA its latency, not its saving**: with our ahead-of-time ARIMA instead "
        f"(`lt-ua.ahead`, seed 2025, no output reservation) LT-UA saves {ahead['vs_untuned']['saved_gpu_hours_pct']['mean']:.1f} % "
        f"but IW-F attainment falls to {f.att(ab, 'lt-ua.ahead', 'IW-F'):.1f} % (IW-N {f.att(ab, 'lt-ua.ahead', 'IW-N'):.1f} %). "
        "The authors' in-sample forecast is what lets LT run lean and keep the SLO.",
        "- **NIW feed and escalation** barely move GPU-hours (Reactive "
        f"{f.row(ab, 'reactive-unified.niw-text')['gpu_hours']['mean']:,.0f} with the paper's feed vs "
        f"{f.row(ab, 'reactive-unified')['gpu_hours']['mean']:,.0f}; LT-UA {f.row(ab, 'lt-ua.niw-text')['gpu_hours']['mean']:,.0f} "
        f"vs {f.row(ab, 'lt-ua')['gpu_hours']['mean']:,.0f}); LT-UA's NIW attainment at 1x is "
        f"{f.att(ab, 'lt-ua', 'NIW'):.1f} % / {f.att(ab, 'lt-ua.niw-text', 'NIW'):.1f} % (either rule, seed 2025) and "
        f"{f.att('code-1x', 'lt-ua', 'NIW'):.1f} % with the full preset. At 2x and on the Llama-2-only day it falls to "
        f"{f.att('code-2x', 'lt-ua', 'NIW'):.1f} % and {f.att('code-llama2', 'lt-ua', 'NIW'):.1f} % (the fleet LT sizes "
        "for IW leaves NIW little room; without escalation nothing forces it out), so those two savings are not "
        "like-for-like on NIW.",
        "- **The output reservation** (now in the preset): the signal counts each admitted request's prompt + whole "
        "output, so Reactive, which scales on it, holds more instances; LT-UA follows its hourly plan and moves little. "
        f"At 1x Reactive costs {r_res - r_nores:,.0f} GPU-hours ({100 * (r_res / r_nores - 1):+.1f} %) more than without "
        f"it and LT-UA's saving goes from {f.saved('code-1x-noreserve')['mean']:.1f} % to "
        f"{_rng(f.saved('code-1x'), True)} (`code-1x` vs `code-1x-noreserve`); see the other days' rows for 2x and "
        "Llama-2 only.",
    ])


# ------------------------------------------------------------------ the earlier single-seed sections (sageserve.json)
def _scen(source: Path | dict, name: str) -> dict:
    data = source if isinstance(source, dict) else json.loads(Path(source).read_text())
    return data["scenarios"][name]["summaries"]


def _model_ih(summary: dict, prefix: str) -> float:
    return sum(e["instance_hours"] for e in summary["endpoints"] if str(e["model"]).startswith(prefix)) / (
        1 if prefix != "llama3" else 2)


def main_day_models(source: Path | dict) -> str:
    s = _scen(source, "sageserve_day")
    lt = ("lt-i", "lt-u", "lt-ua")
    bl = {k: _model_ih(s[k], "bloom") for k in ("reactive-unified", *lt)}
    ll = {k: _model_ih(s[k], "llama2") for k in ("reactive-unified", *lt)}
    small = sorted({round(sum(e["instance_hours"] for e in s[k]["endpoints"] if str(e["model"]).startswith(m)), 1)
                    for k in ("reactive-unified", *lt) for m in ("llama3.1", "llama3.2")})
    ch = [100 * (bl[k] / bl["reactive-unified"] - 1) for k in lt]
    return (f"Instance-hours per model (H100 day): Bloom {bl['reactive-unified']:.1f} (Reactive) -> "
            f"{' / '.join(f'{bl[k]:.1f}' for k in lt)} (LT-I / LT-U / LT-UA, {max(ch):.1f} to {min(ch):.1f} %); "
            f"Llama-2 {ll['reactive-unified']:.1f} -> {' / '.join(f'{ll[k]:.1f}' for k in lt)}; Llama-3.1 and "
            f"Llama-3.2 {' / '.join(f'{x:.1f}' for x in small)} for every strategy (2 instances x 3 regions x 24 h: "
            "they never leave the floor, as in the paper's Fig. 8).")


def a100_reading(source: Path | dict) -> str:
    s = _scen(source, "sageserve_day_a100")
    r = s["reactive-unified"]

    def more(k):
        return 100 * (s[k]["totals"]["gpu_hours"] / r["totals"]["gpu_hours"] - 1)

    def pts(k):
        return 100 * (s[k]["tiers"]["IW-F"]["attainment"] - r["tiers"]["IW-F"]["attainment"])

    return (f"Paper: LT-UA uses 28.2 % fewer GPU-hours than Reactive \"while maintaining tail latency\". Ours: LT-UA "
            f"uses {more('lt-ua'):.1f} % **more** GPU-hours and buys {pts('lt-ua'):.1f} points of IW-F attainment "
            f"with it; LT-I {more('lt-i'):.0f} % more for {pts('lt-i'):.1f} points.")


def llama2_churn(source: Path | dict) -> str:
    r = _scen(source, "sageserve_day_llama2")["reactive-unified"]["totals"]
    b = [v["totals"] for v in _scen(source, "sageserve_day_llama2+beta100").values()]
    so, w = [t["scale_out_events"] for t in b], [t["provisioning_gpu_hours"] for t in b]
    return ("So on our engine the paper's LT saving is not reproduced for Llama-2; what is reproduced is the far "
            f"lower churn of the LT runs that keep the SLO (beta = 100 %: scale-outs {r['scale_out_events']} -> "
            f"{min(so)}-{max(so)}, waste {r['provisioning_gpu_hours']:.1f} -> {min(w):.1f}-{max(w):.1f} GPU-hours).")


def main_day_side_by_side(source: Path | dict) -> str:
    """The H100 day's findings beside the paper's (the paper's column typed from the paper, ours computed)."""
    data = source if isinstance(source, dict) else json.loads(Path(source).read_text())
    sc = data["scenarios"]["sageserve_day"]
    s, l2 = sc["summaries"], sc["llama2_instance_hours"]
    rows = {r["key"]: r for r in sc["aggregate"]["rows"]}
    lt = ("lt-i", "lt-u", "lt-ua")
    names = {"reactive-unified": "Reactive", "lt-i": "LT-I", "lt-u": "LT-U", "lt-ua": "LT-UA"}
    ih = {k: v["totals"]["instance_hours"] for k, v in s.items()}
    gh = {k: v["totals"]["gpu_hours"] for k, v in s.items()}
    iwf = {k: v["tiers"]["IW-F"] for k, v in s.items()}
    r = "reactive-unified"
    order = " < ".join(names[k] for k in sorted((r, *lt), key=gh.get))
    bl = {k: _model_ih(s[k], "bloom") for k in (r, *lt)}
    bch = [100 * (bl[k] / bl[r] - 1) for k in lt]
    waste = [s[k]["totals"]["provisioning_gpu_hours"] for k in lt]
    outs = [s[k]["totals"]["scale_out_events"] for k in lt]
    lt_att = [100 * iwf[k]["attainment"] for k in lt]
    lt_p95 = [iwf[k]["ttft_p95"] for k in lt]
    ua = rows["lt-ua"]
    ex = sc["aggregate"]["projection"]["paper_own_example"]
    return "\n".join([
        "| finding | paper | ours (H100 day) | agrees? |", "|---|---|---|---|",
        f"| Unified vs Siloed instance-hours (Fig. 8) | Unified 34.5 % fewer | Unified **{100 * (1 - ih[r] / ih['reactive-siloed']):.1f} %** "
        f"fewer ({ih[r]:.1f} vs {ih['reactive-siloed']:.1f}); the 2-instance floor doubles in Siloed (IW + NIW pools) for "
        "the small models, as the paper notes | direction yes, size larger |",
        f"| Unified vs Siloed latency (Table 1) | p95 TTFT within 12 % | p95 TTFT IW-F {iwf[r]['ttft_p95']:.2f} vs "
        f"{iwf['reactive-siloed']['ttft_p95']:.2f} s, IW-F attainment {100 * iwf[r]['attainment']:.1f} vs "
        f"{100 * iwf['reactive-siloed']['attainment']:.1f} % (Siloed's doubled floor buys it a little latency) | roughly |",
        "| LT vs Reactive, Llama-2 instance-hours (Fig. 11, Jul 2025) | Reactive 362.25, LT-I 274.5 (-24.2 %), LT-U 291 "
        f"(-19.7 %), LT-UA 277.5 (-23.4 %) | Reactive {l2[r]:.1f}, "
        + ", ".join(f"{names[k]} {l2[k]:.1f} ({100 * (l2[k] / l2[r] - 1):+.1f} %)" for k in lt) + " | **no** (see why) |",
        "| same, Nov 2024 trace | 302, 227, 248, 233 (-24.8 / -17.9 / -22.8 %) | (one synthetic day only) | - |",
        "| LT vs Reactive, all models, GPU-hours | \"up to 25 %\" | "
        + ", ".join(f"{names[k]} {100 * (gh[k] / gh[r] - 1):+.1f} %" for k in lt)
        + f" (Bloom alone {max(bch):.1f} to {min(bch):.1f} % instance-hours) | direction yes, size much smaller |",
        f"| ordering LT-I < LT-UA < LT-U < Reactive (Llama-2) | yes | all models: {order} | partly |",
        "| IW SLO kept by LT (Fig. 13a) | LT-U/LT-UA keep latency; LT-I slightly worse | "
        + ("all LT better than Reactive: " if min(lt_att) > 100 * iwf[r]["attainment"] else "")
        + f"IW-F attainment {min(lt_att):.1f}-{max(lt_att):.1f} % vs {100 * iwf[r]['attainment']:.1f} %, p95 TTFT "
        f"{min(lt_p95):.2f}-{max(lt_p95):.2f} s vs {iwf[r]['ttft_p95']:.2f} s (LT-I, LT-U, LT-UA: "
        + ", ".join(f"{a:.1f} %" for a in lt_att) + ") | "
        + ("yes (LT-I is not the worst here)" if lt_att[0] > min(lt_att) else "yes") + " |",
        f"| scaling waste (Fig. 13b) | ~70 % less (abstract: 80 %) | **{100 * (1 - max(waste) / s[r]['totals']['provisioning_gpu_hours']):.0f} % "
        f"less** at least ({s[r]['totals']['provisioning_gpu_hours']:.1f} -> {min(waste):.1f}-{max(waste):.1f} GPU-h; "
        f"{s[r]['totals']['scale_out_events']} scale-outs -> {min(outs)}-{max(outs)}) | direction yes, size larger |",
        f"| $ per week | \"$98.32 x 85 x 3 x 4 x 7 = ~$0.6M\" (the product is ${ex['value_usd']:,.0f}) | LT-UA saves "
        f"${ua['saved_usd_per_day']:,.0f}/day = **${ua['saved_usd_per_week'] / 1e3:.1f}k/week, "
        f"${ua['saved_usd_per_month'] / 1e3:.1f}k/month** for this 12-endpoint fleet (bottom-up; the paper-style formula "
        f"gives ${ua['paper_style_usd_per_week'] / 1e3:.1f}k/week) | scale differs (our fleet is ~10x smaller) |",
    ])


def _pct_change(a: float, b: float) -> float:
    return 100 * (a / b - 1)


def ratio_table(source: Path | dict) -> str:
    """IW:NIW 9:1 / 1:1 and the 8x bursts: ours beside the paper's (sec. 7.2.7, Fig. 16a)."""
    data = source if isinstance(source, dict) else json.loads(Path(source).read_text())
    sc = data["scenarios"]
    out = ["| finding | paper | ours | agrees? |", "|---|---|---|---|"]
    cut = {}
    for name, ratio, paper in (("sageserve_day_iw9", "9:1", "-26.3"), ("sageserve_day_iw1", "1:1", "-22")):
        s = sc[name]["summaries"]
        r, ua, li = s["reactive-unified"], s["lt-ua"], s["lt-i"]
        cut[ratio] = _pct_change(ua["totals"]["gpu_hours"], r["totals"]["gpu_hours"])
        out.append(f"| IW:NIW {ratio}, LT-UA vs Reactive | {paper} % GPU-hours | **{cut[ratio]:+.1f} %** GPU-hours (LT-I "
                   f"{_pct_change(li['totals']['gpu_hours'], r['totals']['gpu_hours']):+.1f} %), IW-F attainment "
                   f"{100 * ua['tiers']['IW-F']['attainment']:.1f} % vs {100 * r['tiers']['IW-F']['attainment']:.1f} % | "
                   + ("direction yes, size smaller" if cut[ratio] < 0 else "no") + " |")
    rev = -cut["1:1"] > -cut["9:1"]
    out.append("| savings shrink as the NIW share grows | 26.3 % (9:1) > 22 % (1:1) | "
               + (f"the reverse: 1:1 saves more ({-cut['1:1']:.1f} %) than 9:1 ({-cut['9:1']:.1f} %) | no |" if rev else
                  f"yes: 9:1 {-cut['9:1']:.1f} %, 1:1 {-cut['1:1']:.1f} % | yes |"))
    b = sc["sageserve_day_burst8x"]["summaries"]
    l2 = {k: sum(e["instance_hours"] for e in v["endpoints"] if str(e["model"]).startswith("llama2"))
          for k, v in b.items()}
    out += [f"| 8x bursts: LT-I capped at the target | yes | yes (by construction): its IW-F p95 TTFT is "
            f"{b['lt-i']['tiers']['IW-F']['ttft_p95']:,.0f} s because the burst backlog stays queued | yes, more "
            "severely |",
            f"| 8x bursts: LT-UA copes by scaling past the target | yes | LT-UA runs Llama-2 for "
            f"{l2['lt-ua']:.1f} instance-hours against LT-I's {l2['lt-i']:.1f}, but IW-F attainment is "
            f"{100 * b['lt-ua']['tiers']['IW-F']['attainment']:.1f} % vs Reactive "
            f"{100 * b['reactive-unified']['tiers']['IW-F']['attainment']:.1f} % | "
            + ("**no**" if b["lt-ua"]["tiers"]["IW-F"]["attainment"] < b["reactive-unified"]["tiers"]["IW-F"]["attainment"]
               else "yes") + " |"]
    s9 = sc["sageserve_day_iw9"]["summaries"]
    bl = {k: sum(e["instance_hours"] for e in v["endpoints"] if str(e["model"]).startswith("bloom")) for k, v in s9.items()}
    out += ["", f"Why. (a) At 9:1 more of the load is IW and bursty; our Reactive's cost there is churn rather than "
            f"standing instances ({s9['reactive-unified']['totals']['scale_out_events']:,} scale-outs, "
            f"{s9['reactive-unified']['totals']['provisioning_gpu_hours']:.0f} waste GPU-hours), and LT-I sizes Bloom for "
            f"the hour's forecast peak from the start of the hour ({bl['lt-i']:.0f} vs {bl['reactive-unified']:.0f} Bloom "
            "instance-hours)."]
    return "\n".join(out)


def scheduler_table(source: Path | dict) -> str:
    """Fig. 15: IW-F / IW-N violations per scheduler, ours beside the paper's."""
    data = source if isinstance(source, dict) else json.loads(Path(source).read_text())
    s = data["scenarios"]["sageserve_day_schedulers"]["summaries"]
    v = {k.split("@")[1]: {t: 100 * (1 - x["attainment"]) for t, x in val["tiers"].items()} for k, val in s.items()}
    p95 = {k.split("@")[1]: val["tiers"]["IW-N"]["ttft_p95"] for k, val in s.items()}
    deadline = ("edf", "pf", "dpa")
    worst_n = max(v, key=lambda k: v[k]["IW-N"])
    best_f = min(v, key=lambda k: v[k]["IW-F"])
    cuts_all = all(v[k]["IW-F"] < v["fcfs"]["IW-F"] for k in deadline)
    return "\n".join([
        "| finding | paper | ours | agrees? |", "|---|---|---|---|",
        f"| every deadline-aware scheduler cuts IW-F violations vs FCFS | yes | {'yes' if cuts_all else 'no'}: "
        f"{v['fcfs']['IW-F']:.1f} % -> " + ", ".join(f"{v[k]['IW-F']:.1f} ({k.upper()})" for k in deadline)
        + f" | {'yes' if cuts_all else 'no'} |",
        f"| PF lowest IW-F violations, at IW-N's expense | 24 % IW-F, 60 % IW-N | {worst_n.upper()} is the worst for "
        f"IW-N ({v[worst_n]['IW-N']:.1f} %, p95 {p95[worst_n]:.2f} s); the best for IW-F is {best_f.upper()} "
        f"({v[best_f]['IW-F']:.1f} %; PF {v['pf']['IW-F']:.1f} %) | "
        + ("yes" if best_f == "pf" and worst_n == "pf" else "half" if "pf" in (best_f, worst_n) else "no") + " |",
        f"| EDF the most even | 31 / 34 % | EDF {v['edf']['IW-F']:.1f} / {v['edf']['IW-N']:.1f} %; DPA "
        f"{v['dpa']['IW-F']:.1f} / {v['dpa']['IW-N']:.1f} %"
        + (" is as good for IW-F and better for IW-N | partly |"
           if abs(v["dpa"]["IW-F"] - v["edf"]["IW-F"]) < 0.5 and v["dpa"]["IW-N"] < v["edf"]["IW-N"] else " | yes |"),
    ])


def why_reactive(source: Path | dict) -> str:
    """'Why ours differ' 1 and 2: Reactive's utilisation per model and the floor's share, from the H100 day."""
    s = _scen(source, "sageserve_day")
    r = s["reactive-unified"]
    eps = r["endpoints"]

    def util(prefix):
        us = [e["mean_utilisation"] for e in eps if str(e["model"]).startswith(prefix)]
        return 100 * sum(us) / len(us)

    l2_regions = [e for e in eps if str(e["model"]).startswith("llama2")]
    l2_per_region = sum(e["instance_hours"] for e in l2_regions) / 24.0 / len(l2_regions)
    bl = {k: _model_ih(s[k], "bloom") for k in ("reactive-unified", "lt-i", "lt-u", "lt-ua")}
    bl_save = -max(100 * (bl[k] / bl["reactive-unified"] - 1) for k in ("lt-i", "lt-u", "lt-ua"))
    small = sum(e["instance_hours"] for e in eps if str(e["model"]).startswith("llama3"))
    return "\n".join([
        "1. **Our Reactive does not over-provision Llama-2; it under-provisions it.** The paper's LT saving comes",
        "   from Reactive reacting to momentary bursts and holding the extra instances. Reactive's signal is",
        "   effective memory (KV) utilisation. In our engine Llama-2-70B on 8x H100 has a 1.34M-token KV cache (GQA,",
        "   from the catalogue), and at the load one instance sustains within the TTFT target its KV stays around",
        "   10-20 % full; Reactive therefore almost never crosses 70 % and drops to the 2-instance floor whenever it is",
        f"   under 30 % (mean Llama-2 utilisation {util('llama2'):.0f} %, {l2_per_region:.2f} instances per region on "
        "average). LT sizes Llama-2 by",
        "   forecast TPS / theta, which asks for about as many instances, so it cannot save there. Where the memory",
        f"   signal does work, Bloom (55k-token KV, utilisation {util('bloom'):.0f} %), Reactive thrashes (most of its "
        f"{r['totals']['scale_out_events']} scale-outs and of its",
        f"   {r['totals']['provisioning_gpu_hours']:.1f} waste GPU-hours) and LT saves at least {bl_save:.1f} % of "
        "Bloom's instance-hours with better latency, which is the",
        "   paper's effect. The paper's simulator (Splitwise-based) evidently reaches 70 % far more often, e.g. with a",
        "   smaller KV budget per instance or counting queued prompts; its Fig. 12b utilisations are higher than ours.",
        f"2. **The fixed floor dilutes the all-model percentage.** {small:.0f} of {r['totals']['instance_hours']:.0f} "
        "instance-hours (Llama-3.x at 2",
        "   instances x 3 regions x 24 h) are identical for every strategy. Fig. 11 is Llama-2 only.",
    ])


LLAMA2_DAY = Path(__file__).resolve().parents[3] / "fixtures" / "scenarios" / "sageserve_day_llama2.json"


def llama2_theta(path: Path = LLAMA2_DAY) -> float:
    """The Llama-2-70B theta (TPS) the Llama-2 day's scenario fixture measured and runs with."""
    deps = json.loads(path.read_text())["deployments"]
    return next(d["theta_tps"] for d in deps.values() if d["model"] == "llama2-70b")


def llama2_day(source: Path | dict, theta_tps: float | None = None) -> str:
    """The Fig. 11 setting (Llama-2-70B only), paper-text preset, seed 2025: what LT does and why it collapses.
    ``theta_tps``: the scenario fixture's measured theta (read from it when not given)."""
    data = source if isinstance(source, dict) else json.loads(Path(source).read_text())
    theta = llama2_theta() if theta_tps is None else theta_tps
    s = data["scenarios"]["sageserve_day_llama2"]["summaries"]
    b = data["scenarios"]["sageserve_day_llama2+beta100"]["summaries"]
    r = s["reactive-unified"]
    east = [x for x in s["lt-i"]["decisions"] if x["region"] == "us-east"]
    tg = [x["target"] for x in east]
    peak = max(x["forecast_peak_tps"] for x in east)
    lt_util = [100 * e["mean_utilisation"] for k in ("lt-i", "lt-u") for e in s[k]["endpoints"]]
    p95_h = [s[k]["tiers"]["IW-F"]["ttft_p95"] / 3600 for k in ("lt-i", "lt-u", "lt-ua")]
    r_util = 100 * sum(e["mean_utilisation"] for e in r["endpoints"]) / len(r["endpoints"])
    b_att = [100 * v["tiers"]["IW-F"]["attainment"] for v in b.values()]
    b_save = max(100 * (1 - v["totals"]["gpu_hours"] / r["totals"]["gpu_hours"]) for v in b.values())
    return "\n".join([
        "`sageserve_day_llama2`: the same day with all 12 req/s on Llama-2-70B (H100), 3 regions, theta measured "
        f"{theta:,.0f} TPS. LT-I's hourly targets in us-east go {tg[0]} -> {max(tg)} -> {tg[-1]} over the day (forecast peak "
        f"{peak / 1e3:.0f}k TPS), so there is room to scale. Savings are against Reactive's GPU-hours (negative = more).",
        "",
        "Table `sageserve_day_llama2` and `sageserve_day_llama2+beta100` in \"Paper-text preset: the per-scenario "
        "tables\" below (generated).",
        "",
        "Paper (Fig. 11): Reactive 362.25, LT-I 274.5, LT-U 291, LT-UA 277.5 instance-hours, i.e. 19.7-24.2 % fewer, "
        "with latency kept. **Ours: the LT strategies as specified (beta = 10 % of the past hour's NIW load) collapse "
        f"on this day** (IW-F p95 TTFT {min(p95_h):.1f}-{max(p95_h):.1f} h), and with beta = 100 % they keep the SLOs "
        f"(IW-F {min(b_att):.1f}-{max(b_att):.1f} %) but save at most {b_save:.1f} %.",
        "",
        "Why. The LT target covers the IW forecast plus beta; the NIW queue manager releases NIW work only to "
        "endpoints under 60 % effective memory. On this day NIW is 28 % of the requests (as in the paper's Jul 2025 "
        f"trace, where IW is 72 %), and LT-I / LT-U keep Llama-2 at {min(lt_util):.0f}-{max(lt_util):.0f} % "
        "utilisation, so NIW is hardly ever released and waits until it is 10 h old. From then on our deadline-forced "
        "release (spec section 8 row 20; the paper does not say what happens to requests nobody pulls) hands the whole "
        "10-hour-old NIW stream to the fleet at priority 0, on par with IW, on a fleet sized for IW + 10 % of NIW: IW "
        "queues grow for the rest of the day. LT-UA's beyond-target rule then fires on spill-over traffic arriving in "
        "us-west (observed >= 5x the forecast of us-west's own clients) and adds instances there, too late to help. "
        f"Reactive scales on memory, which includes the NIW work it admits, so it keeps {r_util:.0f} % utilisation on "
        "average and room for NIW. With beta = 100 % of the NIW mean load the LT fleet has that room and behaves, but "
        "it then costs about what Reactive costs. On the 4-model day the same mechanism is mild because Llama-2 sits "
        "near its 2-instance floor, which leaves spare capacity.",
    ])
