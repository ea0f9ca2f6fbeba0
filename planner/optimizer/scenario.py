"""The scenario JSON of a multi-period capacity plan: parsing and validation, Django-free.

``parse_scenario(dict) -> Scenario`` raises ``ScenarioError(field, message)`` naming the offending field
with a JSON-path-like location (e.g. ``demand[2].tps``), so the API can answer 400 with it. The format is
documented in docs/optimizer.md; examples live in fixtures/plans/.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

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

    def reroute_pairs(self) -> list[tuple[str, str]]:
        if not self.rerouting:
            return []
        return [
            (a, b)
            for a in self.regions
            for b in self.regions
            if a != b and (a, b) in self.latency_ms and self.latency_ms[(a, b)] <= self.max_latency_ms
        ]


def _req(d: Mapping, key: str, where: str) -> Any:
    if not isinstance(d, Mapping):
        raise ScenarioError(where, "must be an object")
    if key not in d:
        raise ScenarioError(f"{where}.{key}" if where else key, "is required")
    return d[key]


def _num(value: Any, where: str, *, lo: float | None = None, hi: float | None = None, strict_lo: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ScenarioError(where, f"must be a finite number, got {value!r}")
    v = float(value)
    if lo is not None and (v < lo or (strict_lo and v == lo)):
        raise ScenarioError(where, f"must be {'>' if strict_lo else '>='} {lo}, got {v}")
    if hi is not None and v > hi:
        raise ScenarioError(where, f"must be <= {hi}, got {v}")
    return v


def _int(value: Any, where: str, *, lo: int = 0) -> int:
    v = _num(value, where, lo=lo)
    if v != int(v):
        raise ScenarioError(where, f"must be an integer, got {value!r}")
    return int(v)


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ScenarioError(where, "must be a non-empty string")
    return value


def _series(value: Any, where: str, hours: int) -> list[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [_num(value, where, lo=0)] * hours  # a constant
    if not isinstance(value, list):
        raise ScenarioError(where, f"must be a list of {hours} hourly values (or one number)")
    if len(value) < hours:
        raise ScenarioError(where, f"has {len(value)} values but the plan covers {hours} hours")
    return [_num(x, f"{where}[{t}]", lo=0) for t, x in enumerate(value[:hours])]


def _covered_series(entry: Mapping, where: str, hours: int, q: float | None) -> tuple[list[float], list[float], str]:
    point = _series(_req(entry, "tps", where), f"{where}.tps", hours)
    quantiles = entry.get("quantiles")
    if q is None:
        return point, point, "point forecast"
    if quantiles is not None:
        if not isinstance(quantiles, Mapping) or not quantiles:
            raise ScenarioError(f"{where}.quantiles", 'must be an object like {"0.5": [...], "0.9": [...]}')
        table = {}
        for key, series in quantiles.items():
            level = _num(_to_float(key, f"{where}.quantiles"), f"{where}.quantiles", lo=0, hi=1)
            table[level] = _series(series, f"{where}.quantiles.{key}", hours)
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
    if "std" in entry or "cv" in entry:
        z = NormalDist().inv_cdf(q)
        if "std" in entry:
            std = _series(entry["std"], f"{where}.std", hours)
        else:
            cv = _num(entry["cv"], f"{where}.cv", lo=0)
            std = [cv * x for x in point]
        covered = [max(0.0, x + z * s) for x, s in zip(point, std, strict=True)]
        return covered, point, f"normal quantile {q:g} (point + {z:.3f} std)"
    return point, point, "point forecast (no uncertainty given, so the risk level has no effect)"


def _to_float(key: Any, where: str) -> float:
    try:
        return float(key)
    except (TypeError, ValueError):
        raise ScenarioError(where, f"quantile level {key!r} is not a number") from None


def _pairs(items: Any, where: str) -> list[tuple[int, Mapping]]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise ScenarioError(where, "must be a list of objects")
    for n, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ScenarioError(f"{where}[{n}]", "must be an object")
    return list(enumerate(items))


def _catalogue_specs(items: Any) -> dict[str, dict]:
    """Engine specs of deployments named from the built-in hardware catalogue (planner/catalogue)."""
    specs: dict[str, dict] = {}
    for n, d in _pairs(items, "deployments"):
        if "name" not in d:
            continue
        name = _name(d["name"], f"deployments[{n}].name")
        try:
            from planner.catalogue import engine_spec
        except ImportError:  # pragma: no cover - the catalogue ships with the planner
            raise ScenarioError(f"deployments[{n}].name", "the hardware catalogue is not installed") from None
        try:
            specs[name] = engine_spec(name)
        except KeyError as exc:
            raise ScenarioError(f"deployments[{n}].name", str(exc.args[0]) if exc.args else str(exc)) from None
    return specs


def parse_scenario(data: Any, *, hours: int | None = None) -> Scenario:
    """Validate a scenario dict; ``hours`` overrides the scenario's own horizon (CLI --hours).

    The JSON is checked against its schema (planner/optimizer/schema.py) first: unknown keys, types,
    finite numbers and ranges; the section parsers below resolve the cross-references, in this order
    (the first error found is the one reported)."""
    name, h, q = _parse_horizon(data, hours)
    regions = _parse_regions(data)
    deployments_in = _req(data, "deployments", "")
    catalogue = _catalogue_specs(deployments_in)
    gpus = _parse_gpus(data, catalogue)
    deployments, models = _parse_deployments(deployments_in, catalogue, gpus)
    demand, point, source = _parse_demand(_req(data, "demand", ""), models, regions, h, q)
    quotas = {
        _region_gpu(item, f"quotas[{n}]", regions, gpus): _int(
            _req(item, "max_gpus", f"quotas[{n}]"), f"quotas[{n}].max_gpus"
        )
        for n, item in _pairs(data.get("quotas"), "quotas")
    }
    risk, spot_avail = _parse_spot(data, regions, gpus)
    initial = _parse_initial(data.get("initial"), models, regions, deployments)
    mins, maxs = _parse_limits(data.get("limits"), models, regions)
    rr, latency = _parse_rerouting(data, regions)
    solver_in, solver = _parse_solver(data)
    penalty = data.get("shortfall_penalty_per_tps_hour")
    return Scenario(
        name=name,
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
        spot_risk_discount=risk,
        initial=initial,
        min_instances=mins,
        max_instances=maxs,
        rerouting=bool(rr.get("enabled", False)),
        max_latency_ms=_num(rr.get("max_latency_ms", math.inf), "rerouting.max_latency_ms", lo=0)
        if rr.get("max_latency_ms") is not None
        else math.inf,
        latency_ms=latency,
        min_local_share=_num(rr.get("min_local_share", 0.0), "rerouting.min_local_share", lo=0, hi=1),
        start_fee=_num(data.get("start_fee", 0.0), "start_fee", lo=0),
        shortfall_penalty=None
        if penalty is None
        else _num(penalty, "shortfall_penalty_per_tps_hour", lo=0, strict_lo=True),
        solver=solver,
        time_limit_s=_num(solver_in.get("time_limit_s", 60.0), "solver.time_limit_s", lo=0.1, hi=3600),
        gap_rel=_num(solver_in.get("gap_rel", 0.01), "solver.gap_rel", lo=0, hi=0.5),
    )


def _parse_horizon(data: Any, hours: int | None) -> tuple[str, int, float | None]:
    """The schema check, then name, hours and risk quantile."""
    if not isinstance(data, Mapping):
        raise ScenarioError("scenario", "must be a JSON object")
    try:
        validate_plan(dict(data))
    except PlanSchemaError as exc:
        raise ScenarioError(exc.where, exc.message, hint=exc.hint) from None
    dft = data.get("demand_from_trace")
    if dft is not None and not (isinstance(dft, Mapping) and dft.get("resolved")):
        raise ScenarioError("demand_from_trace", "is resolved by the service or the CLI (planner.plans.services)")
    name = str(data.get("name", "scenario"))
    h = hours if hours is not None else data.get("hours", 24)
    h = _int(h, "hours", lo=1)
    if h > MAX_HOURS:
        raise ScenarioError("hours", f"at most {MAX_HOURS} (one week), got {h}")
    rq = data.get("risk_quantile", None)
    q = None if rq is None else _num(rq, "risk_quantile", lo=0, hi=1, strict_lo=True)
    if q is not None and q >= 1:
        raise ScenarioError("risk_quantile", "must be below 1")
    return name, h, q


def _parse_regions(data: Mapping) -> list[str]:
    regions = _req(data, "regions", "")
    if not isinstance(regions, list) or not regions:
        raise ScenarioError("regions", "must be a non-empty list of region names")
    regions = [_name(r, f"regions[{n}]") for n, r in enumerate(regions)]
    if len(set(regions)) != len(regions):
        raise ScenarioError("regions", "has duplicates")
    return regions


def _parse_gpus(data: Mapping, catalogue: dict[str, dict]) -> dict[str, GpuType]:
    """GPU types and their prices per GPU-hour; catalogue deployments add the prices of GPU types not given."""
    gpus_in = dict(data.get("gpus") or {}) if isinstance(data.get("gpus") or {}, Mapping) else data.get("gpus")
    if isinstance(gpus_in, dict):
        for spec in catalogue.values():  # prices of catalogue GPU types not given inline
            if spec["gpu"] not in gpus_in:
                per = spec["price_per_instance_hour"]
                gpus_in[spec["gpu"]] = {
                    k: round(float(v) / spec["gpus_per_instance"], 6)
                    for k, v in per.items()
                    if k in OPTIONS and v is not None
                }
    if not isinstance(gpus_in, Mapping) or not gpus_in:
        raise ScenarioError("gpus", 'must be an object like {"h100": {"on_demand": 12.3, "spot": 4.9}}')
    gpus: dict[str, GpuType] = {}
    for g, spec in gpus_in.items():
        where = f"gpus.{g}"
        if not isinstance(spec, Mapping):
            raise ScenarioError(where, "must be an object of prices per GPU-hour")
        prices = {}
        for option in OPTIONS:
            if option in spec and spec[option] is not None:
                prices[option] = _num(spec[option], f"{where}.{option}", lo=0)
        unknown = set(spec) - set(OPTIONS)
        if unknown:
            raise ScenarioError(where, f"unknown keys {sorted(unknown)}; prices are {list(OPTIONS)} per GPU-hour")
        if "on_demand" not in prices and "reserved" not in prices:
            raise ScenarioError(where, "needs an on_demand or a reserved price")
        gpus[g] = GpuType(g, prices)
    return gpus


def _parse_deployments(
    deployments_in: Any, catalogue: dict[str, dict], gpus: dict[str, GpuType]
) -> tuple[dict[tuple[str, str], Deployment], list[str]]:
    """Deployments by (model, gpu), and the models in order of first appearance."""
    deployments: dict[tuple[str, str], Deployment] = {}
    models: list[str] = []
    for n, d in _pairs(deployments_in, "deployments"):
        where = f"deployments[{n}]"
        if "name" in d:  # by name from the hardware catalogue; inline keys override
            spec = catalogue[d["name"]]
            d = {
                "model": spec["model"],
                "gpu": spec["gpu"],
                "gpus_per_instance": spec["gpus_per_instance"],
                "theta_tps": spec["theta_tps"],
                "startup_s": spec["startup"]["vm_acquire_s"] + spec["startup"]["load_same_region_s"],
                **d,
            }
        model = _name(_req(d, "model", where), f"{where}.model")
        gpu = _name(_req(d, "gpu", where), f"{where}.gpu")
        if gpu not in gpus:
            raise ScenarioError(f"{where}.gpu", f"unknown GPU type {gpu!r}; known: {sorted(gpus)}")
        if (model, gpu) in deployments:
            raise ScenarioError(where, f"a second deployment of {model} on {gpu}")
        deployments[(model, gpu)] = Deployment(
            model,
            gpu,
            gpus_per_instance=_int(d.get("gpus_per_instance", 1), f"{where}.gpus_per_instance", lo=1),
            theta_tps=_num(_req(d, "theta_tps", where), f"{where}.theta_tps", lo=0, strict_lo=True),
            startup_s=_num(d.get("startup_s", 600.0), f"{where}.startup_s", lo=0),
        )
        if model not in models:
            models.append(model)
    if not deployments:
        raise ScenarioError("deployments", "must list at least one (model, gpu) deployment")
    return deployments, models


def _parse_demand(
    items: Any, models: list[str], regions: list[str], h: int, q: float | None
) -> tuple[dict, dict, dict]:
    """Per (model, region): the series to cover (quantile applied), the point forecast, and how it was obtained."""
    demand: dict[tuple[str, str], list[float]] = {}
    point: dict[tuple[str, str], list[float]] = {}
    source: dict[tuple[str, str], str] = {}
    for n, e in _pairs(items, "demand"):
        where = f"demand[{n}]"
        model = _name(_req(e, "model", where), f"{where}.model")
        region = _name(_req(e, "region", where), f"{where}.region")
        if model not in models:
            raise ScenarioError(f"{where}.model", f"{model!r} has no deployment; known: {models}")
        if region not in regions:
            raise ScenarioError(f"{where}.region", f"unknown region {region!r}; known: {regions}")
        if (model, region) in demand:
            raise ScenarioError(where, f"a second demand series for {model} in {region}")
        demand[(model, region)], point[(model, region)], source[(model, region)] = _covered_series(e, where, h, q)
    return demand, point, source


def _known_names(item: Mapping, where: str, *fields: tuple[str, str, Any]) -> tuple[str, ...]:
    """Read each (key, label, known names) field of ``item`` as a name, then check each is known."""
    names = tuple(_name(_req(item, key, where), f"{where}.{key}") for key, _label, _known in fields)
    for (key, label, known), value in zip(fields, names, strict=True):
        if value not in known:
            raise ScenarioError(f"{where}.{key}", f"unknown {label} {value!r}")
    return names


def _region_gpu(item: Mapping, where: str, regions: list[str], gpus: Mapping) -> tuple[str, str]:
    return _known_names(item, where, ("region", "region", regions), ("gpu", "GPU type", gpus))


def _model_region(item: Mapping, where: str, models: list[str], regions: list[str]) -> tuple[str, str]:
    return _known_names(item, where, ("model", "model", models), ("region", "region", regions))


def _parse_spot(data: Mapping, regions: list[str], gpus: Mapping) -> tuple[float, dict[tuple[str, str], int]]:
    """The spot risk discount and the spot GPUs available per (region, gpu)."""
    spot = data.get("spot") or {}
    if not isinstance(spot, Mapping):
        raise ScenarioError("spot", "must be an object")
    risk = _num(spot.get("risk_discount", 0.0), "spot.risk_discount", lo=0, hi=0.99)
    spot_avail = {
        _region_gpu(item, f"spot.available[{n}]", regions, gpus): _int(
            _req(item, "max_gpus", f"spot.available[{n}]"), f"spot.available[{n}].max_gpus"
        )
        for n, item in _pairs(spot.get("available"), "spot.available")
    }
    return risk, spot_avail


def _parse_initial(items: Any, models: list[str], regions: list[str], deployments: Mapping) -> dict:
    """The fleet running before hour 0, per (model, region, gpu)."""
    initial = {}
    for n, item in _pairs(items, "initial"):
        m, r = _model_region(item, f"initial[{n}]", models, regions)
        g = _name(_req(item, "gpu", f"initial[{n}]"), f"initial[{n}].gpu")
        if (m, g) not in deployments:
            raise ScenarioError(f"initial[{n}].gpu", f"{m} has no deployment on {g!r}")
        initial[(m, r, g)] = _int(_req(item, "instances", f"initial[{n}]"), f"initial[{n}].instances")
    return initial


def _parse_limits(items: Any, models: list[str], regions: list[str]) -> tuple[dict, dict]:
    """Min and max instances per (model, region)."""
    mins, maxs = {}, {}
    for n, item in _pairs(items, "limits"):
        key = _model_region(item, f"limits[{n}]", models, regions)
        if "min_instances" in item:
            mins[key] = _int(item["min_instances"], f"limits[{n}].min_instances")
        if "max_instances" in item:
            maxs[key] = _int(item["max_instances"], f"limits[{n}].max_instances")
        if key in mins and key in maxs and mins[key] > maxs[key]:
            raise ScenarioError(f"limits[{n}]", "min_instances exceeds max_instances")
    return mins, maxs


def _parse_rerouting(data: Mapping, regions: list[str]) -> tuple[Mapping, dict[tuple[str, str], float]]:
    """The rerouting object and its latencies per (from, to) region (symmetric unless said otherwise)."""
    rr = data.get("rerouting") or {}
    if not isinstance(rr, Mapping):
        raise ScenarioError("rerouting", "must be an object")
    latency = {}
    for n, item in _pairs(rr.get("latency_ms"), "rerouting.latency_ms"):
        where = f"rerouting.latency_ms[{n}]"
        a = _name(_req(item, "from", where), f"{where}.from")
        b = _name(_req(item, "to", where), f"{where}.to")
        for side, r in (("from", a), ("to", b)):
            if r not in regions:
                raise ScenarioError(f"{where}.{side}", f"unknown region {r!r}")
        ms = _num(_req(item, "ms", where), f"{where}.ms", lo=0)
        latency[(a, b)] = ms
        if item.get("symmetric", True):
            latency.setdefault((b, a), ms)
    return rr, latency


def _parse_solver(data: Mapping) -> tuple[Mapping, str]:
    solver_in = data.get("solver") or {}
    if not isinstance(solver_in, Mapping):
        raise ScenarioError("solver", "must be an object")
    solver = solver_in.get("name", "highs")
    if solver not in ("highs", "cbc"):
        raise ScenarioError("solver.name", f"must be 'highs' or 'cbc', got {solver!r}")
    return solver_in, solver
