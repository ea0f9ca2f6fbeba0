"""Fair comparisons on the pages: the new-comparison form's bundle / seed / tuning inputs, and the display texts of the
"savings over seeds, untuned vs equal-SLO tuned baseline" table. Kept apart from views.py on purpose."""

from __future__ import annotations

from planner.comparisons.core.fair import methods_text
from planner.comparisons.core.variants import VariantError


def form_context() -> dict:
    from planner.comparisons.core.bundles import bundle_names, get_bundle

    return {"bundles": [{"name": n, "description": get_bundle(n).description} for n in bundle_names()]}


def form_inputs(post) -> dict:
    """bundles, seeds and tune from the form (VariantError on a bad value, with the field named)."""
    seeds_txt = (post.get("seeds") or "").replace(" ", "")
    try:
        seeds = [int(x) for x in seeds_txt.split(",") if x] or None
    except ValueError:
        raise VariantError("seeds", f"give integers like 2025,2026,2027, not {seeds_txt!r}") from None
    tune = None
    if post.get("tune"):
        try:
            tolerance = float(post.get("tolerance") or 0.5) / 100.0
        except ValueError:
            raise VariantError("tune.tolerance", "give the tolerance in points, e.g. 0.5") from None
        tune = {"tolerance": tolerance}
    return {"bundles": post.getlist("bundles") or None, "seeds": seeds, "tune": tune}


def _rng(st, scale=1.0, digits=1, sign=False):
    if not st:
        return "-"
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    return f"{f.format(scale * st['mean'])} [{f.format(scale * st['min'])}, {f.format(scale * st['max'])}]"


def display(fair: dict | None) -> dict | None:
    if not fair:
        return None
    rows = []
    for r in fair.get("rows", []):
        att = r.get("attainment") or {}
        rows.append({**r, "gpu_hours_txt": _rng(r.get("gpu_hours"), digits=0),
                     "above_txt": _rng(r.get("gpu_hours_above_floor"), digits=0),
                     "prov_txt": _rng(r.get("provisioning_gpu_hours")),
                     "untuned_txt": _rng(r["vs_untuned"].get("saved_gpu_hours_pct"), sign=True),
                     "tuned_txt": _rng(r["vs_tuned"].get("saved_gpu_hours_pct"), sign=True),
                     "point_txt": ", ".join(f"{k} {v}" for k, v in (r["vs_tuned"].get("point") or {}).items()),
                     "iwf_txt": _rng(att.get("IW-F"), 100.0), "iwn_txt": _rng(att.get("IW-N"), 100.0),
                     "niw_txt": _rng(att.get("NIW"), 100.0), "niw_ttft_txt": _rng(r.get("niw_ttft_p95_s"), 1 / 3600, 2),
                     "noprov_txt": _rng(r.get("gpu_hours_without_provisioning"), digits=0),
                     "floor_txt": _rng(r.get("floor_gpu_hours"), digits=0),
                     "model_ih_txt": _rng(r.get(f"{fair.get('model_of_interest', 'llama2-70b')}_instance_hours")),
                     "defer_txt": _rng(r.get("niw_deferral_p95_s"), 1 / 3600, 2),
                     "unserved_txt": _rng(r.get("niw_unserved_pct")),
                     "methods_txt": methods_text(r.get("forecast_methods"))})
    tuning = [{**t, "knobs_txt": ", ".join(f"{k} {v}" for k, v in t["point"].items()),
               "gpu_hours_txt": _rng(t.get("gpu_hours"), digits=0),
               "att_txt": " / ".join(f"{100 * t['attainment'][k]:.1f}" if k in t["attainment"] else "-"
                                     for k in ("IW-F", "IW-N", "NIW"))} for t in fair.get("tuning", [])]
    return {**fair, "rows": rows, "tuning": tuning}
