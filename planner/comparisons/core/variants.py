"""Which runs a comparison is made of: strategies, optionally crossed with schedulers or knob overrides.

A *variant* is ``{"key", "strategy", "scheduler", "knobs"}``; its key is unique within a comparison
("lt-ua", "reactive-unified@pf", or a label given by the user). Optional keys:

- ``bundle``: a registered strategy bundle (bundles.py) whose routers, engine options and signal rule apply;
- ``seed``: the workload and engine seed of this run, and ``group`` the key without the seed suffix (with
  ``seeds`` every variant runs once per seed, keys ``<group>+s<seed>``);
- ``role``: "tuning" for the baseline-knob sweep of an equal-SLO comparison (``tune``), ``tune_point`` its knobs.
Django-free.
"""

from __future__ import annotations

import re

STRATEGIES = {
    "static": "fixed instance counts from the scenario (no scaling)",
    "reactive-siloed": "SageServe section 4 baseline: separate IW / NIW pools, scale out > 70 %, in < 30 %",
    "reactive-unified": "SageServe 'Reactive' (O365 today): one pool per (region, model), 70 % / 30 %, 15 s cooldown",
    "lt-i": "SageServe LT-I: hourly forecast + ILP, apply the change immediately",
    "lt-u": "SageServe LT-U: hourly forecast + ILP, move towards the target only as utilisation crosses 70 % / 30 %",
    "lt-ua": "SageServe LT-UA: LT-U plus, in the last 20 min of the hour, go beyond the target when traffic is "
             ">= 5x or <= 0.5x the forecast",
}
# engine autoscalers a bundle may run that are not offered as a bare strategy (they need the bundle's params or
# predictor, e.g. PreServe's capacity profile): a strategy family adds them here
BUNDLE_STRATEGIES: dict = {}
SCHEDULERS = ("fcfs", "edf", "pf", "dpa")
_KEY = re.compile(r"^[A-Za-z0-9_.@+-]{1,80}$")


class VariantError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def build_variants(strategies=None, schedulers=None, variants=None, *, bundles=None, seeds=None,
                   tune=None) -> list[dict]:
    """Strategies x schedulers (each scheduler only if given) plus explicit variants, validated.

    ``strategies``: list of strategy names. ``schedulers``: optional list; when given every strategy
    runs once per scheduler and keys become ``strategy@scheduler``. ``variants``: explicit
    ``[{"strategy", "scheduler"?, "knobs"?, "key"?}]`` for knob variants (e.g. a different beta).
    """
    out: list[dict] = []
    strategies = list(strategies or [])
    schedulers = [s.lower() for s in (schedulers or [])]
    for i, name in enumerate(strategies):
        if name not in STRATEGIES:
            raise VariantError(f"strategies[{i}]", f"unknown strategy {name!r}; use one of {sorted(STRATEGIES)}")
    for i, sched in enumerate(schedulers):
        if sched not in SCHEDULERS:
            raise VariantError(f"schedulers[{i}]", f"unknown scheduler {sched!r}; use one of {list(SCHEDULERS)}")
    for name in strategies:
        if schedulers:
            for sched in schedulers:
                out.append({"key": f"{name}@{sched}", "strategy": name, "scheduler": sched, "knobs": {}})
        else:
            out.append({"key": name, "strategy": name, "scheduler": "", "knobs": {}})
    for i, v in enumerate(variants or []):
        where = f"variants[{i}]"
        if not isinstance(v, dict):
            raise VariantError(where, "must be an object like {\"strategy\": \"lt-ua\", \"knobs\": {...}}")
        name = v.get("strategy")
        if name not in STRATEGIES:
            raise VariantError(f"{where}.strategy", f"unknown strategy {name!r}; use one of {sorted(STRATEGIES)}")
        sched = str(v.get("scheduler") or "").lower()
        if sched and sched not in SCHEDULERS:
            raise VariantError(f"{where}.scheduler", f"unknown scheduler {sched!r}; use one of {list(SCHEDULERS)}")
        knobs = v.get("knobs") or {}
        if not isinstance(knobs, dict):
            raise VariantError(f"{where}.knobs", "must be an object of autoscaler parameters")
        key = str(v.get("key") or (name + (f"@{sched}" if sched else "") + (f"#{i + 1}" if knobs else "")))
        out.append({"key": key, "strategy": name, "scheduler": sched, "knobs": dict(knobs)})
    out.extend(_bundle_variants(bundles))
    if not out:
        raise VariantError("strategies", "give at least one strategy, e.g. [\"reactive-unified\", \"lt-ua\"]")
    out.extend(tuning_variants(tune, out))
    out = _cross_seeds(out, seeds)
    seen: set[str] = set()
    for i, v in enumerate(out):
        if not _KEY.match(v["key"]):
            raise VariantError(f"variants[{i}].key", "use 1-80 letters, digits and . _ - @ + only")
        if v["key"] in seen:
            raise VariantError(f"variants[{i}].key", f"duplicate key {v['key']!r}; give each variant its own key")
        seen.add(v["key"])
    return out


