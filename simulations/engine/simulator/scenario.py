"""Scenario JSON -> frozen configuration + workload. Errors name the offending field (ScenarioError).

The JSON is validated once by the schema (simulations/engine/scenario/schema.py); this module maps the validated
sections onto the frozen config dataclasses and materialises the workload within the run's ``Limits``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from planner.inputs import suggest, to_kwargs
from simulations.engine.fleet.pools import check_kind, check_pool_scaling, expand, is_disaggregated
from simulations.engine.policies import AUTOSCALERS, get_policy
from simulations.engine.policies.params import check_params
from simulations.engine.policies.registry import PolicyKind
from simulations.engine.scenario.config import (
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
from simulations.engine.scenario.power import EnergyConfig
from simulations.engine.scenario.schema import (
    Limits,
    Synthetic,
    default_limits,
    expected_requests,
    trace_fixtures,
    validate_input,
)
from simulations.engine.scenario.schema import Workload as WorkloadInput
from simulations.engine.workload.generator import generate_workload
from simulations.engine.workload.traceio import read_trace_arrays
from simulations.engine.workload.workload import Workload


@dataclass(frozen=True)
class Scenario:
    name: str
    fleet: FleetConfig
    policy: PolicyConfig
    slo: SLOConfig
    engine: EngineConfig
    workload_spec: dict  # the validated workload section as a dict (keys given in the scenario only)
    workload: WorkloadInput | None = None
    limits: Limits = field(default_factory=Limits)
    energy: EnergyConfig = field(default_factory=EnergyConfig)  # electricity price per region, PUE (energy.py)

    def with_strategy(self, autoscaler: str | None = None, **engine) -> Scenario:
        s = self
        if autoscaler:
            if autoscaler not in AUTOSCALERS:
                raise ScenarioError("strategy.autoscaler", f"unknown strategy {autoscaler!r}; known: {sorted(AUTOSCALERS)}")
            s = replace(s, policy=replace(s.policy, autoscaler=autoscaler))
        if engine:
            s = replace(s, engine=replace(s.engine, **engine))
        return s


def _spec_dict(model) -> dict:
    """A validated deployment as the contract dict ``DeploymentSpec.from_dict`` reads (defaults left to it)."""
    return model.model_dump(exclude_unset=True, exclude={"theta_catalogue_tps", "theta_source"})


def resolve_deployment(value, named: dict, where: str) -> DeploymentSpec:
    """A validated inline spec, a name from the scenario's ``deployments``, or a catalogue built-in name."""
    if isinstance(value, str):
        if value in named:
            return DeploymentSpec.from_dict(_spec_dict(named[value]), f"deployments.{value}")
        spec = _catalogue_lookup(value)
        if spec is not None:
            return DeploymentSpec.from_dict(spec, where)
        raise ScenarioError(where, f"unknown deployment {value!r}",
                            hint="inline the spec, define it under 'deployments', or use a hardware-catalogue name"
                                 + (f"; {suggest(value, list(named))}" if named else ""))
    return DeploymentSpec.from_dict(_spec_dict(value), where)


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


def parse_scenario(d: dict, *, limits: Limits | None = None) -> Scenario:
    """Validate a scenario dict against the schema (simulations.engine.scenario.schema) and build the frozen config.

    The one entry point for every caller (API, forms, CLI, comparison runner, jobs). ``limits`` bounds the
    work of the run (default: ``schema.default_limits()``, set from settings by the Django app)."""
    limits = limits or default_limits()
    sc = validate_input(d)
    fleet = _fleet(sc)
    policy = _policy(sc.strategy)
    _check_kv_bytes(fleet.endpoints, policy, sc.deployments)
    check_pool_scaling(fleet.endpoints, policy.autoscaler, "strategy" if isinstance(sc.strategy, str) else
                       "strategy.autoscaler")
    base = SLOConfig()
    ttft = {**base.ttft_s, **sc.slo.ttft_s.given()}
    e2e = {**base.e2e_s, **sc.slo.e2e_s.given()}
    slo = SLOConfig(ttft_s=ttft, e2e_s=e2e, percentile=float(sc.slo.percentile), **sc.slo.rich_kwargs())
    engine = _engine(sc, limits)
    if engine.chunked_prefill and any(e.pool == "prefill" for e in fleet.endpoints):
        raise ScenarioError("engine.chunked_prefill", "is not modelled with disaggregated endpoints (a prefill "
                            "pool prefills whole prompts, as Splitwise's)", hint="chunked_prefill false")
    asked = expected_requests(sc.workload.synthetic) if sc.workload.synthetic is not None else 0.0
    if asked > limits.max_requests:
        raise ScenarioError("workload.synthetic", f"asks for about {asked:,.0f} "
                                                  f"requests; the limit is {limits.max_requests:,} per run",
                            hint="lower total_requests or rps x duration_s (rate_rps x duration_s, requests)")
    energy = EnergyConfig() if sc.energy is None else EnergyConfig(usd_per_kwh=dict(sc.energy.usd_per_kwh),
                                                                    pue=sc.energy.pue)
    return Scenario(name=str(sc.name), fleet=fleet, policy=policy, slo=slo, engine=engine,
                    workload_spec=sc.workload.model_dump(exclude_unset=True), workload=sc.workload, limits=limits,
                    energy=energy)


