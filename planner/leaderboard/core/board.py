"""From the runs to the board: per trace, every strategy at its defaults and at matched SLO both ways, with
intervals over the seeds; an overall table across traces; a digest of the runs. Django-free.

Matched SLO (rules.py): attainment is compared on its mean over the seeds, within ``rules.TOLERANCE``.
- way 1, the baseline tuned to the strategy: the cheapest static count (by mean GPU-hours) whose attainment is
  >= the strategy's at its defaults; the strategy's saving against it, seed by seed.
- way 2, the strategy tuned to the baseline: the cheapest point of the strategy's grid whose attainment is >=
  the static baseline's at its default count; its saving against that baseline, seed by seed.
Intervals: the mean over seeds with a 95 % Student-t interval, and the min and max.
"""

from __future__ import annotations

import hashlib
import json
import math

from planner.leaderboard.core import rules

FIELDS = ("gpu_hours", "attainment", "cost_per_mtok", "energy_kwh", "provisioning_gpu_hours", "cost_usd")


def stats(values) -> dict | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return None
    n = len(vals)
    mean = sum(vals) / n
    half = 0.0
    if n > 1:
        from scipy.stats import t

        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
        half = float(t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "min": min(vals), "max": max(vals), "n": n}


def _with_derived(run: dict) -> dict:
    r = dict(run)
    r["cost_per_mtok"] = 1e6 * r["cost_usd"] / r["tokens"] if r.get("tokens") else None
    return r


def _cells(runs, trace):
    """(strategy, point) -> seed -> run."""
    out: dict[tuple, dict[int, dict]] = {}
    for r in runs:
        if r["trace"] == trace:
            out.setdefault((r["strategy"], r["point"]), {})[r["seed"]] = _with_derived(r)
    return out


def _figures(by_seed: dict[int, dict]) -> dict:
    return {f: stats(r.get(f) for r in by_seed.values()) for f in FIELDS}


def _mean(by_seed, field="attainment"):
    st = stats(r.get(field) for r in by_seed.values())
    return st["mean"] if st else None


def _saving(base: dict[int, dict], mine: dict[int, dict]) -> dict | None:
    return stats(100.0 * (base[s]["gpu_hours"] - mine[s]["gpu_hours"]) / base[s]["gpu_hours"]
                 for s in mine if s in base and base[s]["gpu_hours"])


def _cheapest(candidates: list[tuple], target: float | None) -> tuple | None:
    """The (key, by_seed) of least mean GPU-hours among those whose mean attainment >= target - tolerance."""
    if target is None:
        return None
    ok = [(_mean(c, "gpu_hours"), k, c) for k, c in candidates
          if (a := _mean(c)) is not None and a >= target - rules.TOLERANCE]
    if not ok:
        return None
    _, k, c = min(ok, key=lambda x: (x[0], str(x[1])))
    return k, c


def _point_text(name, point) -> dict | None:
    if point is None:
        return None
    from planner.leaderboard.core.run import knobs_of

    return knobs_of(name, point)


def trace_board(runs: list[dict], trace: str, static_default: int) -> dict:
    cells = _cells(runs, trace)
    statics = sorted(((k[1], c) for k, c in cells.items() if k[0] == "static"), key=lambda x: x[0])
    base = cells.get(("static", static_default), {})
    base_att = _mean(base) if base else None
    rows = [{"strategy": "static", "family": "baseline", "bundle": "", "knob": "instances",
             "default": {"point": {"instances": static_default}, **_figures(base)},
             "baseline_tuned": None, "tuned": {"point": {"instances": static_default}, **_figures(base),
                                               "saving_pct": _saving(base, base), "why": ""}}]
    for name, spec in rules.STRATEGIES.items():
        default = cells.get((name, spec.get("default")))
        if not default:
            continue
        row = {"strategy": name, "family": spec["family"], "bundle": spec["bundle"],
               "knob": "/".join(spec["knob"]) if isinstance(spec["knob"], tuple) else spec["knob"],
               "default": {"point": _point_text(name, spec.get("default")), **_figures(default)}}
        b = _cheapest(statics, _mean(default))
        row["baseline_tuned"] = ({"instances": b[0], "gpu_hours": stats(r["gpu_hours"] for r in b[1].values()),
                                  "attainment": stats(r["attainment"] for r in b[1].values()),
                                  "saving_pct": _saving(b[1], default), "why": ""} if b else
                                 {"instances": None, "saving_pct": None,
                                  "why": f"no static count up to {max(rules.STATIC_GRID)} reaches its attainment"})
        grid = [(i, c) for (n, i), c in cells.items() if n == name]
        t = _cheapest(grid, base_att)
        if t:
            row["tuned"] = {"point": _point_text(name, t[0]), **_figures(t[1]), "saving_pct": _saving(base, t[1]),
                            "why": ""}
        else:
            row["tuned"] = {"point": None, "saving_pct": None,
                            "why": ("no point of its grid reaches the baseline's attainment" if spec["grid"] else
                                    "no knob tuned (defaults only) and its defaults miss the baseline's attainment")}
        rows.append(row)
    _rank(rows)
    any_run = next(iter(base.values()), {})
    return {"trace": trace, "title": rules.TRACES[trace]["title"], "static_default": static_default,
            "requests": stats(r["requests"] for r in base.values()), "tokens_per_run": any_run.get("tokens"),
            "baseline_attainment": base_att,
            "static_curve": [{"instances": n, "gpu_hours": _mean(c, "gpu_hours"), "attainment": _mean(c)}
                             for n, c in statics],
            "rows": rows}


