"""The scenario JSON of a multi-period capacity plan: parsing and validation, Django-free.

``parse_scenario(dict) -> Scenario`` raises ``ScenarioError(field, message)`` naming the offending field
with a JSON-path-like location (e.g. ``demand[2].tps``), so the API can answer 400 with it. The format is
documented in docs/optimizer.md; examples live in fixtures/plans/.

The JSON is validated once, by its schema (planner/optimizer/schema.py: keys, types, ranges and every rule about
one object); what is left here reads the typed plan and resolves what one object cannot know alone: names that
refer to other sections (a deployment's GPU type, a demand's model and region), the catalogue's deployments, and
series against the horizon.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from planner.optimizer import schema
from planner.optimizer.schema import PlanSchemaError, validate_plan

MAX_HOURS = 168
OPTIONS = ("reserved", "on_demand", "spot")


class ScenarioError(ValueError):
    def __init__(self, field_name: str, message: str, *, hint: str = "") -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class GpuType:
    name: str
    price_per_gpu_hour: dict[str, float]  # subset of OPTIONS -> $ per GPU-hour; a missing option is not offered


@dataclass(frozen=True)
class Deployment:
    model: str
    gpu: str
    gpus_per_instance: int
    theta_tps: float  # input TPS one instance sustains at its SLA
    startup_s: float  # VM acquisition + weight loading: the instance is useless for this long in its first hour


@dataclass(frozen=True)
class Scenario:
    name: str
    hours: int
    risk_quantile: float | None  # the forecast quantile covered (None: the point forecast as given)
    regions: list[str]
    gpus: dict[str, GpuType]
    models: list[str]
    deployments: dict[tuple[str, str], Deployment]  # (model, gpu)
    demand: dict[tuple[str, str], list[float]]  # (model, region) -> TPS per hour to cover (quantile applied)
    demand_point: dict[tuple[str, str], list[float]]  # the point forecast, for the coverage chart
    demand_source: dict[tuple[str, str], str]  # how the covered series was obtained, in words
    quotas_gpus: dict[tuple[str, str], int] = field(default_factory=dict)  # (region, gpu)
    spot_available_gpus: dict[tuple[str, str], int] = field(default_factory=dict)
    spot_risk_discount: float = 0.0
    initial: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (model, region, gpu)
    min_instances: dict[tuple[str, str], int] = field(default_factory=dict)  # (model, region)
    max_instances: dict[tuple[str, str], int] = field(default_factory=dict)
    rerouting: bool = False
    max_latency_ms: float = math.inf
    latency_ms: dict[tuple[str, str], float] = field(default_factory=dict)  # (from, to)
    min_local_share: float = 0.0
    start_fee: float = 0.0  # extra $ per instance start (on top of the paid idle start-up time)
    shortfall_penalty: float | None = None  # $ per uncovered TPS-hour; None = automatic (see multiperiod)
    solver: str = "highs"
    time_limit_s: float = 60.0
    gap_rel: float = 0.01
    # the two-pool form: a disaggregated endpoint's pools are models of their own, keyed "model#prefill" and
    # "model#decode" (``pool_key``); key -> (model, pool). Pools are never rerouted (a request's prefill and
    # decode stay in its region).
    pool_of: dict[str, tuple[str, str]] = field(default_factory=dict)

    def reroute_pairs(self) -> list[tuple[str, str]]:
        if not self.rerouting:
            return []
        return [
            (a, b)
            for a in self.regions
            for b in self.regions
            if a != b and (a, b) in self.latency_ms and self.latency_ms[(a, b)] <= self.max_latency_ms
        ]


def pool_key(model: str, pool: str) -> str:
    """The plan's model key of a model's pool: the model itself when aggregated ("all")."""
    return model if pool == "all" else f"{model}#{pool}"


def _pools(models: list[str], deployments: Mapping, demand: Mapping, items: list[schema.Demand]) -> dict:
    """key -> (model, pool) of the pools; a prefill pool without its decode pool (or the reverse) is refused, in
    the deployments and in each region's demand."""
    pool_of = {}
    for key in models:
        model, _, pool = key.partition("#")
        if pool:
            pool_of[key] = (model, pool)
    for key, (model, pool) in pool_of.items():
        other = pool_key(model, "decode" if pool == "prefill" else "prefill")
        if other not in pool_of:
            n = next(n for n, (m, _g) in enumerate(deployments) if m == key)
            raise ScenarioError(f"deployments[{n}].pool", f"{model} has a {pool} pool but no "
                                f"{'decode' if pool == 'prefill' else 'prefill'} pool",
                                hint=f"add a deployment of {model} with \"pool\": \"{other.split('#')[1]}\" (its "
                                     "theta_tps in that phase's tokens/s), or make the endpoint aggregated")
    for n, e in enumerate(items):
        if e.pool != "all":
            other = pool_key(e.model, "decode" if e.pool == "prefill" else "prefill")
            if (other, e.region) not in demand:
                raise ScenarioError(f"demand[{n}].pool", f"the {e.pool} pool of {e.model} in {e.region} has demand "
                                    "but its other pool has none", hint=f"add the {other.split('#')[1]} pool's demand "
                                    "(its phase's tokens/s) for the same model and region")
    return pool_of


