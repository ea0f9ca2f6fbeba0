"""Savings table against a baseline, with SLO attainment beside every saving. Django-free.

Input: one normalised run summary per variant (see ``summary.py`` for the shape). Output: a JSON-able
dict with a row per variant (instance-hours, GPU-hours, cost, scaling waste, p95 TTFT and attainment per
tier, savings vs the baseline over the simulated span, per day, and projected per week and per month),
the per-(region, model) breakdown, and the paper-style extrapolation with its formula written out.

Projection. The simulated span is ``duration_h`` hours. A saving of S dollars over it is, bottom-up,
S x 24/duration_h per day, x 7 per week and x 365.25/12 per month, for the simulated fleet as it is.
SageServe 7.2.1 extrapolates differently: "$98.32 x 85 x 3 models x 4 regions x 7 days" per week, i.e.
(instance-hours saved per day for ONE model in ONE region) x price x models x regions x days. We print
that formula too, with our own per-endpoint daily saving and multipliers the user chooses
(``projection={"models": 3, "regions": 4}``); note the paper's own product is $702,005, not "$0.6M".
"""

from __future__ import annotations

import math

TIERS = ("IW-F", "IW-N", "NIW")
DAYS_PER_MONTH = 365.25 / 12
PAPER_PRICE_H100 = 98.32


def _f(x, default=0.0) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return default
    return x if math.isfinite(x) else default


def _pct(saved: float, base: float) -> float | None:
    return 100.0 * saved / base if base > 0 else None


def _cost_by_gpu(summary: dict) -> dict[str, float]:
    """The run's cost per GPU type (the decision card's price sensitivity)."""
    out: dict[str, float] = {}
    for e in summary.get("endpoints") or []:
        for part in e.get("pools") or [e]:  # a disaggregated endpoint: each pool's GPU
            gpu = str(part.get("gpu") or "")
            out[gpu] = out.get(gpu, 0.0) + _f(part.get("cost_usd"))
    return out


def _tier_rows(s: dict, base: dict) -> dict[str, dict]:
    """Per tier of a variant: latency percentiles, SLO attainment and its change against the baseline."""
    tiers = {}
    for tier in TIERS:
        t = (s.get("tiers") or {}).get(tier)
        bt = (base.get("tiers") or {}).get(tier)
        if not t or not t.get("n"):
            continue
        att = t.get("attainment")
        b_att = bt.get("attainment") if bt else None
        tiers[tier] = {
            "n": t.get("n"), "ttft_p95_s": t.get("ttft_p95"), "ttft_q3_s": t.get("ttft_q3"),
            "e2e_p95_s": t.get("e2e_p95"), "attainment": att,
            "attainment_delta": (att - b_att) if (att is not None and b_att is not None) else None,
            "slo": t.get("slo"),
        }
    return tiers


def _row(key: str, s: dict, base: dict, baseline: str, per_day: float, paper_week: float) -> dict:
    """One variant's row: its totals, savings against the baseline (bottom-up and the paper's projection
    ``paper_week``: per (model, region) and per day, each endpoint's saved instance-hours at its own price, x models
    x regions x days), and its tiers."""
    tot = s.get("totals", {})
    base_tot = base.get("totals", {})
    ih, gh, cost = _f(tot.get("instance_hours")), _f(tot.get("gpu_hours")), _f(tot.get("cost_usd"))
    b_ih, b_gh, b_cost = (_f(base_tot.get("instance_hours")), _f(base_tot.get("gpu_hours")),
                          _f(base_tot.get("cost_usd")))
    saved_ih, saved_gh, saved_cost = b_ih - ih, b_gh - gh, b_cost - cost
    waste = _f(tot.get("provisioning_gpu_hours"))
    b_waste = _f(base_tot.get("provisioning_gpu_hours"))
    return {
        "key": key, "strategy": s.get("strategy", key), "scheduler": s.get("scheduler", ""),
        "is_baseline": key == baseline,
        "instance_hours": ih, "gpu_hours": gh, "cost_usd": cost, "cost_by_gpu": _cost_by_gpu(s),
        "waste_gpu_hours": waste,
        "waste_reduction_pct": _pct(b_waste - waste, b_waste),
        "spot_pool_instance_hours": _f(tot.get("spot_pool_instance_hours")),
        "scale_out_events": tot.get("scale_out_events"), "scale_in_events": tot.get("scale_in_events"),
        "mean_utilisation": tot.get("mean_utilisation"),
        "saved_instance_hours": saved_ih, "saved_gpu_hours": saved_gh,
        "saved_gpu_hours_pct": _pct(saved_gh, b_gh), "saved_instance_hours_pct": _pct(saved_ih, b_ih),
        "saved_usd": saved_cost,
        "saved_usd_per_day": saved_cost * per_day,
        "saved_usd_per_week": saved_cost * per_day * 7.0,
        "saved_usd_per_month": saved_cost * per_day * DAYS_PER_MONTH,
        "paper_style_usd_per_week": paper_week,
        "paper_style_usd_per_month": paper_week / 7.0 * DAYS_PER_MONTH,
        "tiers": _tier_rows(s, base),
        "niw_deadline_met": (s.get("tiers") or {}).get("NIW", {}).get("attainment"),
        "requests": s.get("requests"), "wall_s": s.get("wall_s"),
    }


