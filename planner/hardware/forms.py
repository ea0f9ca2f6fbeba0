from __future__ import annotations

from django import forms

from planner.catalogue.perfcsv import TIME_UNITS, TOKEN_TIME_MODES
from planner.hardware.models import Deployment, GpuPrice


class DeploymentForm(forms.Form):
    model = forms.ModelChoiceField(queryset=None)
    gpu = forms.ModelChoiceField(queryset=None, label="GPU type")
    tp = forms.IntegerField(min_value=1, label="Tensor-parallel degree")
    gpus_per_instance = forms.IntegerField(min_value=1, required=False, help_text="defaults to the TP degree")
    prefill_c0 = forms.FloatField(min_value=0, label="prefill c0 (s)")
    prefill_c1 = forms.FloatField(min_value=0, label="prefill c1 (s per batch token)")
    prefill_c2 = forms.FloatField(min_value=0, initial=0.0, label="prefill c2 (s per token²)")
    prefill_c_sq = forms.FloatField(
        min_value=0,
        initial=0.0,
        required=False,
        label="prefill c_sq (s per Σ prompt²)",
        help_text="optional richer form: attention, quadratic per prompt",
    )
    prefill_c_req = forms.FloatField(
        min_value=0,
        initial=0.0,
        required=False,
        label="prefill c_req (s per prompt)",
        help_text="optional richer form: per-prompt overhead of an iteration",
    )
    decode_c0 = forms.FloatField(min_value=0, label="decode c0 (s)")
    decode_c_batch = forms.FloatField(min_value=0, label="decode c_batch (s per request)")
    decode_c_ctx = forms.FloatField(min_value=0, initial=0.0, label="decode c_ctx (s per context token)")
    max_batch_size = forms.IntegerField(min_value=1, initial=512)
    max_batch_tokens = forms.IntegerField(min_value=1, initial=8192)
    memory_utilisation = forms.FloatField(min_value=0.05, max_value=1.0, initial=0.9)
    kv_capacity_tokens = forms.IntegerField(min_value=1, required=False, help_text="blank: computed from memory")
    theta_tps = forms.FloatField(min_value=0, required=False, help_text="blank: computed from the latency model")
    vm_acquire_s = forms.FloatField(min_value=0, initial=155.0, label="VM acquisition (s)")
    load_same_region_s = forms.FloatField(min_value=0, initial=600.0, label="model load, same region (s)")
    load_cross_region_s = forms.FloatField(min_value=0, initial=7200.0, label="model load, other region (s)")
    spot_reclaim_s = forms.FloatField(min_value=0, initial=65.0, label="spot reclaim used by the engine (s)")
    spot_reclaim_median_s = forms.FloatField(min_value=0, initial=60.0)
    spot_reclaim_max_s = forms.FloatField(min_value=0, initial=300.0)
    price_cloud = forms.CharField(initial="azure")
    price_region = forms.CharField(initial="eastus")
    basis = forms.ChoiceField(choices=Deployment.Basis.choices, initial="manual")
    estimate_rule = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    source = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    idle_w = forms.FloatField(min_value=0, max_value=1e5, required=False, label="idle power (W per device)",
                              help_text="blank: the device type's")
    busy_w = forms.FloatField(min_value=0, max_value=1e5, required=False, label="busy power (W per device)",
                              help_text="blank: the device type's")
    power_source = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    power_assumed = forms.BooleanField(required=False, initial=True, label="power figures are assumed")

    def __init__(self, *args, models_qs=None, gpus_qs=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].queryset = models_qs
        self.fields["gpu"].queryset = gpus_qs

    @staticmethod
    def initial_from(dep: Deployment) -> dict:
        names = [
            "tp",
            "gpus_per_instance",
            "prefill_c0",
            "prefill_c1",
            "prefill_c2",
            "prefill_c_sq",
            "prefill_c_req",
            "decode_c0",
            "decode_c_batch",
            "decode_c_ctx",
            "max_batch_size",
            "max_batch_tokens",
            "memory_utilisation",
            "vm_acquire_s",
            "load_same_region_s",
            "load_cross_region_s",
            "spot_reclaim_s",
            "spot_reclaim_median_s",
            "spot_reclaim_max_s",
            "price_cloud",
            "price_region",
            "basis",
            "estimate_rule",
            "source",
            "idle_w",
            "busy_w",
            "power_source",
            "power_assumed",
        ]
        return {"model": dep.model_id, "gpu": dep.gpu_id, **{n: getattr(dep, n) for n in names}}

    def to_service_dict(self) -> dict:
        c = self.cleaned_data
        startup = {
            k: c[k]
            for k in (
                "vm_acquire_s",
                "load_same_region_s",
                "load_cross_region_s",
                "spot_reclaim_s",
                "spot_reclaim_median_s",
                "spot_reclaim_max_s",
            )
        }
        out = {
            "model": c["model"],
            "gpu": c["gpu"],
            "tp": c["tp"],
            "gpus_per_instance": c["gpus_per_instance"],
            "prefill": {
                "c0": c["prefill_c0"],
                "c1": c["prefill_c1"],
                "c2": c["prefill_c2"] or 0.0,
                **(
                    {"c_sq": c.get("prefill_c_sq") or 0.0, "c_req": c.get("prefill_c_req") or 0.0}
                    if c.get("prefill_c_sq") or c.get("prefill_c_req")
                    else {}
                ),
            },
            "decode": {"c0": c["decode_c0"], "c_batch": c["decode_c_batch"], "c_ctx": c["decode_c_ctx"] or 0.0},
            "max_batch_size": c["max_batch_size"],
            "max_batch_tokens": c["max_batch_tokens"],
            "memory_utilisation": c["memory_utilisation"],
            "startup": startup,
            "price_cloud": c["price_cloud"],
            "price_region": c["price_region"],
            "basis": c["basis"],
            "estimated": c["basis"] in ("derived", "estimated"),
            "estimate_rule": c["estimate_rule"],
            "source": c["source"],
            **_power_of(c),
        }
        for k in ("kv_capacity_tokens", "theta_tps"):
            if c.get(k) is not None:
                out[k] = c[k]
        return out


