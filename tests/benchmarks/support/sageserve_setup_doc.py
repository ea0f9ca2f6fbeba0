"""docs/reproduction.md's single-seed setting and its measured inputs: the set-up table, the A100 note and 'Why ours
differ' 3-5, computed from docs/results/sageserve.json and the measured theta each scenario fixture records
(``fixtures/scenarios/sageserve_day*.json``: ``theta_tps``, ``theta_catalogue_tps``, ``theta_source``). Written by
tests/benchmarks/reproduce_fair.py --write-doc (blocks ``setup-table``, ``a100-theta``, ``why-scale-theta``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "fixtures" / "scenarios"
# theta_source: "... p95 TTFT <= 1.23 s ...; 1 s is out of reach even idle (p95 0.82 s), ..."
_TARGET = re.compile(r"p95 TTFT <= ([\d.]+) s")
_IDLE = re.compile(r"idle \(p95 ([\d.]+) s\)")


def _theta(dep: dict) -> dict:
    src = dep.get("theta_source", "")
    target, idle = _TARGET.search(src), _IDLE.search(src)
    return {"theta_tps": dep["theta_tps"], "catalogue_tps": dep.get("theta_catalogue_tps"),
            "target_s": float(target.group(1)) if target else None, "idle_p95_s": float(idle.group(1)) if idle else None}


def setup_facts(single: Path | dict, scenarios: Path = SCENARIOS) -> dict:
    """The figures these blocks print, in one dict (so that the provenance check can move every one of them):
    each fixture's measured theta per model, and the H100 day's request count, IW share and LT-I's Llama-2
    targets per region from the results."""
    data = single if isinstance(single, dict) else json.loads(Path(single).read_text())
    thetas = {}
    for f in sorted(scenarios.glob("sageserve_day*.json")):
        deps = json.loads(f.read_text())["deployments"]
        thetas[f.stem] = {d["model"]: _theta(d) for d in deps.values() if "theta_tps" in d}
    lt_i = data["scenarios"]["sageserve_day"]["summaries"]["lt-i"]
    iw = sum(lt_i["tiers"][t]["n"] for t in ("IW-F", "IW-N"))
    targets: dict[str, list[int]] = {}
    for x in lt_i["decisions"]:
        if x["model"] == "llama2-70b":
            targets.setdefault(x["region"], []).append(x["target"])
    return {"thetas": thetas, "requests": lt_i["requests"], "duration_s": lt_i["duration_s"],
            "iw_share": iw / lt_i["requests"], "llama2_targets": targets}


_MODELS = (("llama2-70b", "Llama-2"), ("bloom-176b", "Bloom"), ("llama3.1-8b", "Llama-3.1"), ("llama3.2-3b", "Llama-3.2"))


def _theta_cell(th: dict) -> str:
    parts = []
    for m, label in _MODELS:
        t = th[m]
        parts.append(f"{label} {t['theta_tps']:,.0f}" + (f" at <= {t['target_s']:.2f} s" if t["idle_p95_s"] else ""))
    idle = [f"{label} {th[m]['idle_p95_s']:.2f} s" for m, label in _MODELS if th[m]["idle_p95_s"]]
    return (", ".join(parts) + " input TPS" + (f"; where 1 s is out of reach even idle (idle p95: {', '.join(idle)}) "
                                               "the target is 1.5x the idle p95" if idle else ""))


def setup_table(facts: dict) -> str:
    th = facts["thetas"]["sageserve_day"]
    rate = facts["requests"] / facts["duration_s"]
    return "\n".join([
        "| | paper (sec. 4, 7) | ours (`fixtures/scenarios/sageserve_day.json`) |",
        "|---|---|---|",
        "| trace | O365 production, Jul 2025 (and Nov 2024), peak day, ~10M requests/day | synthetic SageServe-like day "
        f"(`fixtures/workloads/sageserve_day.json`: diurnal IW, flat bursty NIW, IW = {100 * facts['iw_share']:.0f} %), "
        f"**{facts['requests'] / 1e6:.2f}M requests** ({rate:.0f} req/s mean) |",
        "| regions x models | 3 US x Bloom-176B, Llama-2-70B, Llama-3.1-8B, Llama-3.2-3B | same; production models A-D "
        "mapped to them (A, the largest and busiest, -> Llama-2-70B) |",
        "| hardware | 8x H100 per instance (A100 ablation) | catalogue: Llama-2 and Bloom on 8x H100, Llama-3.x on 2x H100 "
        "(the catalogue marks these H100 Llama-3.x profiles as estimated); A100 variant |",
        "| fleet | 20 instances per model per region at start; min 2 / max 3 per deployment | 4 per endpoint at start, "
        "min 2, max 20; spot pool 4 per model per region + 8 fresh VMs |",
        "| theta | \"benchmarked\" | measured in our engine for this token mix (the fixture's `theta_source`): max "
        f"Poisson rate into one instance with p95 TTFT <= 1 s ({_theta_cell(th)}) |",
        "| forecast | ARIMA (AIC), history of the week | ARIMA (AIC, `forecasts.core`), fitted on one synthetic day "
        "before the simulated one, extended hourly |",
        "| NIW | queue manager (60 % / 50 %, 10 h, 24 h) | same, for Reactive and LT |",
        "| SLOs | IW-F TTFT < 1 s, IW-N < 60 s, NIW 24 h | same; attainment = share of requests meeting them within the "
        "simulated day (runs stop at 24 h) |",
        "| price | $98.32 per 8x H100 instance-hour | catalogue on-demand prices ($98.32 for 8x H100) |",
    ])


def a100_theta(facts: dict) -> str:
    th = facts["thetas"]["sageserve_day_a100"]
    out = [(label, th[m]["idle_p95_s"]) for m, label in _MODELS if th[m]["idle_p95_s"]]
    names = ", ".join(label for label, _ in out[:-1]) + f" and {out[-1][0]}" if len(out) > 1 else out[0][0]
    return (f"On A100 the fixture records a 1 s p95 TTFT as out of reach even for an idle {names} instance with these "
            f"prompts (idle p95 {', '.join(f'{v:.2f} s' for _, v in out)}), so theta was measured at 1.5x the idle "
            "p95 (recorded as `theta_source` in the fixture) and no strategy meets the IW-F SLO. Reactive is the "
            "cheapest because its signal (memory) does not see latency: it keeps fewer instances and lets TTFT grow. "
            "This is not an \"equal latency\" comparison, and we do not claim the paper's A100 saving.")


def why_scale_theta(facts: dict) -> str:
    """'Why ours differ' 3-5: the day's scale (LT-I's Llama-2 targets), waste, and the measured theta."""
    tg = facts["llama2_targets"]
    east, others = max(tg["us-east"]), {r: max(v) for r, v in tg.items() if r != "us-east"}
    bloom = facts["thetas"]["sageserve_day"]["bloom-176b"]
    l2 = [v["llama2-70b"]["theta_tps"] for k, v in facts["thetas"].items() if "a100" not in k and "llama2-70b" in v]
    return "\n".join([
        f"3. **Scale.** Our day has {facts['requests'] / 1e6:.2f}M requests, ~10x fewer than the paper's. In the main "
        f"day Llama-2 needs {east} instances at the us-east peak and at most "
        + " / ".join(f"{n} in {r}" for r, n in sorted(others.items())) + " (LT-I's hourly targets; the floor is 2),",
        "   against ~15 instances on average summed over regions in Fig. 11 (362 instance-hours / 24 h).",
        "   With so few instances the min of 2 and integer rounding decide most hours. The Llama-2-only day",
        "   (`sageserve_day_llama2`, all 12 req/s on Llama-2) tests the Fig. 11 setting with room to scale.",
        "4. **Waste is reduced by more than the paper's 70 %** because our Reactive's churn is larger (Bloom flips",
        "   between scale-out and scale-in every few cooldowns) and LT changes the fleet only a handful of times a day.",
        f"5. **theta is measured, not taken from the catalogue.** The catalogue's Bloom theta ({bloom['catalogue_tps']:,.0f} "
        f"TPS) is {bloom['catalogue_tps'] / bloom['theta_tps']:.1f}x what",
        f"   the engine sustains with these 2-4k-token prompts ({bloom['theta_tps']:,.0f}); with the catalogue value "
        "the ILP would size Bloom for that much more load per instance than it serves within the TTFT target.",
        f"   Measurements are noisy (Llama-2 H100: {min(l2):,.0f} to {max(l2):,.0f} TPS across the variant fixtures, "
        "each measured on its own token sample).",
    ])