def _breakdown(summaries: dict[str, dict], order: list[str]) -> list[dict]:
    """One row per (variant, endpoint); a disaggregated endpoint one row per pool (``pool``: prefill / decode,
    each on its own GPU and price; the utilisation is the endpoint's)."""
    breakdown = []
    for key in order:
        for ep in summaries[key].get("endpoints", []):
            for part in ep.get("pools") or [ep]:
                breakdown.append({"key": key, "region": ep.get("region"), "model": ep.get("model"),
                                  "pool": part.get("pool", ""), "gpu": part.get("gpu", ""),
                                  "instance_hours": _f(part.get("instance_hours")),
                                  "gpu_hours": _f(part.get("gpu_hours")), "cost_usd": _f(part.get("cost_usd")),
                                  "waste_gpu_hours": _f(part.get("provisioning_gpu_hours")),
                                  "mean_utilisation": ep.get("mean_utilisation"),
                                  "price_per_instance_hour": part.get("price_per_instance_hour")})
    return breakdown


def aggregate(summaries: dict[str, dict], baseline: str, *, order: list[str] | None = None,
              projection: dict | None = None) -> dict:
    """Build the savings table. ``summaries`` maps variant key -> summary; missing/failed ones are skipped
    (listed under ``missing``). Raises KeyError if the baseline has no summary."""
    order = [k for k in (order or list(summaries)) if k in summaries]
    if baseline not in summaries:
        raise KeyError(f"baseline {baseline!r} has no result")
    projection = dict(projection or {})
    base = summaries[baseline]
    duration_h = max(_f(base.get("duration_s"), 3600.0) / 3600.0, 1e-9)
    per_day = 24.0 / duration_h
    n_endpoints = max(1, len(base.get("endpoints", [])))
    mult_models = _f(projection.get("models"), 1.0) or 1.0
    mult_regions = _f(projection.get("regions"), 1.0) or 1.0
    days_week = _f(projection.get("days_per_week"), 7.0) or 7.0

    rows = [_row(key, summaries[key], base, baseline, per_day,
                 _saved_usd_by_endpoint(base, summaries[key]) * per_day / n_endpoints * mult_models * mult_regions
                 * days_week)
            for key in order]
    breakdown = _breakdown(summaries, order)
    best = min((r for r in rows if not r["is_baseline"]), key=lambda r: r["cost_usd"], default=None)
    cheapest = min(rows, key=lambda r: (r["cost_usd"], not r["is_baseline"]), default=None)  # ties: the baseline
    return {
        "baseline": baseline,
        "order": order,
        "duration_h": duration_h,
        "projection": {
            "models": mult_models, "regions": mult_regions, "days_per_week": days_week,
            "days_per_month": DAYS_PER_MONTH, "endpoints_simulated": n_endpoints,
            "bottom_up_formula": "saved $ over the simulated span x 24 / span_h x 7 (week) or x 30.44 (month)",
            "paper_formula": "price/h x (instance-hours saved per (model, region) per day) x models x regions x 7 days",
            "paper_own_example": {"formula": "98.32 x 85 x 3 x 4 x 7", "value_usd": 98.32 * 85 * 3 * 4 * 7,
                                  "paper_says": "~$0.6M per week, ~$2.5M per month"},
        },
        "rows": rows,
        "breakdown": breakdown,
        "best": best["key"] if best else None,
        "cheapest": cheapest["key"] if cheapest else None,
        "energy": energy_table(summaries, baseline, order),
    }


def energy_table(summaries: dict[str, dict], baseline: str, order: list[str]) -> list[dict]:
    """Energy per variant (kWh, its cost, kWh per 1,000 requests) and the change against the baseline; None where
    a run has no power figures for some deployment. The energy cost is informational: GPU-hour prices include it."""
    base = (summaries.get(baseline) or {}).get("energy") or {}
    rows = []
    for key in order:
        s = summaries[key]
        e = s.get("energy") or {}
        kwh, b_kwh = e.get("energy_kwh"), base.get("energy_kwh")
        requests = s.get("requests") or 0
        rows.append({
            "key": key, "is_baseline": key == baseline, "energy_kwh": kwh, "busy_kwh": e.get("busy_kwh"),
            "idle_kwh": e.get("idle_kwh"), "provisioning_kwh": e.get("provisioning_kwh"),
            "energy_cost_usd": e.get("energy_cost_usd"),
            "kwh_per_1k_requests": (1000.0 * kwh / requests) if kwh is not None and requests else None,
            "saved_kwh": (b_kwh - kwh) if kwh is not None and b_kwh is not None else None,
            "saved_kwh_pct": _pct(b_kwh - kwh, b_kwh) if kwh is not None and b_kwh is not None else None,
            "by_region": e.get("by_region") or {}, "missing_power": e.get("missing_power") or [],
        })
    return rows


def _saved_usd_by_endpoint(base: dict, s: dict) -> float:
    """Sum over (region, model) of (baseline - variant) instance-hours x that endpoint's price per instance-hour
    (falling back to the variant's price, then the paper's $98.32/h, where an endpoint has none)."""
    fallback = _f(s.get("price_per_instance_hour"), PAPER_PRICE_H100) or PAPER_PRICE_H100

    def by_ep(summary):
        return {(e.get("region"), e.get("model")): e for e in summary.get("endpoints", [])}

    mine, theirs = by_ep(s), by_ep(base)
    total = 0.0
    for ep_key in {*mine, *theirs}:
        e, b = mine.get(ep_key, {}), theirs.get(ep_key, {})
        price = _f(e.get("price_per_instance_hour") or b.get("price_per_instance_hour"), fallback) or fallback
        total += (_f(b.get("instance_hours")) - _f(e.get("instance_hours"))) * price
    return total
