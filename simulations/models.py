"""A simulation run: one scenario (and strategy) simulated by the engine as a job."""

from __future__ import annotations

from django.db import models

from planner.accounts.models import TeamOwned
from planner.labels import Labelled


class SimulationRun(TeamOwned, Labelled):
    name = models.CharField(max_length=200)
    scenario = models.JSONField(help_text="the scenario JSON (docs/simulator.md)")
    strategy = models.CharField(max_length=64, blank=True, default="",
                                help_text="autoscaler name overriding the scenario's strategy.autoscaler")
    mode = models.CharField(max_length=10, default="fast", help_text="fast or reference")
    result_mode = models.CharField(max_length=10, default="table",
                                   help_text="table (per-request table, exact) or streaming (bounded memory)")
    chunk_s = models.FloatField(null=True, blank=True, help_text="streaming: simulated seconds per chunk")
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    result = models.JSONField(null=True, blank=True, help_text="SimulationResult.to_dict()")
    requests_simulated = models.BigIntegerField(default=0)
    wall_s = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"

    @property
    def status(self) -> str:
        return self.job.status if self.job_id else "unknown"

    @property
    def streamed(self) -> bool:
        return self.result_mode == "streaming"

    @property
    def summary(self) -> dict:
        return (self.result or {}).get("summary", {})
