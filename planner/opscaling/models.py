"""Operator-level plans: a spec (JSON, see docs/opscale.md), the job that computes it, and the stored result."""

from __future__ import annotations

from django.db import models

from planner.accounts.models import TeamOwned


class OperatorPlan(TeamOwned):
    name = models.CharField(max_length=200)
    spec = models.JSONField(help_text="planner.opscale.spec.OpscaleSpec as JSON")
    trace = models.ForeignKey("traces.Trace", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    job = models.OneToOneField(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="operator_plan"
    )
    result = models.JSONField(null=True, blank=True, help_text="planner.opscale.plan.run_plan()")
    prefill_gpu_savings = models.FloatField(null=True, blank=True, help_text="GPU-seconds vs model-level, prefill")
    decode_gpu_savings = models.FloatField(null=True, blank=True, help_text="GPU-seconds vs model-level, decode")
    memory_savings = models.FloatField(null=True, blank=True, help_text="memory GB-seconds vs model-level, prefill")
    feasible = models.BooleanField(null=True, blank=True, help_text="every window met its SLOs")
    runtime_s = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"
