from __future__ import annotations

from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.utils import html

from planner.accounts.access import team_of
from planner.catalogue.capacity import ThetaTarget
from planner.catalogue.perfcsv import TIME_UNITS, TOKEN_TIME_MODES
from planner.hardware.models import Deployment, GpuPrice, GpuType, ModelProfile
from planner.hardware.selectors import can_edit, gpus_for, models_for


class _EditableMixin(serializers.Serializer):
    editable = serializers.SerializerMethodField(help_text="true when the caller's team may change this entry")

    def get_editable(self, obj) -> bool:
        request = self.context.get("request")
        return bool(request and can_edit(request.user, obj))

    def to_service_dict(self) -> dict:
        return dict(self.validated_data)


class GpuPriceSerializer(serializers.ModelSerializer):
    # the catalogue schema's bounds (planner/catalogue/schema.py), stated here so the API schema documents them
    usd_per_gpu_hour = serializers.FloatField(min_value=0.0, max_value=1e6)

    class Meta:
        model = GpuPrice
        fields = ["cloud", "region", "kind", "usd_per_gpu_hour", "source", "as_of", "assumed"]


class GpuTypeSerializer(_EditableMixin, serializers.ModelSerializer):
    prices = GpuPriceSerializer(many=True, required=False, help_text="replaces all prices when given")

    class Meta:
        model = GpuType
        fields = [
            "id",
            "name",
            "display_name",
            "vendor",
            "memory_gb",
            "bf16_tflops",
            "memory_bandwidth_tbs",
            "gpus_per_vm",
            "source",
            "device_kind",
            "idle_w",
            "busy_w",
            "power_source",
            "power_assumed",
            "prices",
            "builtin",
            "editable",
            "created",
        ]
        read_only_fields = ["builtin", "created"]
        validators: list = []  # uniqueness per team is enforced by the service (update_or_create by name)

    def validate_prices(self, prices: list) -> list:
        """Prices replace the stored ones, so each needs every field even in a PATCH (nested fields are
        otherwise optional there)."""
        needed = ("cloud", "region", "kind", "usd_per_gpu_hour", "source", "as_of")
        for i, p in enumerate(prices):
            missing = [k for k in needed if k not in p]
            if missing:
                raise serializers.ValidationError({i: {k: "is required (prices replace the stored ones)" for k in
                                                       missing}})
        return prices

    def to_service_dict(self) -> dict:
        data = dict(self.validated_data)
        if "prices" in data:
            data["prices"] = [
                {**p, "as_of": p["as_of"].isoformat(), "usd_per_gpu_hour": float(p["usd_per_gpu_hour"])}
                for p in data["prices"]
            ]
        return data


class ModelProfileSerializer(_EditableMixin, serializers.ModelSerializer):
    kv_bytes_per_token = serializers.IntegerField(
        required=False, min_value=1, help_text="computed from layers, kv_heads, head_dim when omitted"
    )
    weights_gb = serializers.FloatField(required=False, help_text="parameters x dtype bytes when omitted")

    class Meta:
        model = ModelProfile
        fields = [
            "id",
            "name",
            "display_name",
            "parameters_billion",
            "layers",
            "kv_heads",
            "head_dim",
            "dtype_bytes",
            "kv_bytes_per_token",
            "weights_gb",
            "aliases",
            "source",
            "max_model_len",
            "max_model_len_source",
            "builtin",
            "editable",
            "created",
        ]
        read_only_fields = ["builtin", "created"]
        validators: list = []


class CoefficientsField(serializers.DictField):
    """Named non-negative finite numbers (seconds; the service refuses unknown names, naming the field). In a
    form-encoded PATCH an absent object is absent (not an empty one that would wipe the stored coefficients)."""

    child = serializers.FloatField(min_value=0, max_value=7 * 86400)

    def get_value(self, dictionary):
        value = super().get_value(dictionary)
        if html.is_html_input(dictionary) and value in ({}, ""):
            return empty
        return value


