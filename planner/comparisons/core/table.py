"""The comparison page's one compact table: one row per strategy, each figure as its median and [p5, p95] band
across the comparison's seeds, savings in words. Django-free.

With seeds, every strategy ran once per workload seed (variant keys ``<group>+s<seed>``); a run's saving is against
the baseline strategy's run on the same seed, so the baseline's own row never shows a saving against itself.
Tuning runs (the equal-SLO baseline sweep) are not strategies and stay in their own table.
"""

from __future__ import annotations

import numpy as np

TIERS = ("IW-F", "IW-N", "NIW")
# the SLO targets a strategy must meet: the share of each tier's requests within its TTFT target (IW-F, IW-N) or
# finished by its deadline (NIW). 100 % for NIW would fail a day on one late batch request out of 300,000.
TARGETS = {"IW-F": 0.99, "IW-N": 0.99, "NIW": 0.99}


def band(values) -> dict | None:
    """{"median", "p5", "p95", "n"} of the values that are not None (linear percentiles); None when there are
    none. With one value all three are that value."""
    xs = np.asarray([float(v) for v in values if v is not None], dtype=float)
    if xs.size == 0:
        return None
    p5, med, p95 = np.percentile(xs, [5.0, 50.0, 95.0])
    return {"median": float(med), "p5": float(p5), "p95": float(p95), "n": int(xs.size)}


def money(x: float) -> str:
    return f"${abs(x):,.0f}" if abs(x) >= 100 else f"${abs(x):,.2f}"


def saving_words(saved_usd: float | None, saved_pct: float | None = None) -> str:
    """'saves $X (Y %)', 'costs $X more (Y %)' or 'costs the same': never a negative saving."""
    if saved_usd is None:
        return "no saving computed"
    pct = "" if saved_pct is None else f" ({abs(saved_pct):.1f} %)"
    if abs(saved_usd) < 0.005 or (saved_pct is not None and abs(saved_pct) < 0.05):
        return "costs the same"
    if saved_usd > 0:
        return f"saves {money(saved_usd)}{pct}"
    return f"costs {money(saved_usd)} more{pct}"


def span_words(duration_h: float) -> str:
    """The simulated span in words ('1.0 h', '24 h', '7.0 days')."""
    if duration_h >= 48:
        return f"{duration_h / 24:.1f} days"
    return f"{duration_h:.0f} h" if duration_h >= 10 else f"{duration_h:.1f} h"


def attainment(row: dict, tier: str) -> float | None:
    if tier == "NIW":
        return row.get("niw_deadline_met")
    return ((row.get("tiers") or {}).get(tier) or {}).get("attainment")


def misses(row: dict, targets: dict | None = None) -> list[str]:
    """The tiers whose attainment is below target, as 'IW-F 97.31 % < 99 %'."""
    out = []
    for tier, goal in (targets or TARGETS).items():
        att = attainment(row, tier)
        if att is not None and att < goal:
            out.append(f"{tier} {100 * att:.2f} % < {100 * goal:.0f} %")
    return out


def _groups(rows: list[dict], variants: list[dict]) -> dict[str, list[dict]]:
    meta = {v.get("key"): v for v in variants or []}
    groups: dict[str, list[dict]] = {}
    for r in rows:
        v = meta.get(r["key"], {})
        if v.get("role") == "tuning":
            continue
        groups.setdefault(v.get("group", r["key"]), []).append({**r, "_seed": v.get("seed")})
    return groups


def strategy_table(aggregate: dict, variants: list[dict], targets: dict | None = None) -> dict:
    """{"rows": one per strategy, "answer", "cheapest", "seeds", "span"}: costs over the simulated span; a row
    ``meets`` the targets when every seed's run does; the answer is the cheapest (median cost) that meets them,
    the baseline winning ties, None when none does."""
    rows = aggregate.get("rows") or []
    groups = _groups(rows, variants)
    meta = {v.get("key"): v for v in variants or []}
    base_group = meta.get(aggregate.get("baseline"), {}).get("group", aggregate.get("baseline"))
    base_runs = {r["_seed"]: r for r in groups.get(base_group, [])}
    fallback = next(iter(base_runs.values()), None)
    out = []
    for group, runs in groups.items():
        saved, saved_pct = [], []
        for r in runs:
            b = base_runs.get(r["_seed"], fallback)
            if b is None or group == base_group:
                continue
            saved.append(b["cost_usd"] - r["cost_usd"])
            saved_pct.append(None if not b["cost_usd"] else 100.0 * (b["cost_usd"] - r["cost_usd"]) / b["cost_usd"])
        run_misses = [misses(r, targets) for r in runs]
        cost = band(r["cost_usd"] for r in runs)
        s_band, p_band = band(saved), band(saved_pct)
        out.append({
            "key": group, "is_baseline": group == base_group, "seeds": len(runs),
            "strategy": runs[0].get("strategy"), "cost": cost, "gpu_hours": band(r["gpu_hours"] for r in runs),
            "saved_usd": s_band, "saved_pct": p_band,
            "saving_words": "the baseline" if group == base_group else
            saving_words(s_band and s_band["median"], p_band and p_band["median"]),
            "attainment": {t: band(attainment(r, t) for r in runs) for t in TIERS},
            "meets": not any(run_misses), "misses": sorted({m for ms in run_misses for m in ms}),
        })
    order = sorted(out, key=lambda r: (r["cost"]["median"], not r["is_baseline"]))
    answer = next((r["key"] for r in order if r["meets"]), None)
    for r in out:
        r["is_answer"] = r["key"] == answer
    seeds = max((r["seeds"] for r in out), default=1)
    return {"rows": out, "answer": answer, "cheapest": order[0]["key"] if order else None, "seeds": seeds,
            "duration_h": aggregate.get("duration_h"), "span": span_words(float(aggregate.get("duration_h") or 0))}