def _fleet(sc) -> FleetConfig:
    """Regions (given, or those the endpoints name), endpoints with their resolved deployments, the network."""
    named = sc.deployments
    regions = []
    for r in sc.fleet.regions:
        if isinstance(r, str):
            regions.append(RegionConfig(name=r))
        else:
            regions.append(RegionConfig(**to_kwargs(r)))
    given_regions = bool(sc.fleet.regions)
    endpoints = []
    seen = set()
    for i, e in enumerate(sc.fleet.endpoints):
        where = f"fleet.endpoints[{i}]"
        region = e.region or (regions[0].name if regions else "region-1")
        if region not in [r.name for r in regions]:
            if given_regions:
                raise ScenarioError(f"{where}.region", f"region {region!r} is not in fleet.regions",
                                    hint=suggest(region, [r.name for r in regions]))
            regions.append(RegionConfig(name=region))
        check_kind(e, where)
        if is_disaggregated(e):  # two engine endpoints: the prefill pool and the decode pool (pools.py)
            pair = expand(e, where, region, e.model, lambda v, w: resolve_deployment(v, named, w))
            if (region, pair[0].model) in seen:
                raise ScenarioError(where, f"duplicate endpoint for region {region!r} and model {pair[0].model!r}")
            seen.add((region, pair[0].model))
            endpoints.extend(pair)
            continue
        spec = resolve_deployment(e.deployment, named, f"{where}.deployment")
        model = e.model or spec.model
        if (region, model) in seen:
            raise ScenarioError(where, f"duplicate endpoint for region {region!r} and model {model!r}")
        seen.add((region, model))
        kwargs = to_kwargs(e)
        for extra in ("prefill_pool", "decode_pool", "mixed_pool"):
            kwargs.pop(extra)
        kwargs.update(region=region, model=model, deployment=spec)
        if kwargs["max_instances"] is None:
            kwargs["max_instances"] = max(e.initial, 20)
        if kwargs["min_instances"] > kwargs["max_instances"]:
            raise ScenarioError(f"{where}.min", f"min ({kwargs['min_instances']}) is above max "
                                                f"({kwargs['max_instances']})")
        endpoints.append(EndpointConfig(**kwargs))
    network = NetworkConfig()
    if sc.fleet.network is not None:
        kw = to_kwargs(sc.fleet.network)
        kw["bins"] = network.bins if kw["bins"] is None else tuple(tuple(float(x) for x in b) for b in kw["bins"])
        network = NetworkConfig(**kw)
    return FleetConfig(regions=tuple(regions), endpoints=tuple(endpoints), network=network)


def _policy(st) -> PolicyConfig:
    """The strategy (a name, or the object), its knobs checked through the models the chosen policies declare."""
    if isinstance(st, str):
        if st not in AUTOSCALERS:
            raise ScenarioError("strategy", f"unknown autoscaler {st!r}", hint=suggest(st, list(AUTOSCALERS)))
        return PolicyConfig(autoscaler=st)
    if st is None:
        return PolicyConfig()
    policy = PolicyConfig(**to_kwargs(st))
    check_params(policy.autoscaler, policy.autoscaler_params, "strategy.params",
                 ((PolicyKind.REGION_ROUTER, policy.region_router),
                  (PolicyKind.ENDPOINT_ROUTER, policy.endpoint_router),
                  (PolicyKind.INSTANCE_ROUTER, policy.instance_router)))
    try:
        get_policy(PolicyKind.SCHEDULER, policy.scheduler).Params.read(policy.scheduler_params)
    except ScenarioError as exc:
        raise ScenarioError("strategy.scheduler_params" + exc.field[len("strategy.params"):], exc.message,
                            hint=exc.hint) from None
    return policy


