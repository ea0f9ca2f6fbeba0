from rest_framework import serializers

from planner.jobs.api.serializers import JobSerializer
from planner.plans.models import CapacityPlan


class CapacityPlanSerializer(serializers.ModelSerializer):
    job = JobSerializer(read_only=True)
    savings_vs_static = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = CapacityPlan
        fields = [
            "id",
            "name",
            "hours",
            "scenario",
            "job",
            "solver_status",
            "feasible",
            "total_cost",
            "static_peak_cost",
            "savings_vs_static",
            "solve_time_s",
            "created",
            "result",
        ]
        read_only_fields = [
            "id",
            "job",
            "solver_status",
            "feasible",
            "total_cost",
            "static_peak_cost",
            "savings_vs_static",
            "solve_time_s",
            "created",
            "result",
        ]


class CapacityPlanListSerializer(CapacityPlanSerializer):
    class Meta(CapacityPlanSerializer.Meta):
        fields = [f for f in CapacityPlanSerializer.Meta.fields if f not in ("scenario", "result")]


class CapacityPlanCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    hours = serializers.IntegerField(min_value=1, max_value=168, required=False, allow_null=True, default=None)
    scenario = serializers.JSONField(help_text="scenario JSON, see docs/optimizer.md")

    def validate_scenario(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object (see docs/optimizer.md)")
        return value
