"""Scenario JSON -> frozen configuration + workload. Errors name the offending field (ScenarioError)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from simulations.engine.config import (
    TIERS,
    DeploymentSpec,
    EndpointConfig,
    EngineConfig,
    FleetConfig,
    NetworkConfig,
    PolicyConfig,
    RegionConfig,
    ScenarioError,
    SLOConfig,
)
from simulations.engine.policies import AUTOSCALERS, ENDPOINT_ROUTERS, INSTANCE_ROUTERS, REGION_ROUTERS, SCHEDULERS
from simulations.engine.workload import Workload, read_trace_file, synthesise


@dataclass(frozen=True)
class Scenario:
    name: str
    fleet: FleetConfig
    policy: PolicyConfig
    slo: SLOConfig
    engine: EngineConfig
    workload_spec: dict

    def with_strategy(self, autoscaler: str | None = None, **engine) -> Scenario:
        s = self
        if autoscaler:
            if autoscaler not in AUTOSCALERS:
                raise ScenarioError("strategy.autoscaler", f"unknown strategy {autoscaler!r}; known: {sorted(AUTOSCALERS)}")
            s = replace(s, policy=replace(s.policy, autoscaler=autoscaler))
        if engine:
            s = replace(s, engine=replace(s.engine, **engine))
        return s


def resolve_deployment(value, named: dict, where: str) -> DeploymentSpec:
    """Inline contract dict, a name from the scenario's ``deployments``, or a catalogue built-in name."""
    if isinstance(value, dict):
        return DeploymentSpec.from_dict(value, where)
    if isinstance(value, str):
        if value in named:
            return DeploymentSpec.from_dict(named[value], f"deployments.{value}")
        spec = _catalogue_lookup(value)
        if spec is not None:
            return DeploymentSpec.from_dict(spec, where)
        raise ScenarioError(where, f"unknown deployment {value!r}: inline the spec, define it under "
                                   f"'deployments', or use a hardware-catalogue name")
    raise ScenarioError(where, "must be a deployment spec object or a deployment name")


def _catalogue_lookup(name: str) -> dict | None:
    try:
        import planner.catalogue as catalogue  # Django-free built-in data, if present
    except ImportError:
        return None
    for attr in ("builtin_engine_spec", "engine_spec", "get_engine_spec"):
        fn = getattr(catalogue, attr, None)
        if callable(fn):
            try:
                spec = fn(name)
            except (KeyError, LookupError, ValueError):
                return None
            return dict(spec) if spec else None
    return None