def _engine(sc, limits: Limits) -> EngineConfig:
    """Engine options, the scenario's seed, and the run's simulated-time cap."""
    en = to_kwargs(sc.engine) if sc.engine is not None else {}
    if sc.seed is not None:
        en["seed"] = sc.seed
    max_time = en.get("max_time_s")
    if max_time is not None and max_time > limits.max_sim_time_s:
        raise ScenarioError("engine.max_time_s", f"is above the limit of {limits.max_sim_time_s:,.0f} simulated "
                                                 "seconds per run", hint="lower it, or ask the operator to raise "
                                                                         "PLANNER_MAX_SIM_TIME_S")
    en["max_time_s"] = float(limits.max_sim_time_s if max_time is None else max_time)
    engine = EngineConfig(**en)
    if engine.preemption_mode == "swap" and engine.chunked_prefill:
        raise ScenarioError("engine.preemption_mode", "swap is not modelled with chunked prefill",
                            hint="use recompute (vLLM's default), or chunked_prefill false")
    return engine


def _check_kv_bytes(endpoints, policy: PolicyConfig, named) -> None:
    """A policy that moves KV (Chiron's swap, Llumnix's live migration) needs every deployment's bytes of KV per
    token: refused here, naming the deployment, instead of failing half-way through the run."""
    cls = AUTOSCALERS.get(policy.autoscaler)
    use = cls.kv_bytes_use(cls.Params.read(policy.autoscaler_params)) if cls is not None else ""
    if not use:
        return
    for i, e in enumerate(endpoints):
        spec = e.deployment
        if spec.kv_bytes_per_token > 0:
            continue
        inline = spec.name in (named or {})
        where = f"deployments.{spec.name}.kv_bytes_per_token" if inline else f"fleet.endpoints[{i}].deployment"
        raise ScenarioError(where, f"deployment {spec.name!r} has no kv_bytes_per_token, which the "
                                   f"{policy.autoscaler!r} autoscaler needs: {use}",
                            hint="give the deployment kv_bytes_per_token (2 x layers x KV heads x head dim x bytes "
                                 "per value: 131072 for Llama-3.1-8B in 16 bits, 327680 for Llama-2-70B) in the "
                                 "scenario's deployments, or choose a strategy that does not move KV")


def build_workload(scenario: Scenario, frame=None, trace: str | Path | None = None) -> Workload:
    """Materialise the scenario's workload within its limits: a synthetic one from the generator; a trace file
    (``trace``: a file of this machine, else the scenario's ``workload.fixture``) through the one trace reader
    (``traceio.read_trace_arrays``, no pandas; the app passes a stored trace's normalised file the same way); or a
    DataFrame passed in (a frame the comparison runner synthesised)."""
    wl = scenario.workload_spec
    limits = scenario.limits
    models = sorted({e.model for e in scenario.fleet.endpoints})
    regions = scenario.fleet.region_names
    if "synthetic" in wl:
        syn = wl["synthetic"]
        parsed = getattr(scenario.workload, "synthetic", None)  # as the schema parsed it: validated once
        workload = generate_workload(syn, seed=int(syn.get("seed", scenario.engine.seed)), model_names=models,
                                     region_names=regions, parsed=None if isinstance(parsed, Synthetic) else parsed)
        check_workload_size(workload, limits)
        return workload
    if frame is not None:
        cols = Workload.frame_columns(frame)
    else:
        if trace is None and "fixture" not in wl:
            raise ScenarioError("workload.trace_id", "a stored trace can only be loaded through the Django app",
                                hint="run it from the web app, the API or the CLI with --team")
        cols = read_trace_arrays(trace if trace is not None else trace_fixtures()[wl["fixture"]])
    limit = wl.get("limit")
    if limit:
        cols = {k: v[: int(limit)] for k, v in cols.items()}
    n = len(cols["arrival_s"])
    if n > limits.max_requests:
        raise ScenarioError("workload", f"has {n:,} requests; the limit is {limits.max_requests:,} per run",
                            hint="set workload.limit, or ask the operator to raise PLANNER_MAX_SIM_REQUESTS")
    workload = Workload.from_arrays(cols, rate_scale=float(wl.get("rate_scale", 1.0)),
                                    default_model=wl.get("model", models[0]),
                                    default_region=wl.get("region", regions[0]),
                                    default_tier=wl.get("tier", "IW-F"))
    check_workload_size(workload, limits)
    return workload


def check_workload_size(workload: Workload, limits: Limits) -> None:
    """Refuse a workload above the run's request cap or spanning more simulated time than its time cap."""
    if len(workload) > limits.max_requests:
        raise ScenarioError("workload", f"has {len(workload):,} requests; the limit is {limits.max_requests:,} "
                                        "per run", hint="lower the rate or the duration, or set workload.limit")
    span = workload.duration_s
    if not math.isfinite(span) or span > limits.max_sim_time_s:
        raise ScenarioError("workload", f"spans {span:,.0f} simulated seconds; the limit is "
                                        f"{limits.max_sim_time_s:,.0f} per run",
                            hint="shorten the trace (workload.limit) or raise workload.rate_scale")