def _rank(rows: list[dict]) -> None:
    """Rank by mean GPU-hours at the baseline's SLO (way 2); those that cannot reach it after, by attainment."""
    def key(r):
        g = (r["tuned"] or {}).get("gpu_hours")
        if g:
            return (0, g["mean"])
        a = (r["default"].get("attainment") or {}).get("mean") or 0.0
        return (1, -a)
    rows.sort(key=key)
    for i, r in enumerate(rows, start=1):
        r["rank"] = i
        r["matched"] = bool((r["tuned"] or {}).get("gpu_hours"))


def overall(traces: list[dict]) -> list[dict]:
    """Per strategy across traces: on how many it reaches the baseline's SLO, its median saving there, mean rank."""
    names = ["static"] + list(rules.STRATEGIES)
    out = []
    for name in names:
        mine = [(t["trace"], r) for t in traces for r in t["rows"] if r["strategy"] == name]
        if not mine:
            continue
        savings = sorted(r["tuned"]["saving_pct"]["mean"] for _, r in mine
                         if r["matched"] and r["tuned"].get("saving_pct"))
        med = (savings[len(savings) // 2] if len(savings) % 2 else
               (savings[len(savings) // 2 - 1] + savings[len(savings) // 2]) / 2) if savings else None
        out.append({"strategy": name, "family": mine[0][1]["family"], "traces": len(mine),
                    "matched": sum(1 for _, r in mine if r["matched"]), "median_saving_pct": med,
                    "mean_rank": sum(r["rank"] for _, r in mine) / len(mine)})
    out.sort(key=lambda x: (-x["matched"] / x["traces"], x["mean_rank"]))
    return out


def digest(runs: list[dict]) -> str:
    """sha256 of the runs' figures rounded to 6 significant digits (stable across builds of the engine)."""
    def rnd(v):
        return float(f"{v:.6g}") if isinstance(v, float) else v
    rows = sorted(json.dumps({k: rnd(v) for k, v in sorted(r.items())}, sort_keys=True) for r in runs)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def build(result: dict, *, static_defaults: dict[str, int], meta: dict) -> dict:
    runs = result["runs"]
    traces = [trace_board(runs, t, static_defaults[t]) for t in static_defaults]
    return {"rules": rules_dict(), "meta": {**meta, "wall_s": result.get("wall_s"), "cpu_s": result.get("cpu_s"),
                                            "workers": result.get("workers"), "runs": len(runs)},
            "digest": digest(runs), "overall": overall(traces), "traces": traces, "runs": runs}


def rules_dict() -> dict:
    return {"deployment": rules.DEPLOYMENT, "load_x": rules.LOAD_X, "day_load_x": rules.DAY_LOAD_X,
            "instances": [rules.MIN_INSTANCES, rules.MAX_INSTANCES], "warm_pool": rules.SPOT_POOL,
            "seeds": list(rules.SEEDS), "tolerance": rules.TOLERANCE, "slo": rules.SLO_TEXT,
            "static_grid": list(rules.STATIC_GRID),
            "strategies": {n: {"family": s["family"], "bundle": s["bundle"], "knob": s["knob"], "grid": s["grid"]}
                           for n, s in rules.STRATEGIES.items()},
            "traces": {n: t["title"] for n, t in rules.TRACES.items()}, "not_on_board": rules.NOT_ON_BOARD}
