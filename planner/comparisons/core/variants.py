"""Which runs a comparison is made of: strategies, optionally crossed with schedulers or knob overrides.

A *variant* is ``{"key", "strategy", "scheduler", "knobs"}``; its key is unique within a comparison
("lt-ua", "reactive-unified@pf", or a label given by the user). Django-free.
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
SCHEDULERS = ("fcfs", "edf", "pf", "dpa")
_KEY = re.compile(r"^[A-Za-z0-9_.@+-]{1,80}$")


class VariantError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def build_variants(strategies=None, schedulers=None, variants=None) -> list[dict]:
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
    if not out:
        raise VariantError("strategies", "give at least one strategy, e.g. [\"reactive-unified\", \"lt-ua\"]")
    seen: set[str] = set()
    for i, v in enumerate(out):
        if not _KEY.match(v["key"]):
            raise VariantError(f"variants[{i}].key", "use 1-80 letters, digits and . _ - @ + only")
        if v["key"] in seen:
            raise VariantError(f"variants[{i}].key", f"duplicate key {v['key']!r}; give each variant its own key")
        seen.add(v["key"])
    return out


def pick_baseline(variants: list[dict], baseline: str | None) -> str:
    """The baseline key: the one asked for (a key or a strategy name), else reactive-unified, else the first."""
    keys = [v["key"] for v in variants]
    if baseline:
        if baseline in keys:
            return baseline
        matches = [v["key"] for v in variants if v["strategy"] == baseline]
        if matches:
            return matches[0]
        raise VariantError("baseline", f"{baseline!r} is not one of the variants {keys}")
    for v in variants:
        if v["strategy"] == "reactive-unified":
            return v["key"]
    return keys[0]
