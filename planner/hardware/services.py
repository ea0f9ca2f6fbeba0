"""Writes to the hardware catalogue. Every import is atomic: bad input stores nothing.

Numeric work (reading tables, fitting, KV capacity, theta) is in the Django-free planner.catalogue.
"""

from __future__ import annotations

import json
import logging

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import ProtectedError

from planner.catalogue import spec as catalogue_spec
from planner.catalogue.builtin import load_builtin
from planner.catalogue.errors import ProfileError
from planner.catalogue.fit import decode_time, fit_group, prefill_time
from planner.catalogue.perfcsv import load_perf_table
from planner.catalogue.schema import validate_catalogue_doc
from planner.hardware.models import Deployment, GpuPrice, GpuType, ModelProfile
from planner.hardware.selectors import resolve_gpu, resolve_model

log = logging.getLogger(__name__)

POWER_FIELDS = ("idle_w", "busy_w", "power_source", "power_assumed")
GPU_FIELDS = (
    "display_name", "vendor", "memory_gb", "bf16_tflops", "memory_bandwidth_tbs", "gpus_per_vm", "source",
    "device_kind", *POWER_FIELDS,
)
MODEL_FIELDS = (
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
)


def _deployment_fields(d: dict) -> dict:
    """Model fields of a completed catalogue deployment dict (without team/model/gpu)."""
    return {
        "name": d["name"],
        "tp": d["tp"],
        "gpus_per_instance": d["gpus_per_instance"],
        "memory_utilisation": d["memory_utilisation"],
        "max_batch_size": d["max_batch_size"],
        "max_batch_tokens": d["max_batch_tokens"],
        "prefill_c0": d["prefill"]["c0"],
        "prefill_c1": d["prefill"]["c1"],
        "prefill_c2": d["prefill"]["c2"],
        "prefill_c_sq": d["prefill"].get("c_sq", 0.0),
        "prefill_c_req": d["prefill"].get("c_req", 0.0),
        "decode_c0": d["decode"]["c0"],
        "decode_c_batch": d["decode"]["c_batch"],
        "decode_c_ctx": d["decode"]["c_ctx"],
        "kv_capacity_tokens": d["kv_capacity_tokens"],
        "theta_tps": d["theta_tps"],
        "theta_target": d["theta_target"],
        "theta_detail": d.get("theta_detail") or {},
        **{k: d["startup"][k] for k in catalogue_spec.DEFAULT_STARTUP},
        "price_cloud": d["price_cloud"],
        "price_region": d["price_region"],
        "basis": d["basis"],
        "estimated": d["estimated"],
        "estimate_rule": d["estimate_rule"],
        "source": d["source"],
        "fit_report": d.get("fit_report") or {},
        "points": d.get("points") or [],
        "max_model_len": d.get("max_model_len"),
        "fitted_range": d.get("fitted_range") or {},
        **{k: d[k] for k in POWER_FIELDS if k in d},
    }


def _upsert_gpu(team, user, g: dict, *, builtin: bool = False) -> tuple[GpuType, bool]:
    gpu, created = GpuType.objects.update_or_create(
        team=team,
        name=g["name"],
        builtin=builtin,
        defaults={**{k: g[k] for k in GPU_FIELDS}, **({"created_by": user} if user else {})},
    )
    gpu.prices.all().delete()
    GpuPrice.objects.bulk_create(
        [
            GpuPrice(
                gpu=gpu,
                **{k: p[k] for k in ("cloud", "region", "kind", "usd_per_gpu_hour", "source", "as_of", "assumed")},
            )
            for p in g["prices"]
        ]
    )
    return gpu, created


def _upsert_model(team, user, m: dict, *, builtin: bool = False) -> tuple[ModelProfile, bool]:
    return ModelProfile.objects.update_or_create(
        team=team,
        name=m["name"],
        builtin=builtin,
        defaults={**{k: m[k] for k in MODEL_FIELDS}, **({"created_by": user} if user else {})},
    )


def _upsert_deployment(team, user, d: dict, model: ModelProfile, gpu: GpuType, *, builtin: bool = False):
    fields = _deployment_fields(d)
    name = fields.pop("name")
    return Deployment.objects.update_or_create(
        team=team,
        name=name,
        builtin=builtin,
        defaults={**fields, "model": model, "gpu": gpu, **({"created_by": user} if user else {})},
    )


@transaction.atomic
def sync_builtin() -> dict:
    """Insert or update the built-in catalogue from planner/catalogue/data/builtin.json (idempotent)."""
    doc = load_builtin()
    gpus = {g["name"]: _upsert_gpu(None, None, g, builtin=True)[0] for g in doc["gpu_types"]}
    models = {m["name"]: _upsert_model(None, None, m, builtin=True)[0] for m in doc["models"]}
    for d in doc["deployments"]:
        _upsert_deployment(None, None, d, models[d["model"]], gpus[d["gpu"]], builtin=True)
    return {"gpu_types": len(gpus), "models": len(models), "deployments": len(doc["deployments"])}


