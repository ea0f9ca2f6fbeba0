"""Hardware catalogue: GPU types with prices, model profiles, deployments (model x GPU x TP).

Built-in entries (``builtin=True``) have no team: every team sees them, nobody edits them; a team copies
one to change it (``services.copy_deployment`` / POST .../copy/). Team entries subclass TeamOwned.
Names are unique per team (and among built-ins), so a team's copy may keep the built-in's name.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from planner.accounts.models import Team, TeamOwned
from planner.catalogue import spec as catalogue_spec


def unique_name_per_team(kind: str) -> list[models.UniqueConstraint]:
    """A catalogue entry's name is unique within its team, and among the built-ins (no team)."""
    return [
        models.UniqueConstraint(fields=["team", "name"], name=f"hardware_{kind}_unique_per_team"),
        models.UniqueConstraint(fields=["name"], condition=Q(team__isnull=True), name=f"hardware_{kind}_unique_builtin"),
    ]


class CatalogueEntry(TeamOwned):
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    builtin = models.BooleanField(default=False, help_text="shipped with the planner; read-only, visible to all")
    source = models.TextField(blank=True, default="")

    class Meta:
        abstract = True


class PowerFields(models.Model):
    """Power per device (a GPU, or a CPU socket): idle and busy watts, where they come from, whether assumed."""

    idle_w = models.FloatField("idle power (W per device)", null=True, blank=True)
    busy_w = models.FloatField("busy power (W per device)", null=True, blank=True)
    power_source = models.TextField(blank=True, default="", help_text="where the power figures come from")
    power_assumed = models.BooleanField(default=True, help_text="an assumption, not a measured or quoted figure")

    class Meta:
        abstract = True

    def power_dict(self) -> dict:
        return {"idle_w": self.idle_w, "busy_w": self.busy_w, "power_source": self.power_source,
                "power_assumed": self.power_assumed}


class GpuType(CatalogueEntry, PowerFields):
    name = models.SlugField(max_length=120, help_text="e.g. h100-80gb (the perf_model.csv hardware label)")
    display_name = models.CharField(max_length=200, blank=True, default="")
    vendor = models.CharField(max_length=60, blank=True, default="")
    memory_gb = models.FloatField(help_text="memory per GPU, GB")
    bf16_tflops = models.FloatField(null=True, blank=True, help_text="dense BF16 TFLOPS (for scaling rules)")
    memory_bandwidth_tbs = models.FloatField(null=True, blank=True, help_text="HBM bandwidth, TB/s")
    gpus_per_vm = models.PositiveIntegerField(default=8)
    device_kind = models.CharField(
        max_length=8, choices=[("gpu", "GPU"), ("cpu", "CPU")], default="gpu",
        help_text="gpu, or cpu (a CPU socket serving a model, e.g. SLINFER's Xeon with AMX)",
    )

    class Meta:
        ordering = ["name"]
        constraints = unique_name_per_team("gpu")

    def __str__(self) -> str:
        return self.name

    def as_catalogue_dict(self) -> dict:
        return {
            "name": self.name,
            "display_name": self.display_name,
            "vendor": self.vendor,
            "memory_gb": self.memory_gb,
            "bf16_tflops": self.bf16_tflops,
            "memory_bandwidth_tbs": self.memory_bandwidth_tbs,
            "gpus_per_vm": self.gpus_per_vm,
            "source": self.source,
            "prices": [p.as_catalogue_dict() for p in self.prices.all()],
            "device_kind": self.device_kind,
            **self.power_dict(),
        }


