from __future__ import annotations

import math

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from planner.ingest.limits import ASSIGNMENT_MAX_CHARS, MAX_TIME_SCALE, MIN_RATE, MIN_TIME_SCALE, SEED_MAX
from planner.jobs.api.serializers import JobSerializer
from planner.traces.models import Trace

FORMAT_CHOICES = ["auto", "azure", "burstgpt", "mooncake", "native"]


class TraceSerializer(serializers.ModelSerializer):
    job = JobSerializer(read_only=True)
    normalised_url = serializers.SerializerMethodField()
    original_url = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField(help_text="pending, normalising, ready or failed")
    status_reason = serializers.SerializerMethodField(
        help_text="when failed: {message, where, hint, file[, line, column]}; null otherwise"
    )

    class Meta:
        model = Trace
        fields = [
            "id",
            "name",
            "status",
            "status_reason",
            "description",
            "source",
            "format",
            "original_name",
            "size_bytes",
            "content_sha256",
            "options",
            "requests",
            "span_s",
            "input_tokens",
            "output_tokens",
            "failed_requests",
            "source_rows",
            "was_sorted",
            "start_epoch_s",
            "columns",
            "groups",
            "characterisation",
            "characterised",
            "job",
            "created",
            "normalised_url",
            "original_url",
        ]
        read_only_fields = fields

    @extend_schema_field({"type": "string", "enum": [c for c, _ in Trace.Status.choices]})
    def get_status(self, obj) -> str:
        return obj.current_status()[0]

    @extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True})
    def get_status_reason(self, obj) -> dict | None:
        return obj.current_status()[1]

    def get_normalised_url(self, obj) -> str:
        return f"/api/traces/{obj.pk}/download/?kind=normalised"

    def get_original_url(self, obj) -> str:
        return f"/api/traces/{obj.pk}/download/?kind=original"


class TraceListSerializer(TraceSerializer):
    class Meta(TraceSerializer.Meta):
        fields = [f for f in TraceSerializer.Meta.fields if f not in ("characterisation", "groups", "columns")]
        read_only_fields = fields


class TraceUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="CSV or JSON lines, plain or gzip", allow_empty_file=True)
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    format = serializers.ChoiceField(choices=FORMAT_CHOICES, default="auto")
    region = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=ASSIGNMENT_MAX_CHARS,
        help_text='a value, ratios "a:0.6,b:0.4", or JSON {"column": ..., "map": {...}}',
    )
    model = serializers.CharField(required=False, allow_blank=True, max_length=ASSIGNMENT_MAX_CHARS)
    tier = serializers.CharField(required=False, allow_blank=True, max_length=ASSIGNMENT_MAX_CHARS,
                                 help_text="IW-F, IW-N, NIW, ratios or a mapping")
    time_scale = serializers.FloatField(required=False, min_value=MIN_TIME_SCALE, max_value=MAX_TIME_SCALE,
                                        help_text="multiply all times (0.5 halves the span)")
    rate = serializers.FloatField(required=False, min_value=MIN_RATE,
                                  help_text="<1 thins, >1 replicates with jitter (at most TRACE_MAX_RATE_MULTIPLIER)")
    jitter_s = serializers.FloatField(required=False, min_value=0, max_value=86400)
    seed = serializers.IntegerField(required=False, min_value=0, max_value=SEED_MAX)

    def validate_rate(self, value: float) -> float:
        cap = settings.TRACE_MAX_RATE_MULTIPLIER
        if value > cap:
            raise serializers.ValidationError(f"the rate multiplier may be at most {cap:g} here (got {value:g})")
        return value

    def validate(self, attrs):
        for name in ("time_scale", "rate", "jitter_s"):
            if name in attrs and not math.isfinite(attrs[name]):
                raise serializers.ValidationError({name: ["must be a finite number"]})
        return attrs


class TraceSynthSerializer(serializers.Serializer):
    spec = serializers.JSONField(
        help_text="workload generator spec: kind sageserve (default; fixtures/workloads/sageserve_day.json), poisson, "
        "gamma, batch, slinfer or mix (docs/traces.md, Workload generator)"
    )
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=SEED_MAX)
    token_trace = serializers.IntegerField(
        required=False, allow_null=True, help_text="sample token lengths from this trace of yours"
    )