def _known(team) -> tuple[dict, dict]:
    """Catalogue dicts of the GPU types and models a team may refer to (its own override built-ins)."""
    gpus, models = {}, {}
    for qs_filter in ({"builtin": True, "team__isnull": True}, {"team": team}):
        for g in GpuType.objects.filter(**qs_filter).prefetch_related("prices"):
            gpus[g.name] = g.as_catalogue_dict()
        for m in ModelProfile.objects.filter(**qs_filter):
            models[m.name] = m.as_catalogue_dict()
    return gpus, models


@transaction.atomic
def import_catalogue(team, user, doc) -> dict:
    """Import a catalogue JSON document into the team (create or update by name)."""
    known_gpus, known_models = _known(team)
    validate_catalogue_doc(doc)  # the upload's schema: unknown keys, types, finite bounded numbers
    completed = catalogue_spec.complete_catalogue(doc, known_gpus=known_gpus, known_models=known_models)
    summary = {"format": "json", "gpu_types": [], "models": [], "deployments": []}
    for g in completed["gpu_types"]:
        gpu, created = _upsert_gpu(team, user, g)
        summary["gpu_types"].append({"id": gpu.pk, "name": gpu.name, "created": created})
    for m in completed["models"]:
        model, created = _upsert_model(team, user, m)
        summary["models"].append({"id": model.pk, "name": model.name, "created": created})
    for d in completed["deployments"]:
        model, gpu = resolve_model(team, d["model"]), resolve_gpu(team, d["gpu"])
        dep, created = _upsert_deployment(team, user, d, model, gpu)
        summary["deployments"].append({"id": dep.pk, "name": dep.name, "created": created, "basis": dep.basis})
    return summary


@transaction.atomic
def _group_model_and_gpu(team, model_name: str, hw: str, first: str):
    """The team's model and GPU type a table group names; a ProfileError at the group's first line if unknown."""
    model, gpu = resolve_model(team, model_name), resolve_gpu(team, hw)
    if model is None:
        raise ProfileError(
            f"unknown model {model_name!r}",
            where=f"{first}, column model",
            hint="use a catalogue model name or alias (e.g. llama2-70b), or create the model first "
            "(page Hardware > New model, POST /api/hardware/models/, or a catalogue JSON)",
        )
    if gpu is None:
        raise ProfileError(
            f"unknown GPU type {hw!r}",
            where=f"{first}, column hardware",
            hint="use a catalogue GPU name (e.g. a100-80gb, h100-80gb) or create the GPU type first",
        )
    return model, gpu


def import_perf_table(
    team,
    user,
    data,
    *,
    time_unit: str = "auto",
    token_time: str = "auto",
    split: str = "rows",
    holdout: float = 0.2,
    seed: int = 0,
    loss: str = "l1",
    prefill_form: str = "contract",
) -> dict:
    """Fit one deployment per (model, hardware, tensor_parallel) group of a perf_model.csv-format table.
    ``prefill_form``: "contract" (c0 + c1*T + c2*T^2) or "rich" (+ c_sq*sum(P_i^2) + c_req*B)."""
    if not 0 < holdout < 1:
        raise ProfileError(f"holdout {holdout}", where="holdout", hint="give a share between 0 and 1, e.g. 0.2")
    table = load_perf_table(data, time_unit=time_unit, token_time=token_time)
    summary = {"format": "perf_csv", "gpu_types": [], "models": [], "deployments": []}
    plans = []
    for (model_name, hw, tp), frame in table.groups():
        first = f"line {int(frame['line'].min())}"
        model, gpu = _group_model_and_gpu(team, model_name, hw, first)
        try:
            res = fit_group(frame, split=split, holdout=holdout, seed=seed, loss=loss, prefill_form=prefill_form)
        except ProfileError as exc:
            raise ProfileError(exc.message, where=f"{exc.where} (from {first})", hint=exc.hint) from None
        report = dict(res.report)
        report["units"] = table.units[(model_name, hw, tp)].as_dict()
        source = (
            f"fitted from an uploaded table: model={model_name}, hardware={hw}, tensor_parallel={tp}, "
            f"{len(frame)} rows, {split} split, seed {seed}"
            + (", richer prefill form" if prefill_form == "rich" else "")
        )
        plans.append(
            (
                model,
                gpu,
                {
                    "model": model.name,
                    "gpu": gpu.name,
                    "tp": tp,
                    "basis": "fitted",
                    "estimated": False,
                    "source": source,
                    "prefill": res.prefill,
                    "decode": res.decode,
                    "fit_report": report,
                    "points": res.points,
                },
            )
        )
    for model, gpu, d in plans:
        completed = catalogue_spec.complete_deployment(
            d,
            f"deployment {d['model']}/{d['gpu']}/tp{d['tp']}",
            gpus={gpu.name: gpu.as_catalogue_dict()},
            models={model.name: model.as_catalogue_dict()},
        )
        dep, created = _upsert_deployment(team, user, completed, model, gpu)
        summary["deployments"].append(
            {
                "id": dep.pk,
                "name": dep.name,
                "created": created,
                "heldout": dep.fit_report.get("heldout"),
                "flag_counts": dep.fit_report.get("flag_counts"),
                "units": dep.fit_report.get("units"),
            }
        )
    return summary