class DeploymentSerializer(_EditableMixin, serializers.ModelSerializer):
    model = serializers.PrimaryKeyRelatedField(queryset=ModelProfile.objects.none())
    gpu = serializers.PrimaryKeyRelatedField(queryset=GpuType.objects.none())
    model_name = serializers.CharField(source="model.name", read_only=True)
    gpu_name = serializers.CharField(source="gpu.name", read_only=True)
    prefill = CoefficientsField(
        help_text="{c0 s, c1 s/token, c2 s/token^2} (optional c_sq s per sum of squared prompt sizes, c_req s per "
        "prompt): one prefill iteration over T tokens"
    )
    decode = CoefficientsField(help_text="{c0 s, c_batch s/request, c_ctx s/context token}: one decode iteration")
    startup = CoefficientsField(required=False, help_text="seconds: vm_acquire_s, load_same_region_s, ...")
    kv_capacity_tokens = serializers.IntegerField(
        required=False, min_value=1, max_value=10**12, help_text="recomputed from memory and model when omitted"
    )
    theta_tps = serializers.FloatField(
        required=False, min_value=0, help_text="recomputed from the latency model at theta_target when omitted"
    )
    theta_target = serializers.DictField(required=False, help_text=f"defaults {ThetaTarget().as_dict()}")
    gpus_per_instance = serializers.IntegerField(required=False, min_value=1, max_value=4096)
    device_kind = serializers.CharField(read_only=True, help_text="gpu or cpu (the device type's)")
    max_model_len = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, help_text="context limit in tokens (<= the model's); null = the model's"
    )
    context_limit = serializers.IntegerField(read_only=True, help_text="the limit in force: max_model_len, else the model's")
    fitted_range = serializers.DictField(
        read_only=True, help_text="measured range the latency model was fitted on: {batch_size, prompt_tokens, "
        "batch_prompt_tokens, context_tokens, batch_context_tokens: [min, max]}; {} = unknown"
    )
    device_power = serializers.DictField(
        read_only=True, allow_null=True, help_text="watts per device used for energy: this deployment's, else its device type's"
    )

    class Meta:
        model = Deployment
        fields = [
            "id",
            "name",
            "model",
            "gpu",
            "model_name",
            "gpu_name",
            "tp",
            "gpus_per_instance",
            "memory_utilisation",
            "max_batch_size",
            "max_batch_tokens",
            "prefill",
            "decode",
            "kv_capacity_tokens",
            "theta_tps",
            "theta_target",
            "theta_detail",
            "startup",
            "price_cloud",
            "price_region",
            "basis",
            "estimated",
            "estimate_rule",
            "source",
            "device_kind",
            "idle_w",
            "busy_w",
            "power_source",
            "power_assumed",
            "device_power",
            "max_model_len",
            "context_limit",
            "fitted_range",
            "fit_report",
            "builtin",
            "editable",
            "created",
        ]
        read_only_fields = ["name", "theta_detail", "fit_report", "builtin", "created", "device_kind", "device_power",
                            "context_limit", "fitted_range"]
        validators: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None:
            self.fields["model"].queryset = models_for(request.user)
            self.fields["gpu"].queryset = gpus_for(request.user)

    def to_service_dict(self) -> dict:
        """Catalogue-style dict for services.save_deployment; a PATCH merges into the stored entry and
        recomputes KV capacity and theta unless the request gives them."""
        data = dict(self.validated_data)
        if self.instance is not None:
            base = self.instance.as_catalogue_dict()
            base.pop("kv_capacity_tokens")
            base.pop("theta_tps")
            base.update({"model": self.instance.model, "gpu": self.instance.gpu})
            for key in ("prefill", "decode", "startup"):  # a PATCH of some coefficients keeps the others
                if key in data and isinstance(base.get(key), dict):
                    data[key] = {**base[key], **data[key]}
            base.update(data)
            data = base
        for key, needed in (("prefill", ("c0", "c1")), ("decode", ("c0", "c_batch"))):
            missing = [k for k in needed if k not in (data.get(key) or {})]
            if missing:
                raise serializers.ValidationError({key: f"needs {', '.join(missing)} (seconds)"})
        data.pop("name", None)
        return data


class DeploymentListSerializer(DeploymentSerializer):
    class Meta(DeploymentSerializer.Meta):
        fields = [f for f in DeploymentSerializer.Meta.fields if f not in ("fit_report", "theta_detail")]


class ProfileUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="a catalogue JSON file or a perf_model.csv-format table")
    time_unit = serializers.ChoiceField(choices=TIME_UNITS, default="auto")
    token_time = serializers.ChoiceField(
        choices=TOKEN_TIME_MODES,
        default="auto",
        help_text="per_token: per decode iteration; total: for token_size tokens",
    )
    split = serializers.ChoiceField(choices=["rows", "configs"], default="rows")
    holdout = serializers.FloatField(default=0.2, min_value=0.01, max_value=0.9)
    seed = serializers.IntegerField(default=0)
    loss = serializers.ChoiceField(choices=["l1", "l2"], default="l1")
    prefill_form = serializers.ChoiceField(
        choices=["contract", "rich"], default="contract", help_text="rich adds c_sq*sum(prompt^2) + c_req*prompts"
    )


class ImportSummarySerializer(serializers.Serializer):
    format = serializers.CharField()
    gpu_types = serializers.ListField(child=serializers.DictField())
    models = serializers.ListField(child=serializers.DictField())
    deployments = serializers.ListField(child=serializers.DictField())


def team_for(request):
    return team_of(request.user)
