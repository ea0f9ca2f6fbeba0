"""Writes of the benchmarks app: import a run, validate deployments against runs, calibrate (a new deployment
version). Numeric work is in the Django-free planner.benchmarks.core and planner.catalogue.physics."""

from __future__ import annotations

import random

from django.db import transaction

from planner.benchmarks.core import calibrate as core_calibrate
from planner.benchmarks.core.errors import BenchmarkError
from planner.benchmarks.core.resim import scheduling_of, simulate_run
from planner.benchmarks.core.schema import BenchmarkRun as RunSchema
from planner.benchmarks.core.upload import parse_upload
from planner.benchmarks.core.validate import compare, pooled
from planner.benchmarks.models import BenchmarkRun, Validation
from planner.catalogue.errors import ProfileError
from planner.catalogue.physics import Efficiency, architecture, datasheet, deployment_spec
from planner.hardware import services as hardware_services
from planner.hardware.models import Deployment, GpuType, ModelProfile
from planner.hardware.selectors import resolve_gpu, resolve_model


def _check_known(run: RunSchema, file: str) -> tuple[str, str]:
    """The architecture and datasheet names of the run's model and GPU (the physics model needs both)."""
    try:
        arch = architecture(run.engine.model)
    except ProfileError as exc:
        raise BenchmarkError(exc.message, file=file, field="engine.model", hint=exc.hint) from None
    try:
        sheet = datasheet(run.engine.gpu)
    except ProfileError as exc:
        raise BenchmarkError(exc.message, file=file, field="gpu", hint=exc.hint) from None
    return arch.name, sheet.name


def matching_deployment(team, model: str, gpu: str, tp: int) -> Deployment | None:
    """The team's (else a built-in) catalogue deployment of the same model x GPU x TP, newest first."""
    profile = resolve_model(team, model)
    if profile is None:
        return None
    qs = Deployment.objects.filter(model__name=profile.name, gpu__name=gpu, tp=tp)
    return qs.filter(team=team).order_by("-created").first() or qs.filter(builtin=True).first()


@transaction.atomic
def import_benchmark(team, user, files: dict[str, bytes], *, name: str = "", gpu: str = "",
                     engine: dict | None = None, original_name: str = "") -> BenchmarkRun:
    """Parse and store one run (all or nothing: a bad file raises ``BenchmarkError`` and stores nothing)."""
    run = parse_upload(files, name=name, gpu=gpu, engine=engine)
    label = original_name or ", ".join(sorted(files))[:300]
    model_name, gpu_name = _check_known(run, label)
    run = run.model_copy(update={"engine": run.engine.model_copy(update={"gpu": gpu_name})})
    n = sum(s.requests_ok + s.requests_failed for s in run.stages)
    return BenchmarkRun.objects.create(
        team=team, created_by=user, name=run.name[:200], source_format=run.source_format,
        model_name=run.engine.model[:200], gpu_name=gpu_name, tp=run.engine.tensor_parallel_size,
        overloaded=run.overloaded, stage_count=len(run.stages), request_count=n,
        deployment=matching_deployment(team, model_name, gpu_name, run.engine.tensor_parallel_size),
        data=run.model_dump(mode="json"), original_name=label,
    )


def physics_of(deployment: Deployment) -> Efficiency | None:
    block = (deployment.fit_report or {}).get("physics")
    return Efficiency.from_dict(block["efficiency"]) if block else None


def _with_run_settings(spec: dict, run: RunSchema) -> dict:
    """A catalogue deployment's engine spec, with the run's batch limits and scheduler (its engine settings)."""
    return {**spec, "max_batch_size": run.engine.max_num_seqs, "max_batch_tokens": run.engine.max_num_batched_tokens,
            **scheduling_of(run)}


def simulate_rows(runs: list[RunSchema], *, deployment: Deployment | None = None, efficiency: Efficiency | None = None,
                  seeds=(0, 1, 2), progress=None) -> tuple[list[dict], dict]:
    """Measured vs simulated rows for ``runs``: with the physics coefficients given (or the deployment's, if it
    was calibrated), else with the deployment's own latency model."""
    eff = efficiency or (physics_of(deployment) if deployment is not None else None)
    rows = []
    for i, run in enumerate(runs):
        if eff is not None:
            sims = simulate_run(run, eff, seeds=seeds)
            used = eff.to_dict()
        else:
            if deployment is None:
                raise BenchmarkError("nothing to validate with", field="deployment",
                                     hint="give a deployment, or physics coefficients")
            sims = simulate_run(run, Efficiency(client_s=0.0), seeds=seeds,
                                deployment=_with_run_settings(deployment.engine_spec(), run))
            used = {}
        rows.extend(compare(run, sims))
        if progress:
            progress((i + 1) / len(runs), f"simulated {run.name}")
    return rows, used


