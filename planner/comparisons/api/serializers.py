from rest_framework import serializers

from planner.comparisons.core.variants import SCHEDULERS, STRATEGIES
from planner.comparisons.models import Comparison, VariantResult
from planner.jobs.api.serializers import JobSerializer


class VariantResultSerializer(serializers.ModelSerializer):
    job = serializers.PrimaryKeyRelatedField(read_only=True)
    job_status = serializers.CharField(source="job.status", read_only=True, default=None)
    progress = serializers.FloatField(source="job.progress", read_only=True, default=None)
    totals = serializers.SerializerMethodField()

    class Meta:
        model = VariantResult
        fields = ["key", "strategy", "scheduler", "knobs", "status", "job", "job_status", "progress", "wall_s",
                  "error", "totals"]
        read_only_fields = fields

    def get_totals(self, obj) -> dict:
        return (obj.metrics or {}).get("totals", {})


class ComparisonSerializer(serializers.ModelSerializer):
    job = JobSerializer(read_only=True)
    results = VariantResultSerializer(many=True, read_only=True)
    status = serializers.CharField(read_only=True)
    answer = serializers.SerializerMethodField(help_text="the decision card of a comparison of any kind with results "
                                               "(docs/capacity.md describes its shape); null before the aggregate")

    class Meta:
        model = Comparison
        fields = ["id", "name", "status", "baseline", "variants", "projection", "scenario", "job", "results",
                  "summary", "answer", "created"]
        read_only_fields = fields


    def get_answer(self, obj) -> dict | None:
        from planner.comparisons.kinds import answer_of

        return answer_of(obj)


class ComparisonCreateSerializer(serializers.Serializer):
    """A comparison of any kind: the scenario's ``kind`` ("fleet" by default, "serverless", "operator-level")
    decides what the variants are. Fleet: strategies, schedulers, variants, bundles, seeds, tune, projection;
    serverless: systems; operator-level: the scenario alone (a plan spec)."""

    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    scenario = serializers.JSONField(required=False, help_text="an engine scenario object (see docs/comparisons.md)")
    scenario_fixture = serializers.CharField(required=False, help_text="or the name of a file in fixtures/scenarios/")
    strategies = serializers.ListField(child=serializers.ChoiceField(choices=sorted(STRATEGIES)), required=False,
                                      default=list)
    schedulers = serializers.ListField(child=serializers.ChoiceField(choices=list(SCHEDULERS)), required=False,
                                      default=list)
    variants = serializers.ListField(child=serializers.DictField(), required=False, default=list,
                                     help_text='knob variants: [{"strategy": "lt-ua", "knobs": {...}, "key": "..."}]')
    systems = serializers.ListField(child=serializers.CharField(max_length=40), required=False, default=list,
                                    max_length=10, help_text="serverless scenarios: the systems to compare, e.g. "
                                                             '["sllm", "slinfer"] (default: the scenario\'s own)')
    baseline = serializers.CharField(required=False, allow_blank=True,
                                     help_text="the variant the others are measured against")
    # named strategy bundles, workload seeds, the equal-SLO baseline sweep
    bundles = serializers.ListField(child=serializers.CharField(max_length=120), required=False, default=list,
                                    help_text='named strategy bundles, e.g. ["sageserve-code.lt-ua"] '
                                              "(GET /api/comparisons/bundles/ lists them)")
    seeds = serializers.ListField(child=serializers.IntegerField(), required=False, default=list, max_length=10,
                                  help_text="run every variant once per workload seed, e.g. [2025, 2026, 2027]")
    tune = serializers.DictField(required=False, default=dict,
                                 help_text='equal-SLO baseline sweep: {"base": "reactive-unified", "grid": '
                                           '{"scale_out_above": [0.5, 0.7]}, "tolerance": 0.005}; {} = none')
    projection = serializers.DictField(required=False, default=dict,
                                       help_text='paper-style extrapolation multipliers, e.g. {"models": 3, "regions": 4}')


class RoutingSweepCreateSerializer(serializers.Serializer):
    """A routing sweep: instance routers side by side as the arrival rate steps past the knee."""

    rates = serializers.ListField(child=serializers.FloatField(min_value=0.001, max_value=10_000), min_length=1,
                                  max_length=16, help_text="arrival rates, requests per second")
    routers = serializers.ListField(child=serializers.CharField(max_length=40), min_length=1, max_length=10,
                                    required=False, help_text="instance routers (default: least-requests, "
                                                              "memory-usage, round-robin, llumnix)")
    minutes = serializers.FloatField(min_value=0.01, max_value=30, default=10.0,
                                     help_text="simulated minutes per (rate, router) point")
    knee_attainment = serializers.FloatField(min_value=0.01, max_value=0.99, default=0.9,
                                             help_text="the knee is the first rate whose SLO attainment is below this")
