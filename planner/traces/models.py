"""A trace: the original upload (or synthesiser spec) and its normalised Parquet file.

Files live under ``MEDIA_ROOT/traces/<storage_key>/``: ``original.<ext>`` (uploads only),
``normalised.parquet`` (the contract in docs/traces.md) and ``characterisation.json`` (series and
CDFs for the charts; the summary is also stored on the row).
"""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.db import models

from planner.accounts.models import TeamOwned

NORMALISE = "trace.normalise"


def trace_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "traces"


class Trace(TeamOwned):
    class Source(models.TextChoices):
        UPLOAD = "upload", "Uploaded file"
        SYNTH = "synth", "Synthesised"

    class Status(models.TextChoices):
        """An upload is stored at once (``pending``); a worker job normalises it (``normalising``), then it is
        ``ready`` (usable by forecasts, plans and simulations) or ``failed`` with ``status_reason``."""

        PENDING = "pending", "Pending"
        NORMALISING = "normalising", "Normalising"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.UPLOAD)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.READY, db_index=True)
    status_reason = models.JSONField(
        null=True, blank=True, help_text="why normalisation failed: {message, where, hint, file[, line, column]}"
    )
    format = models.CharField(max_length=20, db_index=True, help_text="azure, burstgpt, mooncake, native or synth")
    storage_key = models.CharField(max_length=32, unique=True, default="", editable=False)
    original_name = models.CharField(max_length=255, blank=True, default="")
    original_file = models.CharField(max_length=100, blank=True, default="", help_text="file name in the trace folder")
    size_bytes = models.BigIntegerField(default=0)
    content_sha256 = models.CharField(max_length=64, db_index=True)
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the content and the options; unique per team")
    options = models.JSONField(default=dict, blank=True, help_text="transforms applied at upload, or the synth spec")
    requests = models.BigIntegerField(default=0)
    span_s = models.FloatField(default=0.0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    failed_requests = models.BigIntegerField(default=0)
    source_rows = models.BigIntegerField(default=0)
    was_sorted = models.BooleanField(default=True)
    start_epoch_s = models.FloatField(null=True, blank=True, help_text="wall-clock start when the file had timestamps")
    columns = models.JSONField(default=list, blank=True)
    groups = models.JSONField(default=dict, blank=True, help_text='{"region|model|tier": requests}')
    characterisation = models.JSONField(null=True, blank=True, help_text="summary computed by trace.characterise")
    characterised = models.DateTimeField(null=True, blank=True)
    job = models.ForeignKey(
        "jobs.Job",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the latest job of the trace: its normalisation, then its characterisation",
    )

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [models.UniqueConstraint(fields=["team", "fingerprint"], name="trace_unique_content_per_team")]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"

    def current_status(self) -> tuple[str, dict | None]:
        """(status, reason) as they are now: a normalisation job that ended without finishing its trace (cancelled,
        its worker lost, a crash) makes a pending or normalising trace ``failed`` with the job's error."""
        job = self.job
        if (
            self.status in (self.Status.PENDING, self.Status.NORMALISING)
            and job is not None
            and job.kind == NORMALISE
            and job.status in job.FINAL
        ):
            error = dict(job.last_error or {})
            reason = {
                "message": error.get("message") or f"the normalisation job ended {job.status}",
                "where": error.get("where") or f"job #{job.pk}",
                "hint": error.get("hint") or "upload the file again",
                "file": self.original_name,
            }
            return self.Status.FAILED, reason
        return self.status, self.status_reason

    @property
    def format_label(self) -> str:
        """The format for pages: an upload sent as ``auto`` has none until its normalisation detects one."""
        if self.format != "auto":
            return self.format
        return "not detected" if self.status == self.Status.FAILED else "detected when normalised"

    @property
    def is_ready(self) -> bool:
        return self.status == self.Status.READY

    @staticmethod
    def new_storage_key() -> str:
        return uuid.uuid4().hex

    @property
    def directory(self) -> Path:
        return trace_root() / self.storage_key

    @property
    def normalised_file(self) -> Path:
        """Absolute path of the normalised Parquet (read it with planner.ingest.normalised.read_trace)."""
        return self.directory / "normalised.parquet"

    @property
    def original_path(self) -> Path | None:
        return self.directory / self.original_file if self.original_file else None

    @property
    def characterisation_file(self) -> Path:
        return self.directory / "characterisation.json"

    @property
    def group_keys(self) -> list[str]:
        return sorted(self.groups)