@transaction.atomic
def save_validation(team, user, runs: list[BenchmarkRun], rows: list[dict], used: dict, *,
                    deployment: Deployment | None, kind: str = "validate", seeds: int = 3) -> Validation:
    v = Validation.objects.create(team=team, created_by=user, deployment=deployment, kind=kind, efficiency=used,
                                  rows=rows, pooled=pooled(rows), seeds=seeds)
    v.runs.set(runs)
    return v


def validate(team, user, runs: list[BenchmarkRun], *, deployment: Deployment | None = None,
             efficiency: Efficiency | None = None, seeds: int = 3, progress=None) -> Validation:
    schemas = [r.schema() for r in runs]
    rows, used = simulate_rows(schemas, deployment=deployment, efficiency=efficiency, seeds=tuple(range(seeds)),
                               progress=progress)
    return save_validation(team, user, runs, rows, used, deployment=deployment, seeds=seeds)


def split_runs(runs: list[BenchmarkRun], holdout: float, seed: int) -> tuple[list, list]:
    """Whole runs held out (seeded): at least one run on each side."""
    if len(runs) < 2:
        raise BenchmarkError("a calibration needs at least two runs (one to fit, one held out)", field="runs",
                             hint="upload more benchmark runs of this GPU type")
    order = sorted(runs, key=lambda r: r.pk)
    random.Random(seed).shuffle(order)
    k = min(max(1, round(len(order) * holdout)), len(order) - 1)
    return order[k:], order[:k]


def _model_profile(team, user, model_name: str) -> ModelProfile:
    arch = architecture(model_name)
    found = resolve_model(team, arch.name) or (resolve_model(team, arch.hf_id) if arch.hf_id else None)
    if found is not None:
        return found
    return hardware_services.save_model(team, user, {
        "name": arch.name, "display_name": arch.hf_id.split("/")[-1] if arch.hf_id else arch.name,
        "parameters_billion": round(arch.parameters / 1e9, 3), "layers": arch.layers, "kv_heads": arch.kv_heads,
        "head_dim": arch.hd, "dtype_bytes": arch.dtype_bytes, "aliases": [a for a in (arch.hf_id,) if a],
        "source": f"architecture: {arch.source}",
        **({"max_model_len": arch.max_position_embeddings,
            "max_model_len_source": arch.source} if arch.max_position_embeddings else {}),
    })


def _gpu_type(team, user, gpu_name: str) -> GpuType:
    found = resolve_gpu(team, gpu_name)
    if found is not None:
        return found
    sheet = datasheet(gpu_name)
    return hardware_services.save_gpu(team, user, {
        "name": sheet.name, "display_name": sheet.display_name, "vendor": "", "memory_gb": sheet.memory_gb,
        "bf16_tflops": sheet.dense_tflops, "memory_bandwidth_tbs": sheet.hbm_tbs, "gpus_per_vm": 8,
        "source": sheet.source, "prices": [],
    })


def _next_name(team, base: str) -> str:
    taken = set(Deployment.objects.filter(team=team, name__startswith=base).values_list("name", flat=True))
    n = 1
    while f"{base}-v{n}" in taken:
        n += 1
    return f"{base}-v{n}"


def save_calibrated(team, user, run: RunSchema, eff: Efficiency, report: dict) -> Deployment:
    """A NEW team deployment (never overwriting one) of the run's model x GPU x TP with the physics coefficients."""
    e = run.engine
    spec = deployment_spec(e.model, e.gpu, e.tensor_parallel_size, eff, max_num_seqs=e.max_num_seqs,
                           max_num_batched_tokens=e.max_num_batched_tokens,
                           memory_utilisation=e.gpu_memory_utilization)
    model, gpu = _model_profile(team, user, e.model), _gpu_type(team, user, e.gpu)
    name = _next_name(team, f"{model.name}/{gpu.name}/tp{e.tensor_parallel_size}/physics")
    return hardware_services.save_deployment(team, user, {
        "name": name, "model": model, "gpu": gpu, "tp": e.tensor_parallel_size,
        "memory_utilisation": e.gpu_memory_utilization,
        "max_batch_size": spec["max_batch_size"], "max_batch_tokens": spec["max_batch_tokens"],
        "prefill": spec["prefill"], "decode": spec["decode"], "kv_capacity_tokens": spec["kv_capacity_tokens"],
        "basis": Deployment.Basis.FITTED, "estimated": False,
        "estimate_rule": "physics model (planner/catalogue/physics.py) with efficiencies calibrated on benchmark "
                         "runs by simulate-and-fit",
        "source": f"calibrated on {len(report['trained_on'])} benchmark run(s) of {gpu.name}; engine "
                  f"{e.engine} {e.engine_version}".strip(),
        "fit_report": {"physics": report},
        **({"max_model_len": e.max_model_len} if e.max_model_len else {}),
    })


