"""Real serving benchmarks a team uploaded, and validations of deployments against them.

A ``BenchmarkRun`` holds one run as the core schema parsed it (``data``: planner.benchmarks.core.schema.BenchmarkRun)
plus the columns used to find it (model, GPU, TP). A ``Validation`` is measured vs simulated for one deployment
(or physics coefficients) on chosen runs: the per-stage rows and the pooled errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

from planner.accounts.models import TeamOwned

if TYPE_CHECKING:  # the pydantic schema is built on first use, not when Django loads the models
    from planner.benchmarks.core.schema import BenchmarkRun as RunSchema


class BenchmarkRun(TeamOwned):
    name = models.CharField(max_length=200)
    source_format = models.CharField(max_length=20)
    model_name = models.CharField(max_length=200, help_text="the served model as the benchmark names it")
    gpu_name = models.CharField(max_length=120)
    tp = models.PositiveIntegerField("tensor-parallel degree")
    overloaded = models.BooleanField(default=False, help_text="some stage had > 10 % failures")
    stage_count = models.PositiveIntegerField(default=1)
    request_count = models.PositiveIntegerField(default=0, help_text="measured requests (all stages)")
    deployment = models.ForeignKey("hardware.Deployment", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="benchmark_runs",
                                   help_text="the catalogue deployment of the same model x GPU x TP, if any")
    data = models.JSONField(help_text="the run as parsed (planner/benchmarks/core/schema.py)")
    original_name = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.name

    def schema(self) -> RunSchema:
        from planner.benchmarks.core.schema import BenchmarkRun as RunSchema

        return RunSchema.model_validate(self.data)

    @property
    def engine(self) -> dict:
        return self.data.get("engine", {})


class Validation(TeamOwned):
    """Measured vs simulated on ``runs``: rows per stage, pooled medians, the coefficients used."""

    deployment = models.ForeignKey("hardware.Deployment", null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="validations")
    runs = models.ManyToManyField(BenchmarkRun, related_name="validations")
    kind = models.CharField(max_length=20, default="validate", help_text="validate; heldout or heldout-other-models (after a calibration)")
    efficiency = models.JSONField(default=dict, blank=True, help_text="physics coefficients used ({} = the "
                                  "deployment's own latency model)")
    rows = models.JSONField(default=list)
    pooled = models.JSONField(default=dict)
    seeds = models.PositiveIntegerField(default=3)

    class Meta:
        ordering = ["-created", "-id"]

    @property
    def median_e2e_error(self) -> float | None:
        block = self.pooled.get("e2e_mean")
        return block["median"] if block else None

    @property
    def median_ttft_error(self) -> float | None:
        block = self.pooled.get("ttft_mean")
        return block["median"] if block else None
