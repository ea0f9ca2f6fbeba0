from rest_framework import serializers

from planner.jobs.api.serializers import JobSerializer
from planner.opscaling.models import OperatorPlan


class OperatorPlanSerializer(serializers.ModelSerializer):
    job = JobSerializer(read_only=True)

    class Meta:
        model = OperatorPlan
        fields = [
            "id",
            "name",
            "spec",
            "trace",
            "job",
            "feasible",
            "prefill_gpu_savings",
            "decode_gpu_savings",
            "memory_savings",
            "runtime_s",
            "created",
            "result",
        ]
        read_only_fields = fields


class OperatorPlanListSerializer(OperatorPlanSerializer):
    class Meta(OperatorPlanSerializer.Meta):
        fields = [f for f in OperatorPlanSerializer.Meta.fields if f not in ("spec", "result")]
        read_only_fields = fields


class OperatorPlanCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    spec = serializers.JSONField(help_text="operator-level plan spec, see docs/opscale.md")

    def validate_spec(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object (see docs/opscale.md)")
        return value