class GpuPrice(models.Model):
    class Kind(models.TextChoices):
        ON_DEMAND = "on_demand", "On-demand"
        SPOT = "spot", "Spot"
        RESERVED = "reserved", "Reserved"

    gpu = models.ForeignKey(GpuType, on_delete=models.CASCADE, related_name="prices")
    cloud = models.CharField(max_length=60)
    region = models.CharField(max_length=60)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    usd_per_gpu_hour = models.FloatField()
    source = models.TextField(help_text="where the figure comes from")
    as_of = models.DateField(help_text="date of the figure")
    assumed = models.BooleanField(default=False, help_text="an assumption, not a quoted price")

    class Meta:
        ordering = ["cloud", "region", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["gpu", "cloud", "region", "kind"], name="hardware_price_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu} {self.cloud}/{self.region} {self.kind} ${self.usd_per_gpu_hour}/GPU-h"

    def as_catalogue_dict(self) -> dict:
        return {
            "cloud": self.cloud,
            "region": self.region,
            "kind": self.kind,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "source": self.source,
            "as_of": self.as_of.isoformat() if hasattr(self.as_of, "isoformat") else str(self.as_of),
            "assumed": self.assumed,
        }


class ModelProfile(CatalogueEntry):
    name = models.CharField(max_length=120, help_text="e.g. llama2-70b")
    display_name = models.CharField(max_length=200, blank=True, default="")
    parameters_billion = models.FloatField()
    layers = models.PositiveIntegerField()
    kv_heads = models.PositiveIntegerField(null=True, blank=True)
    head_dim = models.PositiveIntegerField(null=True, blank=True)
    dtype_bytes = models.FloatField(default=2.0)
    kv_bytes_per_token = models.PositiveBigIntegerField()
    weights_gb = models.FloatField()
    aliases = models.JSONField(default=list, blank=True, help_text="other names used in profile files")
    max_model_len = models.PositiveIntegerField(
        "context limit (tokens)", null=True, blank=True,
        help_text="the model's maximum context (prompt + output tokens); empty = unknown",
    )
    max_model_len_source = models.TextField(blank=True, default="", help_text="where the context limit comes from")

    class Meta:
        ordering = ["name"]
        constraints = unique_name_per_team("model")

    def __str__(self) -> str:
        return self.name

    def as_catalogue_dict(self) -> dict:
        return {
            "name": self.name,
            "display_name": self.display_name,
            "parameters_billion": self.parameters_billion,
            "layers": self.layers,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "dtype_bytes": self.dtype_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "weights_gb": self.weights_gb,
            "aliases": list(self.aliases or []),
            "source": self.source,
            "max_model_len": self.max_model_len,
            "max_model_len_source": self.max_model_len_source,
        }


class Deployment(CatalogueEntry, PowerFields):
    class Basis(models.TextChoices):
        FITTED = "fitted", "Fitted from measurements"
        DERIVED = "derived", "Derived by a measured ratio"
        ESTIMATED = "estimated", "Estimated by a datasheet rule"
        MANUAL = "manual", "Entered by hand"

    name = models.CharField(max_length=200, help_text="model/gpu/tpN")
    model = models.ForeignKey(ModelProfile, on_delete=models.PROTECT, related_name="deployments")
    gpu = models.ForeignKey(GpuType, on_delete=models.PROTECT, related_name="deployments")
    tp = models.PositiveIntegerField("tensor-parallel degree")
    gpus_per_instance = models.PositiveIntegerField()
    memory_utilisation = models.FloatField(default=0.9)
    max_batch_size = models.PositiveIntegerField(default=512)
    max_batch_tokens = models.PositiveIntegerField(default=8192)
    prefill_c0 = models.FloatField("prefill c0 (s)")
    prefill_c1 = models.FloatField("prefill c1 (s per batch token)")
    prefill_c2 = models.FloatField("prefill c2 (s per batch token squared)", default=0.0)
    prefill_c_sq = models.FloatField("prefill c_sq (s per sum of squared prompt sizes)", default=0.0)
    prefill_c_req = models.FloatField("prefill c_req (s per prompt in the iteration)", default=0.0)
    decode_c0 = models.FloatField("decode c0 (s)")
    decode_c_batch = models.FloatField("decode c_batch (s per request)")
    decode_c_ctx = models.FloatField("decode c_ctx (s per context token)", default=0.0)
    kv_capacity_tokens = models.PositiveBigIntegerField()
    theta_tps = models.FloatField("theta (input tokens/s at the target latency)")
    theta_target = models.JSONField(default=dict, blank=True)
    theta_detail = models.JSONField(default=dict, blank=True)
    vm_acquire_s = models.FloatField(default=155.0)
    load_same_region_s = models.FloatField(default=600.0)
    load_cross_region_s = models.FloatField(default=7200.0)
    spot_reclaim_s = models.FloatField(default=65.0)
    spot_reclaim_median_s = models.FloatField(default=60.0)
    spot_reclaim_max_s = models.FloatField(default=300.0)
    price_cloud = models.CharField(max_length=60, default="azure")
    price_region = models.CharField(max_length=60, default="eastus")
    basis = models.CharField(max_length=12, choices=Basis.choices, default=Basis.MANUAL)
    estimated = models.BooleanField(default=False)
    estimate_rule = models.TextField(blank=True, default="")
    fit_report = models.JSONField(default=dict, blank=True)
    points = models.JSONField(default=list, blank=True, help_text="per-configuration measured vs fitted times")
    max_model_len = models.PositiveIntegerField(
        "context limit (tokens)", null=True, blank=True,
        help_text="max model length served (prompt + output tokens), at most the model's; empty = the model's",
    )
    fitted_range = models.JSONField(
        default=dict, blank=True,
        help_text="measured range the latency model was fitted on: {batch_size, prompt_tokens, context_tokens, ...: "
                  "[min, max]}; {} = unknown (entered by hand)",
    )

    class Meta:
        ordering = ["model__name", "gpu__name", "tp"]
        constraints = unique_name_per_team("deployment")

    def __str__(self) -> str:
        return self.name

    @property
    def prefill(self) -> dict:
        """The contract form {c0, c1, c2}, plus c_sq / c_req when the richer form was fitted or entered."""
        out = {"c0": self.prefill_c0, "c1": self.prefill_c1, "c2": self.prefill_c2}
        if self.prefill_c_sq or self.prefill_c_req:
            out.update(c_sq=self.prefill_c_sq, c_req=self.prefill_c_req)
        return out

    @property
    def decode(self) -> dict:
        return {"c0": self.decode_c0, "c_batch": self.decode_c_batch, "c_ctx": self.decode_c_ctx}

    @property
    def startup(self) -> dict:
        return {k: getattr(self, k) for k in catalogue_spec.DEFAULT_STARTUP}

    @property
    def prefill_1024_ms(self) -> float:
        """One prefill of a single 1024-token prompt, ms (a quick comparison figure)."""
        return 1e3 * (
            self.prefill_c0
            + self.prefill_c1 * 1024
            + (self.prefill_c2 + self.prefill_c_sq) * 1024**2
            + self.prefill_c_req
        )

    @property
    def device_kind(self) -> str:
        return self.gpu.device_kind

    @property
    def device_power(self) -> dict | None:
        """Watts per device used for energy: the deployment's own figures, else its device type's."""
        return catalogue_spec.device_power(self.as_catalogue_dict(), self.gpu.as_catalogue_dict())

    @property
    def heldout_percent(self) -> tuple[float, float] | None:
        """Median absolute percentage error on held-out rows (prompt_time, token_time), if fitted."""
        held = (self.fit_report or {}).get("heldout") or {}
        try:
            return 100 * held["prompt_time"]["median_ape"], 100 * held["token_time"]["median_ape"]
        except (KeyError, TypeError):
            return None

    def as_catalogue_dict(self) -> dict:
        return {
            "name": self.name,
            "model": self.model.name,
            "gpu": self.gpu.name,
            "tp": self.tp,
            "gpus_per_instance": self.gpus_per_instance,
            "memory_utilisation": self.memory_utilisation,
            "max_batch_size": self.max_batch_size,
            "max_batch_tokens": self.max_batch_tokens,
            "prefill": self.prefill,
            "decode": self.decode,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "theta_tps": self.theta_tps,
            "theta_target": self.theta_target,
            "startup": self.startup,
            "price_cloud": self.price_cloud,
            "price_region": self.price_region,
            "basis": self.basis,
            "estimated": self.estimated,
            "estimate_rule": self.estimate_rule,
            "source": self.source,
            "max_model_len": self.max_model_len,
            "fitted_range": self.fitted_range or {},
            **self.power_dict(),
        }

    @property
    def context_limit(self) -> int | None:
        """The context limit in force: the deployment's own, else its model's (None = unknown)."""
        return self.max_model_len or self.model.max_model_len

    @property
    def on_demand_per_instance_hour(self) -> float | None:
        """USD per instance-hour on demand (GPU price x GPUs per instance), as the simulator bills it."""
        try:
            return float(self.engine_spec()["price_per_instance_hour"]["on_demand"])
        except (KeyError, TypeError, ValueError, LookupError):
            return None

    def engine_spec(self) -> dict:
        """The contract's engine deployment dict (all times in seconds, prices per instance-hour)."""
        return catalogue_spec.engine_spec(
            self.as_catalogue_dict(), self.gpu.as_catalogue_dict(), self.model.as_catalogue_dict()
        )
