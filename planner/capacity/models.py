"""A capacity search: the cheapest fleet per strategy that meets the SLOs at a required probability.

The parent Job (``CapacitySearch.job``, kind ``capacity.search``) waits while its children run: ``capacity.step``
jobs (each replays the search over the probes so far and fans out the missing ones) and one ``capacity.probe`` job
per (fleet, seed) - each a ``Probe`` row, unique per search, which is the memo that keeps a (fleet, seed) from being
simulated twice. A probe whose result can move the search (the last of its fleet's seeds) counts a change; one step
at a time is claimed for the changes not yet replayed (``stepping``, ``changes``, ``changes_seen``), so the search
moves on after every finished fleet, not after every round.
"""

from __future__ import annotations

from django.db import models

from planner.accounts.models import TeamOwned
from planner.labels import Labelled


class CapacitySearch(TeamOwned, Labelled):
    name = models.CharField(max_length=200, blank=True, default="")
    scenario = models.JSONField(help_text="the base scenario (comparison scenario: workload, fleet, SLOs)")
    spec = models.JSONField(default=dict, help_text="the search's input (planner.capacity.core.spec.SearchSpec)")
    state = models.JSONField(default=dict, blank=True, help_text="start counts, the last replay's sub-searches")
    answer = models.JSONField(default=dict, blank=True, help_text="planner.decisions.answer.build_answer")
    job = models.OneToOneField("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="capacity_search")
    round = models.PositiveIntegerField(default=0, help_text="steps started; claimed with a conditional UPDATE")
    stepping = models.BooleanField(default=False, help_text="a step is queued or running (one at a time)")
    changes = models.PositiveIntegerField(default=0, help_text="finished probes that can move the search")
    changes_seen = models.PositiveIntegerField(default=0, help_text="``changes`` when the last step began")
    finishing = models.BooleanField(default=False, help_text="set once by the step that found nothing missing")
    max_requests = models.BigIntegerField(default=0, help_text="the bound on simulated requests checked at start")
    plan = models.ForeignKey("plans.CapacityPlan", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="capacity_checks", help_text="the plan this search checks by simulation")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.name or f"Capacity search #{self.pk}"

    @property
    def status(self) -> str:
        return self.job.status if self.job_id else "queued"


class Probe(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINAL = (Status.DONE, Status.FAILED, Status.CANCELLED)

    search = models.ForeignKey(CapacitySearch, on_delete=models.CASCADE, related_name="probes")
    pid = models.TextField(help_text="sub-search|fleet|seed|load (planner.capacity.core.driver.probe_id)")
    round = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    outcome = models.JSONField(default=dict, blank=True)
    error = models.JSONField(null=True, blank=True)
    job = models.OneToOneField("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="probe")
    wall_s = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["search", "pid"], name="uniq_probe_per_search")]

    def __str__(self) -> str:
        return f"{self.search_id}:{self.pid} ({self.status})"
