"""Capacity plans: a scenario (JSON), the job that solves it, and the stored result."""

from __future__ import annotations

from django.db import models

from planner.accounts.models import TeamOwned
from planner.labels import Labelled


class CapacityPlan(TeamOwned, Labelled):
    name = models.CharField(max_length=200)
    scenario = models.JSONField(help_text="scenario JSON, see docs/optimizer.md")
    hours = models.PositiveIntegerField(default=24, help_text="planning horizon in hours (1-168)")
    job = models.OneToOneField(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="capacity_plan"
    )
    result = models.JSONField(null=True, blank=True, help_text="planner.optimizer.multiperiod.PlanResult.to_dict()")
    solver_status = models.CharField(max_length=20, blank=True, default="", help_text="optimal | time_limit | ...")
    total_cost = models.FloatField(null=True, blank=True)
    static_peak_cost = models.FloatField(null=True, blank=True)
    solve_time_s = models.FloatField(null=True, blank=True)
    feasible = models.BooleanField(null=True, blank=True, help_text="every demand covered (no shortfall)")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hours} h)"

    @property
    def savings_vs_static(self) -> float | None:
        """Only for a plan that covers its demand (an uncovered plan's low cost is not a saving)."""
        if self.total_cost is None or not self.static_peak_cost or self.feasible is False:
            return None
        return 1.0 - self.total_cost / self.static_peak_cost

    @property
    def outcome(self) -> dict:
        from planner.plans.outcome import outcome

        return outcome(self)
