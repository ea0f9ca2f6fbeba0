"""An advisory back-test: a past window (scenario with its trace), the replicas that ran, the alternatives to replay
on it, the job that runs them and the stored result (planner/backtests/core/run.py)."""

from __future__ import annotations

from django.db import models

from planner.accounts.models import TeamOwned


class Backtest(TeamOwned):
    name = models.CharField(max_length=200, blank=True, default="")
    scenario = models.JSONField(help_text="the engine scenario of the window (trace + fleet + SLOs)")
    recorded = models.JSONField(help_text="{endpoint: [[t_s, replicas], ...]} parsed from the replica file")
    alternatives = models.JSONField(default=list, help_text="comparison variants replayed beside the as-run")
    measured = models.JSONField(null=True, blank=True, help_text="{metric: [[minute, seconds], ...]} measured latency")
    seeds = models.JSONField(default=list, blank=True, help_text="seeds for the deltas' bands ([] = one run)")
    startup_s = models.FloatField(null=True, blank=True, help_text="start-up of an as-run instance (s)")
    job = models.OneToOneField("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="backtest")
    result = models.JSONField(null=True, blank=True, help_text="planner.backtests.core.run.run_backtest()")
    as_run_exact = models.BooleanField(null=True, blank=True, help_text="the as-run replay matched the record")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.name or f"Back-test #{self.pk}"
