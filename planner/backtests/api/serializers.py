from rest_framework import serializers

from planner.backtests.models import Backtest
from planner.jobs.api.serializers import JobSerializer


class BacktestSerializer(serializers.ModelSerializer):
    job = JobSerializer(read_only=True)
    validation = serializers.SerializerMethodField(help_text="per endpoint: its deployment's validation against "
                                                             "real runs (docs/validation.md), or not checked")

    class Meta:
        model = Backtest
        fields = ["id", "name", "scenario", "recorded", "measured", "alternatives", "seeds", "startup_s", "job",
                  "as_run_exact", "created", "result", "validation"]
        read_only_fields = fields

    def get_validation(self, obj) -> list[dict]:
        from planner.backtests.selectors import deployment_checks

        return deployment_checks(obj.team, obj.scenario)


class BacktestListSerializer(BacktestSerializer):
    class Meta(BacktestSerializer.Meta):
        fields = ["id", "name", "job", "as_run_exact", "created"]
        read_only_fields = fields


class BacktestCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    scenario = serializers.JSONField(help_text="the window's engine scenario (docs/backtests.md)")
    replicas_csv = serializers.CharField(max_length=20_000_000, trim_whitespace=False,
                                         help_text="CSV timestamp,endpoint,replicas, or a Prometheus query_range "
                                                   "answer (JSON) of kube_deployment_status_replicas")
    latency_csv = serializers.CharField(max_length=5_000_000, required=False, allow_blank=True, default="",
                                        trim_whitespace=False,
                                        help_text="optional CSV minute,ttft_p50_s,ttft_p95_s[,e2e_p50_s,e2e_p95_s]")
    origin = serializers.CharField(required=False, allow_blank=True, default="",
                                   help_text="ISO time of the trace's t = 0 (when the file has ISO timestamps)")
    strategies = serializers.ListField(child=serializers.CharField(max_length=80), required=False, default=list)
    bundles = serializers.ListField(child=serializers.CharField(max_length=120), required=False, default=list)
    seeds = serializers.ListField(child=serializers.IntegerField(min_value=0, max_value=2**31 - 1), required=False,
                                  default=list, max_length=10,
                                  help_text="run every replay once per seed; the deltas get min-max bands")
    startup_s = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0, max_value=86400)
    max_gap_s = serializers.FloatField(required=False, default=900.0, min_value=1, max_value=86400)

    def validate_scenario(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object (an engine scenario, see docs/simulator.md)")
        return value