def _series(value: float | list[float], where: str, hours: int) -> list[float]:
    if not isinstance(value, list):
        return [float(value)] * hours  # a constant
    if len(value) < hours:
        raise ScenarioError(where, f"has {len(value)} values but the plan covers {hours} hours")
    return [float(x) for x in value[:hours]]


def _covered_series(entry: schema.Demand, where: str, hours: int, q: float | None) -> tuple[list[float], list[float], str]:
    point = _series(entry.tps, f"{where}.tps", hours)
    if q is None:
        return point, point, "point forecast"
    if entry.quantiles is not None:
        if not entry.quantiles:
            raise ScenarioError(f"{where}.quantiles", 'must be an object like {"0.5": [...], "0.9": [...]}')
        table = {float(key): _series(series, f"{where}.quantiles.{key}", hours)
                 for key, series in entry.quantiles.items()}
        levels = sorted(table)
        if q in table:
            return table[q], point, f"forecast quantile {q:g}"
        lower = [lv for lv in levels if lv < q]
        upper = [lv for lv in levels if lv > q]
        if not lower or not upper:
            raise ScenarioError(
                f"{where}.quantiles",
                f"risk_quantile {q:g} is outside the given levels {levels}; "
                "add a quantile series on each side or give std",
            )
        a, b = lower[-1], upper[0]
        w = (q - a) / (b - a)
        covered = [(1 - w) * x + w * y for x, y in zip(table[a], table[b], strict=True)]
        return covered, point, f"quantile {q:g} interpolated between {a:g} and {b:g}"
    if entry.std is not None or entry.cv is not None:
        z = NormalDist().inv_cdf(q)
        if entry.std is not None:
            std = _series(entry.std, f"{where}.std", hours)
        else:
            std = [entry.cv * x for x in point]
        covered = [max(0.0, x + z * s) for x, s in zip(point, std, strict=True)]
        return covered, point, f"normal quantile {q:g} (point + {z:.3f} std)"
    return point, point, "point forecast (no uncertainty given, so the risk level has no effect)"


def _catalogue_specs(items: list[schema.Deployment]) -> dict[str, dict]:
    """Engine specs of deployments named from the built-in hardware catalogue (planner/catalogue)."""
    specs: dict[str, dict] = {}
    for n, d in enumerate(items):
        if d.name is None:
            continue
        try:
            from planner.catalogue import engine_spec
        except ImportError:  # pragma: no cover - the catalogue ships with the planner
            raise ScenarioError(f"deployments[{n}].name", "the hardware catalogue is not installed") from None
        try:
            specs[d.name] = engine_spec(d.name)
        except KeyError as exc:
            raise ScenarioError(f"deployments[{n}].name", str(exc.args[0]) if exc.args else str(exc)) from None
    return specs


