"""Jobs: every piece of long work is a row here, driven by a Celery task that gets only the id."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from planner.accounts.models import TeamOwned


class Job(TeamOwned):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        # Ended, but part of the work failed: a fan-in parent (comparison, forecast run) some of
        # whose children failed while the rest could still be aggregated. last_error says which.
        PARTIAL = "partial", "Partly failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.PARTIAL)

    kind = models.CharField(max_length=64, db_index=True, help_text="handler name, e.g. trace.characterise")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress = models.FloatField(default=0.0, help_text="0-100")
    message = models.CharField(max_length=300, blank=True, default="")
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True, help_text="small summary; big results live on the domain row")
    last_error = models.JSONField(null=True, blank=True, help_text="{type, message, where, hint}")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    celery_task_id = models.CharField(max_length=64, blank=True, default="")
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    # Reconciliation (planner/jobs/reaper.py): the row is the truth, the broker message is a hint.
    dispatched = models.DateTimeField(
        null=True, blank=True, db_index=True,
        help_text="when the job was last handed to the runner (set in the creating transaction: an outbox mark); "
                  "null for a fan-in parent that waits for its children",
    )
    heartbeat = models.DateTimeField(null=True, blank=True, db_index=True,
                                     help_text="last sign of life of the running attempt")
    attempts = models.PositiveIntegerField(default=0, help_text="how many times a runner claimed the job")
    worker = models.CharField(max_length=200, blank=True, default="",
                              help_text="runner:host:pid of the attempt that claimed the job")
    work_requests = models.PositiveBigIntegerField(
        null=True, blank=True,
        help_text="how many requests the job simulates (its size): at JOBS_LONG_REQUESTS or more it runs on the "
                  "long-work queue and counts against the team's JOBS_MAX_LONG_PER_TEAM")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def is_long(self) -> bool:
        return (self.work_requests or 0) >= settings.JOBS_LONG_REQUESTS

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def duration_s(self) -> float | None:
        if self.started is None:
            return None
        end = self.finished
        if end is None:
            from django.utils import timezone

            end = timezone.now()
        return (end - self.started).total_seconds()
