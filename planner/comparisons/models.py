"""A Comparison = one scenario x a list of strategy variants, run in parallel, aggregated against a baseline.

Each variant (a strategy, optionally with a scheduler or knob override) is one child Job and one
``VariantResult`` row; the parent Job (``Comparison.job``) stays queued while the children run and is
dispatched by the last child to finish, which then aggregates (savings table, figures' data).
"""

from __future__ import annotations

from django.db import models

from planner.accounts.models import TeamOwned
from planner.labels import Labelled


class Comparison(TeamOwned, Labelled):
    name = models.CharField(max_length=200, blank=True, default="")
    scenario = models.JSONField(help_text="the engine scenario (trace + fleet + SLOs + knobs), strategy left open")
    variants = models.JSONField(default=list, help_text="[{key, strategy, scheduler, knobs}] one per child job")
    baseline = models.CharField(max_length=80, help_text="key of the variant the savings are measured against")
    projection = models.JSONField(default=dict, blank=True,
                                  help_text="paper-style extrapolation: {models, regions, days_per_week, ...}")
    job = models.OneToOneField("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="comparison")
    aggregation_started = models.BooleanField(default=False, help_text="set once by the last child to finish")
    summary = models.JSONField(default=dict, blank=True, help_text="aggregate: savings table, per-endpoint breakdown")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.name or f"Comparison #{self.pk}"

    @property
    def status(self) -> str:
        """queued / running / succeeded / partial / failed / cancelled, from the parent job and the strategy runs
        (planner.comparisons.outcome)."""
        from planner.comparisons.outcome import status_of

        return status_of(self)


class StrategyRuns(models.Manager):
    """A comparison's strategy runs (``comp.results``): the load check's replays are read through ``all_runs``."""

    def get_queryset(self):
        return super().get_queryset().exclude(role=VariantResult.LOAD)


class VariantResult(models.Model):
    LOAD = "load"  # role of a replay of the chosen strategy at a higher load (the card's load sensitivity)

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINAL = (Status.DONE, Status.FAILED, Status.CANCELLED)

    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="results")
    key = models.CharField(max_length=80, help_text="unique label within the comparison, e.g. lt-ua or reactive-unified@pf")
    position = models.PositiveIntegerField(default=0)
    strategy = models.CharField(max_length=40)
    scheduler = models.CharField(max_length=20, blank=True, default="")
    knobs = models.JSONField(default=dict, blank=True)
    job = models.OneToOneField("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="variant")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    metrics = models.JSONField(default=dict, blank=True, help_text="normalised run summary (see core/summary.py)")
    error = models.JSONField(null=True, blank=True)
    wall_s = models.FloatField(null=True, blank=True)
    role = models.CharField(max_length=10, blank=True, default="",
                            help_text="'' for a strategy run; 'load' for a replay of the chosen strategy at 1.2x the load")

    objects = StrategyRuns()
    all_runs = models.Manager()

    class Meta:
        ordering = ["position", "id"]
        base_manager_name = "all_runs"
        constraints = [models.UniqueConstraint(fields=["comparison", "key"], name="uniq_variant_key")]

    def __str__(self) -> str:
        return f"{self.comparison_id}:{self.key} ({self.status})"