def parse_scenario(data: Any, *, hours: int | None = None) -> Scenario:
    """Validate a scenario dict; ``hours`` overrides the scenario's own horizon (CLI --hours).

    The JSON is checked against its schema (planner/optimizer/schema.py) first; the resolvers below then read
    the typed plan, in this order (the first error found is the one reported)."""
    plan = _validated(data)
    h = plan.hours if hours is None else hours
    if isinstance(h, bool) or not isinstance(h, int) or h < 1:
        raise ScenarioError("hours", f"must be an integer >= 1, got {h!r}")
    if h > MAX_HOURS:
        raise ScenarioError("hours", f"at most {MAX_HOURS} (one week), got {h}")
    q = plan.risk_quantile
    regions = list(plan.regions)
    catalogue = _catalogue_specs(plan.deployments)
    gpus = _gpu_types(plan.gpus, catalogue)
    deployments, models = _deployments(plan.deployments, catalogue, gpus)
    demand, point, source = _demand(plan.demand, models, regions, h, q)
    quotas = {_region_gpu(item, f"quotas[{n}]", regions, gpus): item.max_gpus for n, item in enumerate(plan.quotas)}
    spot = plan.spot or schema.Spot()
    spot_avail = {_region_gpu(item, f"spot.available[{n}]", regions, gpus): item.max_gpus
                  for n, item in enumerate(spot.available)}
    rr = plan.rerouting or schema.Rerouting()
    solver = plan.solver or schema.Solver()
    mins, maxs = _limits(plan.limits, models, regions)
    pool_of = _pools(models, deployments, demand, plan.demand)
    return Scenario(
        name=plan.name,
        hours=h,
        risk_quantile=q,
        regions=regions,
        gpus=gpus,
        models=models,
        deployments=deployments,
        demand=demand,
        demand_point=point,
        demand_source=source,
        quotas_gpus=quotas,
        spot_available_gpus=spot_avail,
        spot_risk_discount=spot.risk_discount,
        initial=_initial(plan.initial, models, regions, deployments),
        min_instances=mins,
        max_instances=maxs,
        rerouting=rr.enabled,
        max_latency_ms=math.inf if rr.max_latency_ms is None else rr.max_latency_ms,
        latency_ms=_latencies(rr, regions),
        min_local_share=rr.min_local_share,
        start_fee=plan.start_fee,
        shortfall_penalty=plan.shortfall_penalty_per_tps_hour,
        solver=solver.name,
        time_limit_s=solver.time_limit_s,
        gap_rel=solver.gap_rel,
        pool_of=pool_of,
    )


def _validated(data: Any) -> schema.PlanInput:
    """The schema check (the one validation of the JSON); a trace-derived demand must have been resolved."""
    if not isinstance(data, Mapping):
        raise ScenarioError("scenario", "must be a JSON object")
    try:
        plan = validate_plan(dict(data))
    except PlanSchemaError as exc:
        raise ScenarioError(exc.where, exc.message, hint=exc.hint) from None
    if plan.demand_from_trace is not None and not plan.demand_from_trace.resolved:
        raise ScenarioError("demand_from_trace", "is resolved by the service or the CLI (planner.plans.services)")
    return plan


def _gpu_types(given: dict[str, schema.GpuPrices], catalogue: dict[str, dict]) -> dict[str, GpuType]:
    """GPU types and their prices per GPU-hour; catalogue deployments add the prices of GPU types not given."""
    prices = {g: p.prices() for g, p in given.items()}
    for spec in catalogue.values():  # prices of catalogue GPU types not given inline
        if spec["gpu"] not in prices:
            per = spec["price_per_instance_hour"]
            prices[spec["gpu"]] = {
                k: round(float(v) / spec["gpus_per_instance"], 6) for k, v in per.items() if k in OPTIONS and v is not None
            }
            if "on_demand" not in prices[spec["gpu"]] and "reserved" not in prices[spec["gpu"]]:
                raise ScenarioError(f"gpus.{spec['gpu']}", "needs an on_demand or a reserved price",
                                    hint="the catalogue has none for this GPU type: give its prices under gpus")
    if not prices:
        raise ScenarioError("gpus", 'must be an object like {"h100": {"on_demand": 12.3, "spot": 4.9}}')
    return {g: GpuType(g, p) for g, p in prices.items()}


def _deployment_fields(d: schema.Deployment, catalogue: dict[str, dict]) -> dict[str, Any]:
    """The deployment's fields: a catalogue deployment's (by name), overridden by the keys given inline."""
    given = {key: getattr(d, key) for key in d.model_fields_set}
    if d.name is None:
        return {"gpus_per_instance": d.gpus_per_instance, "startup_s": d.startup_s, **given}
    spec = catalogue[d.name]
    return {
        "model": spec["model"],
        "gpu": spec["gpu"],
        "gpus_per_instance": spec["gpus_per_instance"],
        "theta_tps": spec["theta_tps"],
        "startup_s": spec["startup"]["vm_acquire_s"] + spec["startup"]["load_same_region_s"],
        **given,
    }


