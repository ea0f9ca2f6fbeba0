from rest_framework import serializers

from planner.api.scenarios import resolve_scenario
from planner.capacity.models import CapacitySearch
from planner.jobs.api.serializers import JobSerializer


class CapacitySearchSerializer(serializers.ModelSerializer):
    job = JobSerializer(read_only=True)
    status = serializers.CharField(read_only=True)
    probes = serializers.SerializerMethodField()

    class Meta:
        model = CapacitySearch
        fields = ["id", "name", "status", "spec", "scenario", "job", "round", "probes", "max_requests", "answer",
                  "created"]
        read_only_fields = fields

    def get_probes(self, obj) -> dict:
        from planner.capacity.selectors import probe_counts

        return probe_counts(obj)


class CapacitySearchCreateSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    scenario = serializers.JSONField(required=False, help_text="a comparison scenario object (docs/comparisons.md)")
    scenario_fixture = serializers.CharField(required=False, help_text="or the name of a file in fixtures/scenarios/")
    spec = serializers.JSONField(required=False, default=dict,
                                 help_text='the search: {"strategies": ["static", "lt-ua"], "targets": {"IW-F": 0.99}, '
                                           '"probability": 0.9, "seeds": [1, 2, 3], "band_draws": 20, "gpu_options": '
                                           '{}, "quota_gpus": {}} (docs/capacity.md)')

    def validate(self, attrs):
        attrs = resolve_scenario(attrs)
        if not isinstance(attrs.get("spec"), dict):
            raise serializers.ValidationError({"spec": "must be a JSON object"})
        return attrs
