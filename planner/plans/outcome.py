"""What a plan honestly is: the solver's status is not the answer when demand is left uncovered.

``outcome(plan)`` -> {"status", "headline", "covered_share", "savings"}: ``infeasible`` when the solver found no
plan or the plan leaves demand uncovered (the diagnosis goes on top and no savings are claimed), ``no demand``
when there is nothing to serve (a $0 plan is not "100 % cheaper"), otherwise the job's status.
"""

from __future__ import annotations


def covered_share(result: dict) -> float | None:
    """Share of the target input TPS-hours served (locally or rerouted), over every endpoint and hour."""
    target = served = 0.0
    for c in result.get("coverage", []):
        t = float(c.get("target") or 0.0)
        s = float(c.get("capacity", 0.0)) + float(c.get("rerouted_out", 0.0)) - float(c.get("rerouted_in", 0.0))
        target += t
        served += min(max(s, 0.0), t)
    return None if target <= 0 else served / target


def outcome(plan) -> dict:
    job = plan.job if plan.job_id else None
    result = plan.result or {}
    if job is None and not result:
        return {"status": "queued", "headline": "", "covered_share": None, "savings": None}
    if job is not None and job.status != "succeeded":
        headline = (job.last_error or {}).get("message", "") if job.status == "failed" else job.message
        return {"status": job.status, "headline": headline, "covered_share": None, "savings": None}
    share = covered_share(result)
    demand = sum(float(c.get("target") or 0.0) for c in result.get("coverage", []))
    if result.get("status") not in ("optimal", "time_limit"):
        return {"status": "infeasible", "covered_share": None, "savings": None,
                "headline": f"No plan: the solver stopped with status {result.get('status')!r}."}
    if plan.feasible is False or result.get("diagnosis"):
        covered = "" if share is None else f" Only {100 * share:.1f} % of the demand is covered."
        return {"status": "infeasible", "covered_share": share, "savings": None,
                "headline": f"This plan does not cover the demand; it is not a valid answer.{covered}"}
    if demand <= 0:
        return {"status": "no demand", "covered_share": None, "savings": None,
                "headline": "There is no demand in this horizon: nothing to plan, so no cost or saving is claimed."}
    return {"status": "succeeded", "covered_share": share, "savings": plan.savings_vs_static, "headline": ""}
