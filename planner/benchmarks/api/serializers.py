from __future__ import annotations

from rest_framework import serializers

from planner.benchmarks.models import BenchmarkRun, Validation


class BenchmarkRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = BenchmarkRun
        fields = ["id", "name", "source_format", "model_name", "gpu_name", "tp", "overloaded", "stage_count",
                  "request_count", "deployment", "original_name", "created", "data"]
        read_only_fields = fields


class BenchmarkUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="an inference-perf result folder as .zip/.tar.gz, a vLLM bench serving "
                                           "JSON, or a per-request CSV/JSONL")
    name = serializers.CharField(required=False, default="", max_length=200)
    gpu = serializers.CharField(required=False, default="", max_length=120,
                                help_text="GPU type the server ran on (e.g. h100-80gb), unless the files say")
    model = serializers.CharField(required=False, default="", max_length=200)
    tensor_parallel_size = serializers.IntegerField(required=False, min_value=1, max_value=64)
    max_num_batched_tokens = serializers.IntegerField(required=False, min_value=1)
    max_num_seqs = serializers.IntegerField(required=False, min_value=1)
    max_model_len = serializers.IntegerField(required=False, min_value=0)
    gpu_memory_utilization = serializers.FloatField(required=False, min_value=0.01, max_value=1.0)
    engine_version = serializers.CharField(required=False, default="", max_length=60)

    ENGINE_KEYS = ("model", "tensor_parallel_size", "max_num_batched_tokens", "max_num_seqs", "max_model_len",
                   "gpu_memory_utilization", "engine_version")

    def engine(self) -> dict:
        return {k: self.validated_data[k] for k in self.ENGINE_KEYS if self.validated_data.get(k) not in (None, "")}


class ValidationSerializer(serializers.ModelSerializer):
    runs = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta:
        model = Validation
        fields = ["id", "deployment", "kind", "runs", "efficiency", "pooled", "rows", "seeds", "created"]
        read_only_fields = fields


class CalibrateSerializer(serializers.Serializer):
    run_ids = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=2, max_length=200)
    holdout = serializers.FloatField(default=0.25, min_value=0.01, max_value=0.99)
    seed = serializers.IntegerField(default=0, min_value=0)
    seeds = serializers.IntegerField(default=3, min_value=1, max_value=10)
    maxiter = serializers.IntegerField(default=80, min_value=5, max_value=400)


class ValidateSerializer(serializers.Serializer):
    run_ids = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=200)
    deployment = serializers.IntegerField(min_value=1)
    seeds = serializers.IntegerField(default=3, min_value=1, max_value=10)