def _power_of(c: dict) -> dict:
    return {"idle_w": c.get("idle_w"), "busy_w": c.get("busy_w"), "power_source": c.get("power_source") or "",
            "power_assumed": bool(c.get("power_assumed"))}


class GpuTypeForm(forms.Form):
    name = forms.SlugField(max_length=120, help_text="the hardware label used in profile tables, e.g. h100-80gb")
    display_name = forms.CharField(required=False)
    vendor = forms.CharField(required=False)
    memory_gb = forms.FloatField(min_value=0.1, label="memory per GPU (GB)")
    bf16_tflops = forms.FloatField(min_value=0.1, required=False, label="dense BF16 TFLOPS")
    memory_bandwidth_tbs = forms.FloatField(min_value=0.01, required=False, label="memory bandwidth (TB/s)")
    gpus_per_vm = forms.IntegerField(min_value=1, initial=8)
    source = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    device_kind = forms.ChoiceField(choices=[("gpu", "GPU"), ("cpu", "CPU")], initial="gpu", required=False)
    idle_w = forms.FloatField(min_value=0, max_value=1e5, required=False, label="idle power (W per device)")
    busy_w = forms.FloatField(min_value=0, max_value=1e5, required=False, label="busy power (W per device)")
    power_source = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    power_assumed = forms.BooleanField(required=False, initial=True, label="power figures are assumed")

    def clean_device_kind(self):
        return self.cleaned_data.get("device_kind") or "gpu"


class PriceForm(forms.Form):
    cloud = forms.CharField()
    region = forms.CharField()
    kind = forms.ChoiceField(choices=GpuPrice.Kind.choices)
    usd_per_gpu_hour = forms.FloatField(min_value=0, label="USD per GPU-hour")
    source = forms.CharField()
    as_of = forms.DateField(help_text="YYYY-MM-DD")
    assumed = forms.BooleanField(required=False)


PriceFormSet = forms.formset_factory(PriceForm, extra=3, can_delete=True)


class ModelProfileForm(forms.Form):
    name = forms.CharField(max_length=120)
    display_name = forms.CharField(required=False)
    parameters_billion = forms.FloatField(min_value=0.001)
    layers = forms.IntegerField(min_value=1)
    kv_heads = forms.IntegerField(min_value=1, required=False)
    head_dim = forms.IntegerField(min_value=1, required=False)
    dtype_bytes = forms.FloatField(min_value=0.25, initial=2.0)
    kv_bytes_per_token = forms.IntegerField(min_value=1, required=False, help_text="blank: from kv_heads, head_dim")
    weights_gb = forms.FloatField(min_value=0.001, required=False, help_text="blank: parameters x dtype bytes")
    aliases = forms.CharField(required=False, help_text="comma-separated names used in profile files")
    source = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)

    def to_service_dict(self) -> dict:
        c = dict(self.cleaned_data)
        c["aliases"] = [a.strip() for a in (c.get("aliases") or "").split(",") if a.strip()]
        return {k: v for k, v in c.items() if v is not None and v != ""} | {"aliases": c["aliases"]}


class UploadForm(forms.Form):
    file = forms.FileField(help_text="a catalogue JSON file or a perf_model.csv-format table")
    time_unit = forms.ChoiceField(choices=[(u, u) for u in TIME_UNITS], initial="auto")
    token_time = forms.ChoiceField(
        choices=[(u, u) for u in TOKEN_TIME_MODES],
        initial="auto",
        help_text="per_token: per decode iteration; total: for token_size tokens",
    )
    split = forms.ChoiceField(
        choices=[("rows", "rows (80:20 of rows)"), ("configs", "configs (hold out whole configurations)")],
        initial="rows",
    )
    holdout = forms.FloatField(min_value=0.05, max_value=0.9, initial=0.2)
    seed = forms.IntegerField(initial=0)
    loss = forms.ChoiceField(choices=[("l1", "l1 (median error)"), ("l2", "l2 (least squares)")], initial="l1")
    prefill_form = forms.ChoiceField(
        choices=[("contract", "contract: c0 + c1·T + c2·T²"), ("rich", "richer: + c_sq·Σprompt² + c_req·prompts")],
        initial="contract",
        required=False,
        help_text="the richer form fits batched short prompts better (see docs/simulator.md, Fidelity)",
    )

    def clean_prefill_form(self) -> str:
        return self.cleaned_data.get("prefill_form") or "contract"