def import_profile(team, user, data: bytes, *, filename: str = "", **options) -> dict:
    """Import a catalogue JSON file or a perf_model.csv-format table (detected by name, then content)."""
    if team is None:
        raise ProfileError("the user has no team", where="user", hint="ask an administrator to add you to a team")
    head = data.lstrip()[:1]
    if filename.lower().endswith(".json") or head in (b"{", b"["):
        try:
            doc = json.loads(data.decode("utf-8-sig"))
        except UnicodeDecodeError:
            raise ProfileError("the file is not UTF-8 text", where=filename or "file") from None
        except json.JSONDecodeError as exc:
            raise ProfileError(
                f"invalid JSON: {exc.msg}", where=f"line {exc.lineno}, column {exc.colno}", hint="fix the JSON syntax"
            ) from None
        return import_catalogue(team, user, doc)
    return import_perf_table(team, user, data, **options)


def _require_editable(user_team, entry) -> None:
    if entry.builtin:
        raise PermissionDenied(
            f"{entry} is a built-in entry and read-only; copy it to your team first (the Copy button, or POST "
            f".../copy/ in the API) and edit the copy"
        )
    if user_team is None or entry.team_id != user_team.pk:
        raise PermissionDenied("this entry belongs to another team")


@transaction.atomic
def save_deployment(team, user, data: dict, *, instance: Deployment | None = None) -> Deployment:
    """Create or update a team deployment from a catalogue-style dict; fills KV capacity and theta
    when they are not given. ``data['model']``/``data['gpu']`` are ModelProfile/GpuType rows."""
    if instance is not None:
        _require_editable(team, instance)
    model, gpu = data["model"], data["gpu"]
    doc = {k: v for k, v in data.items() if k not in ("model", "gpu")}
    doc.update({"model": model.name, "gpu": gpu.name})
    if instance is not None:
        _carry_fit(instance, doc)
    completed = catalogue_spec.complete_deployment(
        doc, "deployment", gpus={gpu.name: gpu.as_catalogue_dict()}, models={model.name: model.as_catalogue_dict()}
    )
    fields = _deployment_fields(completed)
    clash = Deployment.objects.filter(team=team, name=fields["name"])
    if instance is not None:
        clash = clash.exclude(pk=instance.pk)
    if clash.exists():
        raise ProfileError(
            f"your team already has a deployment named {fields['name']!r}",
            where="model / gpu / tp",
            hint=f"edit that one (id {clash.first().pk}) instead, or delete it first",
        )
    if instance is None:
        return Deployment.objects.create(team=team, created_by=user, model=model, gpu=gpu, **fields)
    for k, v in fields.items():
        setattr(instance, k, v)
    instance.model, instance.gpu = model, gpu
    instance.save()
    return instance


def _carry_fit(instance: Deployment, doc: dict) -> None:
    """Keep the measurement and fit report of an edited deployment. If its coefficients were changed by
    hand, the points' fitted values are recomputed with the new coefficients (the plot then compares the
    edited model with the measurements) and the report says its error figures describe the original fit."""
    doc.setdefault("fit_report", dict(instance.fit_report or {}))
    doc.setdefault("points", [dict(p) for p in (instance.points or [])])
    prefill, decode = doc.get("prefill", instance.prefill), doc.get("decode", instance.decode)
    full_prefill = {"c2": 0.0, **prefill}
    full_decode = {"c_ctx": 0.0, **decode}
    if full_prefill == instance.prefill and full_decode == instance.decode:
        return
    for p in doc["points"]:  # SLINFER tables measure prefill and decode in separate rows: skip the absent side
        if p.get("prompt_time_s") is not None:
            p["prompt_time_fit_s"] = float(
                prefill_time(full_prefill, p["batch_tokens"], p["batch_size"] * p["prompt_size"] ** 2, p["batch_size"])
            )
        if p.get("token_time_s") is not None:
            p["token_time_fit_s"] = float(decode_time(full_decode, p["batch_size"], p["context_tokens"]))
    if doc["fit_report"]:
        doc["fit_report"]["edited"] = (
            "coefficients edited by hand after the fit: the plot uses the edited coefficients, the error "
            "figures describe the original fit"
        )


