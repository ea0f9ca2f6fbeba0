from __future__ import annotations

from rest_framework import serializers

from forecasts.core.backtest import LOWER_IS_BETTER
from forecasts.core.methods import METHODS
from forecasts.core.series import GROUP_COLUMNS, METRICS, parse_duration, parse_resolution
from forecasts.models import ForecastRun, ForecastSeries
from planner.jobs.api.serializers import JobSerializer

MAX_HORIZON_S = 86400


def _list(value) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value]
    raise serializers.ValidationError("give a list or a comma-separated string")


class ForecastRunCreateSerializer(serializers.Serializer):
    """What a new run needs. Durations accept 1h, 30min, 2d or seconds."""

    trace = serializers.IntegerField(help_text="id of a trace of your team")
    group_by = serializers.JSONField(
        required=False,
        default="region,model,tier",
        help_text="columns to split series by: region, model, tier (any subset)",
    )
    metrics = serializers.JSONField(
        required=False, default="input_tps", help_text="input_tps, output_tps, rps (any subset)"
    )
    method = serializers.CharField(required=False, default="auto", help_text="auto or a method name")
    candidates = serializers.JSONField(
        required=False, default=None, allow_null=True, help_text="methods compared when method=auto (default: all)"
    )
    resolution = serializers.CharField(required=False, default="5min", help_text="1min, 5min, 15min or 60min")
    horizon = serializers.CharField(required=False, default="1h", help_text="forecast horizon, at most 1d")
    backtest = serializers.CharField(required=False, default="2d", help_text="trailing span held out for backtests")
    level = serializers.FloatField(required=False, default=0.9, help_text="prediction interval probability")
    rank_metric = serializers.CharField(required=False, default="wmape")

    def validate_group_by(self, value):
        cols = _list(value)
        bad = [c for c in cols if c not in GROUP_COLUMNS]
        if bad or len(set(cols)) != len(cols):
            raise serializers.ValidationError(
                f"{bad or cols} is not a set of distinct columns; use any of {', '.join(GROUP_COLUMNS)}"
            )
        return cols

    def validate_metrics(self, value):
        metrics = _list(value)
        bad = [m for m in metrics if m not in METRICS]
        if bad or not metrics:
            raise serializers.ValidationError(f"unknown metric(s) {bad}; use any of {', '.join(METRICS)}")
        return metrics

    def validate_method(self, value):
        if value != "auto" and value not in METHODS:
            raise serializers.ValidationError(f"unknown method {value!r}; use auto or one of {', '.join(METHODS)}")
        return value

    def validate_candidates(self, value):
        if value in (None, ""):
            return None
        names = _list(value)
        bad = [m for m in names if m not in METHODS]
        if bad or not names:
            raise serializers.ValidationError(f"unknown method(s) {bad}; use any of {', '.join(METHODS)}")
        return names

    def validate_resolution(self, value):
        try:
            return parse_resolution(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def _duration(self, value, name, maximum=None):
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None
        if maximum and seconds > maximum:
            raise serializers.ValidationError(f"{name} {value!r} is longer than {maximum // 3600} h")
        return seconds

    def validate_horizon(self, value):
        return self._duration(value, "horizon", MAX_HORIZON_S)

    def validate_backtest(self, value):
        return self._duration(value, "backtest")

    def validate_level(self, value):
        if not 0.5 <= value < 1:
            raise serializers.ValidationError("use a probability between 0.5 and 0.99, e.g. 0.9")
        return value

    def validate_rank_metric(self, value):
        if value not in LOWER_IS_BETTER:
            raise serializers.ValidationError(f"use one of {', '.join(sorted(LOWER_IS_BETTER))}")
        return value

    def validate(self, attrs):
        if attrs["horizon"] < attrs["resolution"]:
            raise serializers.ValidationError({"horizon": "shorter than one bin; make it at least the resolution"})
        return attrs

    def to_params(self) -> dict:
        d = self.validated_data
        params = {
            "group_by": d["group_by"],
            "metrics": d["metrics"],
            "method": d["method"],
            "resolution_s": d["resolution"],
            "horizon_s": d["horizon"],
            "backtest_s": d["backtest"],
            "level": d["level"],
            "rank_metric": d["rank_metric"],
        }
        if d.get("candidates"):
            params["candidates"] = d["candidates"]
        return params


class ForecastSeriesSerializer(serializers.ModelSerializer):
    job_status = serializers.CharField(source="job.status", read_only=True, default=None)
    forecast = serializers.SerializerMethodField()

    class Meta:
        model = ForecastSeries
        fields = [
            "id",
            "position",
            "label",
            "group",
            "metric",
            "job",
            "job_status",
            "chosen_method",
            "best_method",
            "peak",
            "peak_upper",
            "leaderboard",
            "forecast",
        ]
        read_only_fields = fields

    def get_forecast(self, obj) -> dict | None:
        return (obj.result or {}).get("forecast")


class ForecastSeriesDetailSerializer(ForecastSeriesSerializer):
    result = serializers.JSONField(read_only=True)

    class Meta(ForecastSeriesSerializer.Meta):
        fields = ForecastSeriesSerializer.Meta.fields + ["result"]
        read_only_fields = fields


class ForecastRunSerializer(serializers.ModelSerializer):
    job = JobSerializer(read_only=True)
    status = serializers.CharField(read_only=True)
    series = ForecastSeriesSerializer(many=True, read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = ForecastRun
        fields = ["id", "trace", "params", "status", "summary", "job", "created", "created_by", "url", "series"]
        read_only_fields = fields

    def get_url(self, obj) -> str:
        return f"/forecasts/{obj.pk}/"


class ForecastRunListSerializer(ForecastRunSerializer):
    class Meta(ForecastRunSerializer.Meta):
        fields = [f for f in ForecastRunSerializer.Meta.fields if f != "series"]
        read_only_fields = fields