def parse_scenario(d: dict, *, base_dir: str | Path | None = None) -> Scenario:
    if not isinstance(d, dict):
        raise ScenarioError("scenario", "must be a JSON object")
    named = d.get("deployments") or {}
    if not isinstance(named, dict):
        raise ScenarioError("deployments", "must be an object of name -> deployment spec")
    fleet_d = d.get("fleet")
    if not isinstance(fleet_d, dict):
        raise ScenarioError("fleet", "is required: {regions: [...], endpoints: [...]}")
    regions_d = fleet_d.get("regions") or []
    if not isinstance(regions_d, list):
        raise ScenarioError("fleet.regions", "must be a list")
    regions = []
    for i, r in enumerate(regions_d):
        if isinstance(r, str):
            r = {"name": r}
        if not isinstance(r, dict) or not r.get("name"):
            raise ScenarioError(f"fleet.regions[{i}]", "needs a name")
        spot = r.get("spot_pool") or {}
        if not isinstance(spot, dict):
            raise ScenarioError(f"fleet.regions[{i}].spot_pool", "must be an object model -> count")
        regions.append(RegionConfig(name=str(r["name"]), spot_pool={str(k): int(v) for k, v in spot.items()},
                                    vm_capacity=int(r.get("vm_capacity", 0))))
    eps_d = fleet_d.get("endpoints")
    if not isinstance(eps_d, list) or not eps_d:
        raise ScenarioError("fleet.endpoints", "needs at least one endpoint {region, model, deployment, initial}")
    endpoints = []
    seen = set()
    for i, e in enumerate(eps_d):
        where = f"fleet.endpoints[{i}]"
        if not isinstance(e, dict):
            raise ScenarioError(where, "must be an object")
        region = str(e.get("region") or (regions[0].name if regions else "region-1"))
        if region not in [r.name for r in regions]:
            if regions_d:
                raise ScenarioError(f"{where}.region", f"region {region!r} is not in fleet.regions")
            regions.append(RegionConfig(name=region))
        if "deployment" not in e:
            raise ScenarioError(f"{where}.deployment", "is required (a spec object or a deployment name)")
        spec = resolve_deployment(e["deployment"], named, f"{where}.deployment")
        model = str(e.get("model") or spec.model)
        if (region, model) in seen:
            raise ScenarioError(where, f"duplicate endpoint for region {region!r} and model {model!r}")
        seen.add((region, model))

        def count(key, default, where=where, e=e):
            v = e.get(key, default)
            if not isinstance(v, int | float) or v < 0 or int(v) != v:
                raise ScenarioError(f"{where}.{key}", f"must be a non-negative integer, got {v!r}")
            return int(v)

        initial = count("initial", 2)
        lo = count("min", 1)
        hi = count("max", max(initial, 1_000_000 if False else max(initial, 20)))
        if lo > hi:
            raise ScenarioError(f"{where}.min", f"min ({lo}) is above max ({hi})")
        local = e.get("weights_in_region", True)
        if not isinstance(local, bool):
            raise ScenarioError(f"{where}.weights_in_region", f"must be true or false, got {local!r}")
        endpoints.append(EndpointConfig(region=region, model=model, deployment=spec, initial=initial,
                                        min_instances=lo, max_instances=hi, weights_in_region=local))
    net_d = fleet_d.get("network") or {}
    network = NetworkConfig()
    if net_d:
        bins = net_d.get("bins", network.bins)
        try:
            bins = tuple((float(p), float(lo), float(hi)) for p, lo, hi in bins)
        except (TypeError, ValueError):
            raise ScenarioError("fleet.network.bins", "must be a list of [probability, low_s, high_s]") from None
        if net_d.get("apply_to", "cross_region") not in ("cross_region", "all"):
            raise ScenarioError("fleet.network.apply_to", "must be 'cross_region' or 'all'")
        network = NetworkConfig(bins=bins, apply_to=net_d.get("apply_to", "cross_region"))
    fleet = FleetConfig(regions=tuple(regions), endpoints=tuple(endpoints), network=network)

    st = d.get("strategy") or {}
    if isinstance(st, str):
        st = {"autoscaler": st}
    if not isinstance(st, dict):
        raise ScenarioError("strategy", "must be an object or an autoscaler name")
    for key, table in (("autoscaler", AUTOSCALERS), ("region_router", REGION_ROUTERS),
                       ("endpoint_router", ENDPOINT_ROUTERS), ("instance_router", INSTANCE_ROUTERS),
                       ("scheduler", SCHEDULERS)):
        if key in st and st[key] not in table:
            raise ScenarioError(f"strategy.{key}", f"unknown {key} {st[key]!r}; known: {sorted(table)}")
    policy = PolicyConfig(
        autoscaler=st.get("autoscaler", "static"), autoscaler_params=dict(st.get("params") or {}),
        region_router=st.get("region_router", "sageserve"), endpoint_router=st.get("endpoint_router", "least-utilised"),
        instance_router=st.get("instance_router", "jsq-tokens"), scheduler=st.get("scheduler", "fcfs"),
        scheduler_params=dict(st.get("scheduler_params") or {}),
        region_threshold=float(st.get("region_threshold", 0.70)),
    )
    slo_d = d.get("slo") or {}
    base = SLOConfig()
    ttft = dict(base.ttft_s)
    e2e = dict(base.e2e_s)
    for key, target in (("ttft_s", ttft), ("e2e_s", e2e)):
        for tier, v in (slo_d.get(key) or {}).items():
            if tier not in TIERS:
                raise ScenarioError(f"slo.{key}.{tier}", f"unknown tier; use one of {list(TIERS)}")
            try:
                target[tier] = float(v) if v is not None else math.inf
            except (TypeError, ValueError):
                raise ScenarioError(f"slo.{key}.{tier}", f"must be seconds, got {v!r}") from None
    slo = SLOConfig(ttft_s=ttft, e2e_s=e2e, percentile=float(slo_d.get("percentile", 95.0)))

    en = d.get("engine") or {}
    mode = en.get("mode", "fast")
    if mode not in ("fast", "reference"):
        raise ScenarioError("engine.mode", "must be 'fast' or 'reference'")
    engine = EngineConfig(mode=mode, chunked_prefill=bool(en.get("chunked_prefill", False)), timeline_step_s=float(en.get("timeline_step_s", 60.0)),
                          max_time_s=float(en.get("max_time_s", math.inf)), seed=int(d.get("seed", en.get("seed", 0))),
                          instant_provisioning=bool(en.get("instant_provisioning", False)))
    wl = d.get("workload")
    if not isinstance(wl, dict):
        raise ScenarioError("workload", "is required: {trace_path | trace_id | synthetic}")
    wl = dict(wl)
    if base_dir is not None and wl.get("trace_path") and not Path(wl["trace_path"]).is_absolute():
        candidate = Path(base_dir) / wl["trace_path"]
        if candidate.exists():
            wl["trace_path"] = str(candidate)
    if not any(k in wl for k in ("trace_path", "trace_id", "synthetic", "frame")):
        raise ScenarioError("workload", "give one of trace_path, trace_id or synthetic")
    return Scenario(name=str(d.get("name", "scenario")), fleet=fleet, policy=policy, slo=slo, engine=engine,
                    workload_spec=wl)


def _resolve_path(path: str) -> Path:
    """A relative trace path is tried against the working directory, then the repository root."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    root = Path(__file__).resolve().parents[2] / p
    return root if root.exists() else p


def build_workload(scenario: Scenario, frame=None) -> Workload:
    """Materialise the scenario's workload (a DataFrame may be passed in, e.g. a trace loaded by Django)."""
    wl = scenario.workload_spec
    models = sorted({e.model for e in scenario.fleet.endpoints})
    regions = scenario.fleet.region_names
    if "synthetic" in wl:
        syn = wl["synthetic"]
        if not isinstance(syn, dict):
            raise ScenarioError("workload.synthetic", "must be an object")
        return synthesise(syn, seed=int(syn.get("seed", scenario.engine.seed)), model_names=models,
                          region_names=regions)
    if frame is None:
        if "trace_path" not in wl:
            raise ScenarioError("workload.trace_id", "a stored trace can only be loaded through the Django app")
        frame = read_trace_file(_resolve_path(wl["trace_path"]))
    limit = wl.get("limit")
    if limit:
        frame = frame.iloc[: int(limit)]
    rate = float(wl.get("rate_scale", 1.0))
    if rate <= 0:
        raise ScenarioError("workload.rate_scale", "must be > 0")
    frame = frame.copy()
    if "model" not in frame.columns:
        frame["model"] = wl.get("model", models[0])
    if "region" not in frame.columns:
        frame["region"] = wl.get("region", regions[0])
    if "tier" not in frame.columns:
        frame["tier"] = wl.get("tier", "IW-F")
    return Workload.from_frame(frame, rate_scale=rate)