def _deployments(
    items: list[schema.Deployment], catalogue: dict[str, dict], gpus: dict[str, GpuType]
) -> tuple[dict[tuple[str, str], Deployment], list[str]]:
    """Deployments by (model, gpu), and the models in order of first appearance."""
    deployments: dict[tuple[str, str], Deployment] = {}
    models: list[str] = []
    for n, d in enumerate(items):
        where = f"deployments[{n}]"
        f = _deployment_fields(d, catalogue)
        for key in ("model", "gpu", "theta_tps"):
            if f.get(key) is None:
                raise ScenarioError(f"{where}.{key}", "is required")
        model, gpu = pool_key(f["model"], d.pool), f["gpu"]
        if gpu not in gpus:
            raise ScenarioError(f"{where}.gpu", f"unknown GPU type {gpu!r}; known: {sorted(gpus)}")
        if (model, gpu) in deployments:
            pool = "" if d.pool == "all" else f" ({d.pool} pool)"
            raise ScenarioError(where, f"a second deployment of {f['model']}{pool} on {gpu}")
        deployments[(model, gpu)] = Deployment(model, gpu, gpus_per_instance=int(f["gpus_per_instance"]),
                                               theta_tps=float(f["theta_tps"]), startup_s=float(f["startup_s"]))
        if model not in models:
            models.append(model)
    return deployments, models


def _demand(
    items: list[schema.Demand], models: list[str], regions: list[str], h: int, q: float | None
) -> tuple[dict, dict, dict]:
    """Per (model, region): the series to cover (quantile applied), the point forecast, and how it was obtained."""
    demand: dict[tuple[str, str], list[float]] = {}
    point: dict[tuple[str, str], list[float]] = {}
    source: dict[tuple[str, str], str] = {}
    for n, e in enumerate(items):
        where = f"demand[{n}]"
        model = _model_of(e, where, models)
        if e.region not in regions:
            raise ScenarioError(f"{where}.region", f"unknown region {e.region!r}; known: {regions}")
        key = (model, e.region)
        if key in demand:
            raise ScenarioError(where, f"a second demand series for {e.model} in {e.region}")
        demand[key], point[key], source[key] = _covered_series(e, where, h, q)
    return demand, point, source


def _model_of(item, where: str, models: list[str]) -> str:
    """The plan's model key of a demand, initial fleet or limits entry (its model and pool), known or refused."""
    key = pool_key(item.model, item.pool)
    if key not in models:
        if item.pool != "all" and item.model in {k.split("#")[0] for k in models}:
            raise ScenarioError(f"{where}.pool", f"{item.model} has no {item.pool} pool deployment",
                                hint=f"add a deployment of {item.model} with \"pool\": \"{item.pool}\"")
        raise ScenarioError(f"{where}.model", f"{item.model!r} has no deployment; known: "
                            f"{sorted({k.split('#')[0] for k in models})}")
    return key


def _known(where: str, *fields: tuple[str, str, str, Any]) -> tuple[str, ...]:
    """Each (key, label, value, known names): the value, once every one is known."""
    for key, label, value, known in fields:
        if value not in known:
            raise ScenarioError(f"{where}.{key}", f"unknown {label} {value!r}")
    return tuple(value for _key, _label, value, _known in fields)


def _region_gpu(item: schema.RegionGpu, where: str, regions: list[str], gpus: Mapping) -> tuple[str, str]:
    return _known(where, ("region", "region", item.region, regions), ("gpu", "GPU type", item.gpu, gpus))


def _initial(items: list[schema.Initial], models: list[str], regions: list[str], deployments: Mapping) -> dict:
    """The fleet running before hour 0, per (model, region, gpu)."""
    initial = {}
    for n, item in enumerate(items):
        m = _model_of(item, f"initial[{n}]", models)
        (r,) = _known(f"initial[{n}]", ("region", "region", item.region, regions))
        if (m, item.gpu) not in deployments:
            raise ScenarioError(f"initial[{n}].gpu", f"{m} has no deployment on {item.gpu!r}")
        initial[(m, r, item.gpu)] = item.instances
    return initial


def _limits(items: list[schema.InstanceLimits], models: list[str], regions: list[str]) -> tuple[dict, dict]:
    """Min and max instances per (model, region)."""
    mins, maxs = {}, {}
    for n, item in enumerate(items):
        key = (_model_of(item, f"limits[{n}]", models), *_known(f"limits[{n}]", ("region", "region", item.region,
                                                                                   regions)))
        if item.min_instances is not None:
            mins[key] = item.min_instances
        if item.max_instances is not None:
            maxs[key] = item.max_instances
    return mins, maxs


def _latencies(rr: schema.Rerouting, regions: list[str]) -> dict[tuple[str, str], float]:
    """Latencies per (from, to) region (symmetric unless said otherwise)."""
    latency = {}
    for n, item in enumerate(rr.latency_ms):
        where = f"rerouting.latency_ms[{n}]"
        a, b = _known(where, ("from", "region", item.from_, regions), ("to", "region", item.to, regions))
        latency[(a, b)] = item.ms
        if item.symmetric:
            latency.setdefault((b, a), item.ms)
    return latency