def _over_context(summaries: dict[str, dict]) -> tuple[int, int, str]:
    """(prompts over their model's context limit, requests, what the engine did with them), from any run."""
    for s in summaries.values():
        info = s.get("context_limits") or {}
        over = int(info.get("prompts_over_limit") or 0)
        if over:
            return over, int(s.get("requests") or 0), str(info.get("mode") or "")
        v = (s.get("validity") or {}).get("prompt_over_context") or {}
        if v.get("requests"):
            return int(v["requests"]), int((s.get("validity") or {}).get("served_requests") or 0), "ignore"
    return 0, 0, ""


def slo_reasons(table: dict, summaries: dict[str, dict], targets: dict | None = None) -> list[dict]:
    """Why strategies miss the SLO targets, in words, most structural first: prompts beyond the context limit,
    targets no strategy reaches whatever it does (all within half a point), a fleet too small for the traffic.
    [{"kind": "over-context" | "unreachable" | "overload", "text"}]; [] when the answer meets the targets."""
    rows = table.get("rows") or []
    if not rows or all(r["meets"] for r in rows):
        return []
    targets = targets or TARGETS
    out = []
    over, requests, mode = _over_context(summaries)
    if over and requests and over / requests >= 0.001:
        fate = {"reject": "refused and counted as missed", "truncate": "cut to the limit",
                "route": "routed to a deployment with a longer limit where there is one"}.get(
            mode, "simulated in full although a real server would refuse them")
        out.append({"kind": "over-context", "text": (
            f"{100 * over / requests:.1f} % of the requests ({over:,} of {requests:,}) have prompts longer than their "
            f"model's context limit; they are {fate} under every strategy, so no added capacity changes that. Cut or "
            "route them before comparing (scenario engine.over_context: truncate or route), or choose deployments "
            "with a longer context.")})
    for tier, goal in targets.items():
        bands = [r["attainment"].get(tier) for r in rows]
        values = [b["median"] for b in bands if b]
        if not values or max(values) >= goal:
            continue
        best, worst = max(values), min(values)
        if best - worst < 0.005:
            out.append({"kind": "unreachable", "text": (
                f"No strategy reaches the {tier} target of {100 * goal:.0f} %: every one gets "
                f"{100 * worst:.2f}-{100 * best:.2f} %, so the miss does not depend on the strategy. Look at the "
                "requests that miss (context limit, prompts longer than the latency target allows) or set a target "
                "the workload can reach.")})
        else:
            out.append({"kind": "overload", "text": (
                f"The fleet is too small for the {tier} traffic: the best strategy reaches {100 * best:.2f} % of the "
                f"{100 * goal:.0f} % target and the others less. Raise the instance ceilings, add a spot pool or "
                "relax the target before choosing on cost.")})
    return out


def run_savings(aggregate: dict, variants: list[dict]) -> dict[str, tuple[float, float | None] | None]:
    """{run key: (saved $, saved % of cost)} of every run against the baseline strategy's run on the same seed;
    None for the baseline's own runs (no saving against itself) and tuning runs."""
    rows = aggregate.get("rows") or []
    meta = {v.get("key"): v for v in variants or []}
    base_group = meta.get(aggregate.get("baseline"), {}).get("group", aggregate.get("baseline"))
    base = {meta.get(r["key"], {}).get("seed"): r for r in rows
            if meta.get(r["key"], {}).get("group", r["key"]) == base_group}
    fallback = next(iter(base.values()), None)
    out: dict = {}
    for r in rows:
        v = meta.get(r["key"], {})
        b = base.get(v.get("seed"), fallback)
        if v.get("group", r["key"]) == base_group or v.get("role") == "tuning" or b is None:
            out[r["key"]] = None
            continue
        saved = b["cost_usd"] - r["cost_usd"]
        out[r["key"]] = (saved, 100.0 * saved / b["cost_usd"] if b["cost_usd"] else None)
    return out
