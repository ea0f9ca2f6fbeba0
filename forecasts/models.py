"""Forecast runs: one row per request, one ForecastSeries row per (group, metric) series."""

from __future__ import annotations

from django.db import models

from planner.accounts.models import TeamOwned


class ForecastRun(TeamOwned):
    """Forecasts and backtests of a trace's series. ``job`` is the parent job that fans out."""

    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="forecast_runs")
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    params = models.JSONField(
        default=dict,
        help_text="group_by, metrics, method, candidates, resolution_s, horizon_s, level, backtest_s, rank_metric",
    )
    summary = models.JSONField(default=dict, blank=True, help_text="filled when every series has finished")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"forecast run #{self.pk} of trace #{self.trace_id}"

    @property
    def status(self) -> str:
        """queued/running until the parent and every series job ended; then succeeded, partial or failed."""
        from planner.jobs.models import Job

        if self.job is None:
            return "failed"
        if self.job.status in (Job.Status.FAILED, Job.Status.CANCELLED):
            return self.job.status
        if self.job.status in Job.ACTIVE:
            return self.job.status
        states = list(self.series.values_list("job__status", flat=True))
        if any(s in Job.ACTIVE for s in states):
            return "running"
        if states and all(s == Job.Status.SUCCEEDED for s in states):
            return "succeeded"
        if any(s == Job.Status.SUCCEEDED for s in states):
            return Job.Status.PARTIAL  # some series were forecast, some failed: not "succeeded"
        return "failed" if states else "succeeded"


class ForecastSeries(models.Model):
    run = models.ForeignKey(ForecastRun, on_delete=models.CASCADE, related_name="series")
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    position = models.PositiveIntegerField(default=0)
    label = models.CharField(max_length=300)
    group = models.JSONField(default=dict, help_text='{"region": ..., "model": ..., "tier": ...}')
    metric = models.CharField(max_length=20)
    chosen_method = models.CharField(max_length=40, blank=True, default="")
    best_method = models.CharField(max_length=40, blank=True, default="")
    peak = models.FloatField(null=True, blank=True, help_text="forecast peak over the next hour after the trace")
    peak_upper = models.FloatField(null=True, blank=True)
    leaderboard = models.JSONField(default=list, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="forecasting.core.pipeline.analyse_series output")

    class Meta:
        ordering = ["run", "position"]

    def __str__(self) -> str:
        return self.label
