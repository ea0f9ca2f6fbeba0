"""One-at-a-time sensitivity of a fleet comparison's decision: which input would change the answer most. Django-free.

From the comparison's own runs, no new simulation:

- the SLO targets with half the misses allowed (99 % -> 99.5 %): the table's answer recomputed;
- each GPU type's price +20 %: every run's cost with that type's share raised, the cheapest strategy that meets
  the targets recomputed (a row's ``cost_by_gpu``; comparisons stored without it skip this);
- the load x 1.2: the chosen strategy replayed at 1.2x the requests, once per seed, as child runs of the comparison
  (planner/comparisons/load_check.py, ``summary["load_check"]``): the share of seeds on which it still meets every
  target (the comparison's rule: every seed); a comparison stored before that, or whose replays all failed, says
  the load was not replayed.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from planner.comparisons.core.table import _groups, misses, strategy_table

PRICE_STEP = 1.2
LOAD_STEP = 1.2


def _slo(summary: Mapping, variants: list, targets: Mapping, choice: str) -> dict:
    tight = {t: 1.0 - (1.0 - float(v)) / 2.0 for t, v in targets.items()}
    table = strategy_table(dict(summary), variants, tight)
    runs = _groups(summary["rows"], variants).get(choice, [])
    missed = sum(1 for r in runs if misses(r, tight))
    named = ", ".join(f"{t} {v:.2%}" for t, v in tight.items())
    new = table["answer"]
    if new is None:
        effect = f"at {named} no strategy meets every target on every seed"
    elif new != choice:
        effect = f"at {named} the answer becomes {new}"
    else:
        effect = f"at {named} {choice} still meets every target and stays the cheapest that does"
    return {"input": "SLO target (half the misses allowed)", "effect": effect, "changes_answer": new != choice,
            "magnitude": missed / len(runs) if runs else 0.0}


def _price(summary: Mapping, variants: list, targets: Mapping, choice: str) -> list[dict]:
    table = strategy_table(dict(summary), variants, dict(targets))
    meets = {r["key"]: r["meets"] for r in table["rows"]}
    baseline = next((r["key"] for r in table["rows"] if r["is_baseline"]), None)
    groups = _groups(summary["rows"], variants)
    gpus = sorted({g for r in summary["rows"] for g in (r.get("cost_by_gpu") or {}) if g})
    if not gpus or not all(r.get("cost_by_gpu") is not None for r in summary["rows"]):
        return []
    out = []
    for gpu in gpus:
        cost = {k: float(np.median([r["cost_usd"] + (PRICE_STEP - 1.0) * (r["cost_by_gpu"].get(gpu) or 0.0)
                                    for r in runs])) for k, runs in groups.items() if runs}
        before = float(np.median([r["cost_usd"] for r in groups.get(choice, [])] or [0.0]))
        ok = [k for k in cost if meets.get(k)]
        if not ok or not before:
            continue
        winner = min(ok, key=lambda k: (cost[k], k != baseline))
        change = cost[choice] / before - 1.0
        effect = (f"{choice}'s cost {change:+.0%}; the cheapest that meets the targets becomes {winner}"
                  if winner != choice else f"{choice}'s cost {change:+.0%}; it stays the cheapest that meets them")
        out.append({"input": f"{gpu} price +{PRICE_STEP - 1:.0%}", "effect": effect, "changes_answer": winner != choice,
                    "magnitude": abs(change)})
    return out


def _load(summary: Mapping, targets: Mapping, choice: str) -> dict:
    check = summary.get("load_check") or {}
    rows = check.get("rows") or []
    if check.get("strategy") != choice or not rows:
        return {"input": f"load x{LOAD_STEP:g}", "effect": "not replayed (a comparison stored before the load check, "
                "or its replays failed); a capacity search of this scenario replays the chosen fleet at 1.2x the load",
                "changes_answer": False, "magnitude": 0.0, "replayed": False}
    missed = [r for r in rows if misses(r, dict(targets))]
    worst = sorted({m for r in missed for m in misses(r, dict(targets))})
    factor = float(check.get("factor") or LOAD_STEP)
    effect = (f"{choice} meets every target on {len(rows) - len(missed)} of {len(rows)} seeds at {factor:g}x the "
              f"load" + (f" ({'; '.join(worst)})" if worst else ""))
    if check.get("failed"):
        effect += f"; {len(check['failed'])} replay(s) failed"
    return {"input": f"load x{factor:g}", "effect": effect, "changes_answer": bool(missed),
            "magnitude": len(missed) / len(rows), "replayed": True}


def comparison_sensitivity(summary: Mapping, variants: list, targets: Mapping, choice: str) -> list[dict]:
    """[{"input", "effect", "changes_answer", "magnitude"}] for the card (same shape as a capacity search's)."""
    out = [_load(summary, targets, choice)]
    out.append(_slo(summary, variants, targets, choice))
    out += _price(summary, variants, targets, choice)
    return out


def most_sensitive(sens: list[dict]) -> str | None:
    top = max((s for s in sens if s.get("replayed", True)), key=lambda s: (s["changes_answer"], s["magnitude"]),
              default=None)
    if top is None:
        return None
    return top["input"] if top["changes_answer"] else f"none of the inputs tried changes it; the largest effect: {top['input']}"