@transaction.atomic
def copy_deployment(team, user, source: Deployment) -> Deployment:
    """An editable copy of a (built-in or own) deployment in the caller's team, same name if free."""
    fields = _deployment_fields(
        {
            **source.as_catalogue_dict(),
            "theta_detail": source.theta_detail,
            "fit_report": source.fit_report,
            "points": source.points,
        }
    )
    name = fields.pop("name")
    candidate, n = name, 1
    while Deployment.objects.filter(team=team, name=candidate).exists():
        n += 1
        candidate = f"{name} (copy {n})"
    fields["source"] = f"copy of {'built-in ' if source.builtin else ''}{name}. " + fields["source"]
    return Deployment.objects.create(
        team=team, created_by=user, name=candidate, model=source.model, gpu=source.gpu, **fields
    )


@transaction.atomic
def copy_gpu(team, user, source: GpuType) -> GpuType:
    name, n = source.name, 1
    while GpuType.objects.filter(team=team, name=name).exists():
        n += 1
        name = f"{source.name}-copy{n}"
    g = source.as_catalogue_dict()
    g["name"] = name
    return _upsert_gpu(team, user, g)[0]


def _refuse_name_clash(model_cls, team, name: str, instance, noun: str) -> None:
    clash = model_cls.objects.filter(team=team, name=name)
    if instance is not None:
        clash = clash.exclude(pk=instance.pk)
    if clash.exists():
        raise ProfileError(
            f"your team already has a {noun} named {name!r}",
            where="name",
            hint=f"edit that one (id {clash.first().pk}) or choose another name",
        )


@transaction.atomic
def save_gpu(team, user, data: dict, *, instance: GpuType | None = None) -> GpuType:
    """Create/update a team GPU type; ``data['prices']`` (a list) replaces all its prices when given."""
    if instance is not None:
        _require_editable(team, instance)
    base = instance.as_catalogue_dict() if instance is not None else {"prices": []}
    merged = {**base, **data}
    g = catalogue_spec.complete_gpu(merged, "gpu_type")
    _refuse_name_clash(GpuType, team, g["name"], instance, "GPU type")
    if instance is not None and g["name"] != instance.name:
        instance.name = g["name"]
        instance.save(update_fields=["name"])
    gpu = _upsert_gpu(team, user, g)[0]
    _refresh_dependents(team, gpu)
    return gpu


@transaction.atomic
def save_model(team, user, data: dict, *, instance: ModelProfile | None = None) -> ModelProfile:
    if instance is not None:
        _require_editable(team, instance)
    base = instance.as_catalogue_dict() if instance is not None else {}
    merged = {**base, **data}
    if instance is not None and (
        {"layers", "kv_heads", "head_dim", "dtype_bytes"} & set(data) and "kv_bytes_per_token" not in data
    ):
        merged.pop("kv_bytes_per_token", None)  # recompute from the new shape
    if instance is not None and ("parameters_billion" in data or "dtype_bytes" in data) and "weights_gb" not in data:
        merged.pop("weights_gb", None)
    m = catalogue_spec.complete_model(merged, "model")
    _refuse_name_clash(ModelProfile, team, m["name"], instance, "model")
    if instance is not None and m["name"] != instance.name:
        instance.name = m["name"]
        instance.save(update_fields=["name"])
    model = _upsert_model(team, user, m)[0]
    _refresh_dependents(team, model)
    return model


def _refresh_dependents(team, entry) -> None:
    """Recompute name, KV capacity and theta of the team's deployments on an edited GPU type or model."""
    for dep in entry.deployments.filter(team=team).select_related("model", "gpu"):
        data = dep.as_catalogue_dict()
        for k in ("kv_capacity_tokens", "theta_tps", "name"):
            data.pop(k)
        data.update({"model": dep.model, "gpu": dep.gpu})
        try:
            save_deployment(team, dep.created_by, data, instance=dep)
        except ProfileError as exc:
            raise ProfileError(f"{exc.message} (deployment {dep.name})", where=exc.where, hint=exc.hint) from None


def delete_entry(team, entry) -> None:
    _require_editable(team, entry)
    try:
        entry.delete()
    except ProtectedError as exc:
        users = sorted({str(o) for o in exc.protected_objects})[:5]
        raise ProfileError(
            f"{entry} is used by {', '.join(users)}",
            where=str(entry),
            hint="delete or re-point those deployments first",
        ) from None
