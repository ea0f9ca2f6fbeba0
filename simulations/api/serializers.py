from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from simulations.engine.scenario.runoptions import openapi_schema
from simulations.models import SimulationRun


@extend_schema_field(openapi_schema())
class ResultOptionsField(serializers.JSONField):
    """The run option ``result``, validated by its one pydantic schema (simulations.engine.scenario.runoptions) in
    simulations.services.create_run; errors name ``result.<field>``."""


class SimulationRunSerializer(serializers.ModelSerializer):
    status = serializers.CharField(read_only=True)
    progress = serializers.SerializerMethodField()
    summary = serializers.SerializerMethodField()
    warnings = serializers.SerializerMethodField(
        help_text="what the run simulated beyond context limits or outside fitted latency ranges (summary.validity)")
    preemptions_per_request = serializers.SerializerMethodField(
        help_text="max / p99 preemptions of one request and how many were preempted (summary.preemptions_per_request)")

    class Meta:
        model = SimulationRun
        fields = ["id", "name", "strategy", "mode", "result_mode", "chunk_s", "job", "status", "progress", "created", "requests_simulated",
                  "wall_s", "warnings", "preemptions_per_request", "summary", "scenario"]
        read_only_fields = fields

    def get_progress(self, obj) -> float:
        return obj.job.progress if obj.job_id else 0.0

    def get_summary(self, obj) -> dict:
        return obj.summary

    def get_preemptions_per_request(self, obj) -> dict | None:
        return (obj.summary or {}).get("preemptions_per_request")

    def get_warnings(self, obj) -> list[str]:
        return list((obj.summary.get("validity") or {}).get("warnings") or [])


class SimulationRunListSerializer(SimulationRunSerializer):
    class Meta(SimulationRunSerializer.Meta):
        fields = [f for f in SimulationRunSerializer.Meta.fields if f != "scenario"]
        read_only_fields = fields


class SimulationRunCreateSerializer(serializers.Serializer):
    scenario = serializers.JSONField(required=False, help_text="scenario JSON object (docs/simulator.md)")
    fixture = serializers.CharField(required=False, help_text="name of a scenario in fixtures/scenarios/")
    strategy = serializers.CharField(required=False, allow_blank=True, default="")
    mode = serializers.ChoiceField(choices=["fast", "reference"], default="fast")
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    result = ResultOptionsField(
        required=False, default=None, allow_null=True,
        help_text='how the run keeps its results: {"mode": "table"} (default: the per-request table, exact, every '
                  'page) or {"mode": "streaming", "chunk_s": 3600} (month scale: bounded memory, accumulated '
                  'results, hourly rollups, percentiles within 0.5 %; caps PLANNER_MAX_STREAM_*)')

    def validate(self, attrs):
        if not attrs.get("scenario") and not attrs.get("fixture"):
            raise serializers.ValidationError({"scenario": "give a scenario JSON object or a fixture name"})
        if attrs.get("scenario") is not None and not isinstance(attrs["scenario"], dict):
            raise serializers.ValidationError({"scenario": "must be a JSON object"})
        return attrs
