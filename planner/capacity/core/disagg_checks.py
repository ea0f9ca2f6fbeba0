"""The search spec's ``disaggregated`` options, refused at the boundary with the field named. Django-free (the
scenario check is passed in: planner.comparisons.services.validate_scenario)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from planner.capacity.core.disagg import POOLS, disaggregate, pairs, pool_choice
from planner.capacity.core.probe import deployment_of
from planner.capacity.core.spec import SearchSpec, SpecError
from simulations.engine.fleet.pools import (
    POOL_AWARE_AUTOSCALERS as POOL_AWARE,  # the others scale only the prefill pool
)


def check_disaggregated(scenario: Mapping, spec: SearchSpec, validate_scenario: Callable[[dict], None],
                        engine_strategy: Callable[[str], str] | None = None) -> None:
    from simulations.engine import ScenarioError

    for i, e in enumerate(scenario["fleet"]["endpoints"]):
        if "prefill_pool" in e or "decode_pool" in e:
            raise ScenarioError(f"fleet.endpoints[{i}].prefill_pool", "the capacity search starts from "
                                "aggregated endpoints and sizes the pools itself",
                                hint="give the endpoint a deployment and the pools' deployments to try in the spec's "
                                     "disaggregated.<model> {\"prefill\": [...], \"decode\": [...]}")
    if not spec.disaggregated:
        return
    if spec.mode == "check":
        raise SpecError("disaggregated", "applies to a search (mode 'search'), not to a check of the scenario's fleet",
                        hint="remove disaggregated, or use mode 'search'")
    for i, name in enumerate(spec.strategies):
        strategy = engine_strategy(name) if engine_strategy else name
        if strategy not in POOL_AWARE:
            raise SpecError(f"strategies[{i}]", f"{name!r} scales only the prefill pool of a disaggregated endpoint",
                            hint=f"with disaggregated options use {' or '.join(POOL_AWARE)} (each pool by its own "
                                 "signal), or remove disaggregated")
    models = {e["model"] for e in scenario["fleet"]["endpoints"]}
    for model, option in spec.disaggregated.items():
        where = f"disaggregated.{model}"
        if model not in models:
            raise SpecError(where, f"no endpoint serves model {model!r}", hint=f"models: {', '.join(sorted(models))}")
        opt = option.model_dump()
        for pool in POOLS:
            for j, name in enumerate(opt[pool]):
                dep = deployment_of(scenario, name)
                if not dep:
                    raise SpecError(f"{where}.{pool}[{j}]", f"unknown deployment {name!r}",
                                    hint="name one of the scenario's deployments or the catalogue's")
                if dep.get("model") not in (None, model):
                    raise SpecError(f"{where}.{pool}[{j}]", f"serves model {dep.get('model')!r}, not {model!r}")
        for pre, dec in pairs(opt):  # each pair as the probes will build it: the engine's own checks
            _check_pair(scenario, model, pre, dec, option, where, validate_scenario)


def _check_pair(scenario: Mapping, model: str, pre: str, dec: str, option, where: str, validate_scenario) -> None:
    import copy

    from simulations.engine import ScenarioError

    d = copy.deepcopy(dict(scenario))
    d["fleet"]["endpoints"] = [e for e in d["fleet"]["endpoints"] if e["model"] == model][:1]
    disaggregate(d["fleet"]["endpoints"][0], pool_choice(option, pre, dec), {}, "static")
    try:
        validate_scenario(d)
    except ScenarioError as exc:  # name the spec's field: the pool the engine refused
        field = exc.field
        tail = ""
        for pool, name in (("prefill", pre), ("decode", dec)):
            if f".{pool}_pool" in field:
                tail = f".{pool}[{option.model_dump()[pool].index(name)}]"
        if ".kv_link" in field:
            tail = ".kv_link" + field.split(".kv_link", 1)[1]
        raise SpecError(where + tail, f"{pre} -> {dec}: {exc.message}", hint=exc.hint) from None