def pick_baseline(variants: list[dict], baseline: str | None) -> str:
    """The baseline key: the one asked for (a key, a group, a bundle or a strategy name; with seeds the first
    seed's run), else reactive-unified, else the first. Never a tuning run."""
    keys = [v["key"] for v in variants]
    plain = [v for v in variants if v.get("role") != "tuning"]
    if baseline:
        if baseline in keys:
            return baseline
        for field in ("group", "bundle", "strategy"):
            matches = [v["key"] for v in plain if v.get(field) == baseline]
            if matches:
                return matches[0]
        raise VariantError("baseline", f"{baseline!r} is not one of the variants {keys}")
    for v in plain:
        if v["strategy"] == "reactive-unified":
            return v["key"]
    return plain[0]["key"] if plain else keys[0]


def _bundle_variants(bundles) -> list[dict]:
    from planner.comparisons.core.bundles import BundleError, get_bundle

    out = []
    for i, name in enumerate(bundles or []):
        try:
            b = get_bundle(str(name), where=f"bundles[{i}]")
        except BundleError as exc:
            raise VariantError(exc.field, exc.message) from None
        if b.strategy not in STRATEGIES and b.strategy not in BUNDLE_STRATEGIES:
            raise VariantError(f"bundles[{i}]", f"bundle {b.name!r} runs unknown strategy {b.strategy!r}")
        knobs = dict(b.params)
        if b.predictor:
            knobs.setdefault("forecast_method", b.predictor)
        out.append({"key": b.name, "strategy": b.strategy, "scheduler": str(b.policy.get("scheduler") or ""),
                    "knobs": knobs, "bundle": b.name})
    return out


DEFAULT_TUNE_GRID = {"scale_out_above": [0.3, 0.5, 0.7], "scale_in_below": [0.1, 0.25], "cooldown_s": [15.0]}
MAX_TUNE_POINTS = 24


def tuning_variants(tune, variants: list[dict]) -> list[dict]:
    """The baseline-knob sweep of an equal-SLO comparison: ``tune = {"base": <variant key>, "grid": {knob: [values]},
    "tolerance": 0.005}`` -> one variant per grid point, with the base variant's strategy, bundle and knobs and the
    point's knobs on top (keys ``tune.<base>.<n>``). ``"points": [{knob: value}, ...]`` instead of a grid gives the
    points explicitly. Default grid: reactive thresholds 0.3/0.5/0.7 out x 0.1/0.25 in, 15 s cooldown."""
    if not tune:
        return []
    if not isinstance(tune, dict):
        raise VariantError("tune", 'must be an object like {"base": "reactive-unified", "grid": {...}}')
    keys = [v["key"] for v in variants]
    base_key = tune.get("base") or next((v["key"] for v in variants if v["strategy"].startswith("reactive")), None)
    base = next((v for v in variants if v["key"] == base_key or v["strategy"] == base_key), None)
    if base is None:
        raise VariantError("tune.base", f"{base_key!r} is not one of the variants {keys}")
    grid = tune.get("grid") or DEFAULT_TUNE_GRID
    if not isinstance(grid, dict) or not grid or not all(isinstance(v, list) and v for v in grid.values()):
        raise VariantError("tune.grid", 'must map knobs to non-empty lists, e.g. {"scale_out_above": [0.5, 0.7]}')
    explicit = tune.get("points")
    if explicit is not None and (not isinstance(explicit, list) or not explicit
                                 or not all(isinstance(p, dict) and p for p in explicit)):
        raise VariantError("tune.points", 'must be a non-empty list of knob objects, e.g. [{"scale_out_above": 0.5}]')
    tol = tune.get("tolerance", 0.005)
    if not isinstance(tol, (int, float)) or not 0 <= tol < 1:
        raise VariantError("tune.tolerance", "must be a share between 0 and 1 (0.005 = half a point)")
    points = [{}]
    for knob, values in grid.items():
        points = [{**p, str(knob): v} for p in points for v in values]
    if explicit is not None:
        points = [dict(p) for p in explicit]
    if len(points) > MAX_TUNE_POINTS:
        raise VariantError("tune.grid", f"{len(points)} points; at most {MAX_TUNE_POINTS} (each is a full run)")
    out = []
    for n, point in enumerate(points, start=1):
        out.append({**base, "key": f"tune.{base['key']}.{n}", "knobs": {**base["knobs"], **point},
                    "role": "tuning", "tune_point": point, "tune_base": base["key"], "tune_tolerance": float(tol)})
    return out


def _cross_seeds(variants: list[dict], seeds) -> list[dict]:
    if not seeds:
        return variants
    if not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
        raise VariantError("seeds", "must be a list of integers, e.g. [2025, 2026, 2027]")
    if len(set(seeds)) != len(seeds):
        raise VariantError("seeds", "each seed once")
    return [{**v, "key": f"{v['key']}+s{seed}", "group": v["key"], "seed": seed} for v in variants for seed in seeds]