def calibrate(team, user, runs: list[BenchmarkRun], *, holdout: float = 0.25, seed: int = 0, seeds: int = 3,
              duration_scale: float = 0.2, maxiter: int = 80, progress=None) -> dict:
    """Fit one GPU type's efficiencies on the training runs, score them on the held-out runs, and save a new
    deployment version per model x TP in the runs, each with its held-out error and a held-out validation."""
    gpus = {r.gpu_name for r in runs}
    if len(gpus) != 1:
        raise BenchmarkError(f"the runs are on {len(gpus)} GPU types ({', '.join(sorted(gpus))})", field="runs",
                             hint="calibrate one GPU type at a time")
    train, held = split_runs(runs, holdout, seed)
    step = (lambda f, m: progress(0.8 * f, m)) if progress else None
    eff, info = core_calibrate.fit([r.schema() for r in train], duration_scale=duration_scale, maxiter=maxiter,
                                   progress=step)
    rows, used = simulate_rows([r.schema() for r in held], efficiency=eff, seeds=tuple(range(seeds)))
    held_pooled = pooled(rows)
    report = {"efficiency": eff.to_dict(), "loss": info["loss"], "evaluations": info["evaluations"],
              "trained_on": [r.pk for r in train], "held_out": [r.pk for r in held], "heldout": held_pooled,
              "holdout": holdout, "seed": seed}
    with transaction.atomic():
        created = []
        seen = set()
        for r in runs:
            s = r.schema()
            key = (architecture(s.engine.model).name, s.engine.tensor_parallel_size)
            if key in seen:
                continue
            seen.add(key)
            dep = save_calibrated(team, user, s, eff, report)
            # the deployment's own held-out runs when there are some, else the GPU type's (other models)
            own = [h for h in held if (architecture(h.model_name).name, h.tp) == key]
            own_rows = [row for row in rows if row["run"] in {h.name for h in own}]
            if own:
                v = save_validation(team, user, own, own_rows, used, deployment=dep, kind="heldout", seeds=seeds)
            else:
                v = save_validation(team, user, held, rows, used, deployment=dep, kind="heldout-other-models",
                                    seeds=seeds)
            created.append({"deployment_id": dep.pk, "name": dep.name, "validation_id": v.pk})
    return {"efficiency": eff.to_dict(), "heldout": held_pooled, "deployments": created,
            "trained_on": report["trained_on"], "held_out": report["held_out"]}


def runs_of(team, ids) -> list[BenchmarkRun]:
    """The team's runs of these ids, in order; ``BenchmarkError`` naming the unknown ones."""
    try:
        wanted = [int(i) for i in ids]
    except (TypeError, ValueError):
        raise BenchmarkError("must be a list of benchmark run ids", field="run_ids") from None
    if not wanted:
        raise BenchmarkError("no benchmark run chosen", field="run_ids", hint="give one or more run ids")
    found = {r.pk: r for r in BenchmarkRun.objects.filter(team=team, pk__in=wanted)}
    missing = [i for i in wanted if i not in found]
    if missing:
        raise BenchmarkError(f"no benchmark run {missing} in your team", field="run_ids",
                             hint="list them with GET /api/benchmarks/")
    return [found[i] for i in wanted]


def start_calibration(team, user, run_ids, *, holdout: float = 0.25, seed: int = 0, seeds: int = 3,
                      maxiter: int = 80):
    from planner.jobs.services import create_job

    runs = runs_of(team, run_ids)
    if not 0.0 < holdout < 1.0:
        raise BenchmarkError(f"must be between 0 and 1, got {holdout}", field="holdout")
    split_runs(runs, holdout, seed)  # refuses fewer than two runs now, not in the job
    gpus = {r.gpu_name for r in runs}
    if len(gpus) != 1:
        raise BenchmarkError(f"the runs are on {len(gpus)} GPU types ({', '.join(sorted(gpus))})", field="run_ids",
                             hint="calibrate one GPU type at a time")
    with transaction.atomic():
        return create_job(team=team, user=user, kind="benchmarks.calibrate",
                          params={"run_ids": [r.pk for r in runs], "holdout": holdout, "seed": seed, "seeds": seeds,
                                  "maxiter": maxiter})


def start_validation(team, user, run_ids, *, deployment: Deployment | None, seeds: int = 3):
    from planner.jobs.services import create_job

    runs = runs_of(team, run_ids)
    if deployment is None:
        raise BenchmarkError("is required", field="deployment", hint="the id of a catalogue deployment")
    with transaction.atomic():
        return create_job(team=team, user=user, kind="benchmarks.validate",
                          params={"run_ids": [r.pk for r in runs], "deployment_id": deployment.pk, "seeds": seeds})


def default_deployment(team, run: BenchmarkRun) -> Deployment | None:
    """The team's newest calibrated (physics) deployment of the run's model x GPU x TP, else the catalogue one."""
    profile = resolve_model(team, run.model_name)
    qs = Deployment.objects.filter(team=team, gpu__name=run.gpu_name, tp=run.tp, fit_report__has_key="physics")
    if profile is not None:
        qs = qs.filter(model__name=profile.name)
        found = qs.order_by("-created", "-id").first()
        if found is not None:
            return found
    return run.deployment
