"""Run one comparison variant on the engine and return its normalised summary. Django-free.

A comparison scenario is an engine scenario (docs/simulator.md) whose ``strategy`` is left to the
variant, plus one convenience: ``workload.synthesize`` (the name of a bundled planner.ingest synthesiser
spec, e.g. ``sageserve_day`` for ``fixtures/workloads/sageserve_day.json``, or the spec inline) with optional
``spec_overrides`` deep-merged into it (how the IW:NIW-ratio and burst variants are made), so a scenario file
can name a workload without a stored trace. The scenario schema (simulations/engine/scenario/schema.py) validates it
all, the synthesiser spec included; no file path from a scenario is opened.

Variant -> engine: strategy name = engine autoscaler name (LT policies live in
simulations/engine/policies/longterm.py); ``scheduler`` overrides the instance scheduler; ``knobs`` are
merged over the scenario's ``strategy.params`` (``strategy_params`` per strategy name are merged first; a variant
of another autoscaler family than the scenario's does not inherit the scenario autoscaler's own knobs);
``strategy_policies`` per strategy name set its routers / scheduler (e.g. LT without cross-region rerouting).
A variant's ``bundle`` (bundles.py) applies its routers, engine options and signal rule; its ``seed`` replaces
the scenario's seed and the synthesised workload's seed (so every seed is another day of the same traffic).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

LT_STRATEGIES = ("lt-i", "lt-u", "lt-ua")


def synth_frame(workload: dict, base_dir: Path | None = None, default_seed: int = 0, history_days: int = 0):
    """The DataFrame of a ``workload.synthesize`` block (planner.ingest.synth). ``base_dir`` is unused: bundled
    specs are looked up by name (kept for callers)."""
    from planner.ingest.synth import synthesize
    from simulations.engine.scenario.schema import Workload, synth_spec

    spec = synth_spec(Workload.model_validate(workload))
    seed = workload.get("seed", spec.get("seed", default_seed))
    if history_days:
        # the days BEFORE the simulated one: same spec, another seed, weekday shifted back
        spec = dict(spec, days=int(history_days),
                    start_weekday=(int(spec.get("start_weekday", 0)) - int(history_days)) % 7)
        seed = int(seed) + 1000
    frame = synthesize(spec, seed=seed)
    for col, mapping in (workload.get("rename") or {}).items():
        if col in frame.columns:
            frame[col] = frame[col].astype(str).replace(mapping)
    return frame


def history_tps(scenario: dict, base_dir: Path | None = None, resolution_s: int = 300) -> dict[str, list[float]]:
    """IW input TPS per "region|model" in ``resolution_s`` bins over ``forecast_history.days`` synthetic days
    before the simulated day (the traffic an operator's forecaster was trained on; never the simulated day)."""
    import numpy as np

    days = int((scenario.get("forecast_history") or {}).get("days", 0))
    wl = scenario.get("workload") or {}
    if days <= 0 or "synthesize" not in wl:
        return {}
    spec = wl["synthesize"]
    if isinstance(spec, dict) and spec.get("kind", "sageserve") != "sageserve":
        return {}  # only the multi-day SageServe-like kind has days before the simulated one
    frame = synth_frame(wl, base_dir, default_seed=int(scenario.get("seed", 0)), history_days=days)
    frame = frame[frame["tier"].astype(str) != "NIW"]
    nb = int(days * 86400 // resolution_s)
    out = {}
    for (region, model), g in frame.groupby([frame["region"].astype(str), frame["model"].astype(str)]):
        idx = np.minimum((g["arrival_s"].to_numpy() // resolution_s).astype(int), nb - 1)
        tps = np.bincount(idx, weights=g["input_tokens"].to_numpy(dtype=float), minlength=nb) / resolution_s
        out[f"{region}|{model}"] = [round(float(x), 4) for x in tps]
    return out


def with_seed(scenario: dict, seed) -> dict:
    """The scenario with another seed for the engine and for a synthesised workload (None: unchanged)."""
    if seed is None:
        return scenario
    d = copy.deepcopy(scenario)
    d["seed"] = int(seed)
    wl = d.get("workload")
    if isinstance(wl, dict) and "synthesize" in wl:
        wl["seed"] = int(seed)
    if isinstance(wl, dict) and isinstance(wl.get("synthetic"), dict) and "seed" in wl["synthetic"]:
        wl["synthetic"]["seed"] = int(seed)  # (without its own seed the engine workload follows the scenario's)
    return d


# autoscalers that read the same threshold knobs with the same meaning (SageServe's LT policies keep the reactive
# layer's scale-out / scale-in thresholds and cooldowns), so a scenario written for one of them configures them all
REACTIVE_FAMILY = frozenset({"reactive-unified", "reactive-unified-niwq", "reactive-siloed", "lt-i", "lt-u", "lt-ua"})


def inherited_params(strategy: dict, variant_strategy: str) -> dict:
    """The scenario's ``strategy.params`` a variant of ``variant_strategy`` inherits: all of them for the scenario's
    own autoscaler (or one of its family); for another autoscaler, only those that are not the scenario autoscaler's
    own knobs (router knobs, shared knobs of a scenario whose autoscaler reads none). Chiron's ``scale_out_above``
    is its utilisation ablation's threshold, not the reactive autoscaler's: it must not inherit 0.7 from a
    reactive scenario, nor be refused for the reactive ``cooldown_s``."""
    params = dict(strategy.get("params") or {})
    own = strategy.get("autoscaler")
    if not own or own == variant_strategy or (own in REACTIVE_FAMILY and variant_strategy in REACTIVE_FAMILY):
        return params
    from simulations.engine.policies.params import params_model, router_knobs
    from simulations.engine.policies.registry import AUTOSCALERS, PolicyKind

    if own not in AUTOSCALERS:
        return params
    model = params_model(PolicyKind.AUTOSCALER, own)
    if not model.refuse_unknown:
        return params
    owned = set(model.knob_names()) - router_knobs()
    return {k: v for k, v in params.items() if k not in owned}


def engine_scenario_dict(scenario: dict, variant: dict) -> dict:
    """The engine scenario for one variant (strategy, scheduler, knobs, bundle and seed applied)."""
    from planner.comparisons.core.bundles import apply_signal_rule, get_bundle

    bundle = get_bundle(variant["bundle"]) if variant.get("bundle") else None
    d = copy.deepcopy(with_seed(scenario, variant.get("seed")))
    if bundle is not None:
        d = apply_signal_rule(d, bundle.signal)
        if bundle.engine:
            d["engine"] = {**(d.get("engine") or {}), **bundle.engine}
    st = d.get("strategy") or {}
    if isinstance(st, str):
        st = {"autoscaler": st}
    params = inherited_params(st, variant["strategy"])
    params.update((d.get("strategy_params") or {}).get(variant["strategy"], {}))
    params.update(variant.get("knobs") or {})
    engine_name = variant["strategy"]
    if engine_name == "reactive-unified" and d.get("niw_queue", True):
        engine_name = "reactive-unified-niwq"  # SageServe's Reactive holds NIW in the queue manager (sec. 4, 7.1)
    st = {**st, "autoscaler": engine_name, "params": params}
    st.update((d.get("strategy_policies") or {}).get(variant["strategy"], {}))
    if bundle is not None:
        st.update(bundle.policy)
    if variant.get("scheduler"):
        st["scheduler"] = variant["scheduler"]
    d["strategy"] = st
    d.pop("strategy_params", None)
    for key in ("forecast_history", "niw_queue", "price_sources", "description", "paper", "strategy_policies",
                "preset", "preset_sources"):
        d.pop(key, None)
    wl = dict(d.get("workload") or {})
    if "synthesize" in wl:
        wl = {k: v for k, v in wl.items() if k not in ("synthesize", "spec_overrides", "seed", "rename")}
        wl["frame"] = True
    d["workload"] = wl
    return d


def load_workload(scenario: dict, engine_scenario, base_dir: Path | None = None, trace=None):
    """The engine workload; ``trace`` is an uploaded trace's normalised file (``workload.trace_id``), read by the
    engine's one trace reader (traceio)."""
    from simulations.engine import build_workload

    if trace is not None:
        return build_workload(engine_scenario, trace=trace)
    wl = scenario.get("workload") or {}
    if "synthesize" in wl:
        frame = synth_frame(wl, base_dir, default_seed=int(scenario.get("seed", 0)))
        return build_workload(engine_scenario, frame=frame)
    return build_workload(engine_scenario)


def run_variant(scenario: dict, variant: dict, *, progress=None, base_dir: str | Path | None = None,
                workload=None, limits=None, trace=None) -> dict:
    """Simulate one variant; ``progress(fraction, message)`` may raise to cancel. Returns the summary."""
    from planner.comparisons.core.summary import summarise
    from simulations.engine import parse_scenario, simulate

    base = Path(base_dir) if base_dir else None
    variant = dict(variant)
    scenario = with_seed(scenario, variant.get("seed"))
    if variant["strategy"] in LT_STRATEGIES:
        knobs = dict(variant.get("knobs") or {})
        knobs.setdefault("niw_queue", bool(scenario.get("niw_queue", True)))
        if "history_tps" not in knobs:
            hist = history_tps(scenario, base)
            if hist:
                knobs["history_tps"] = hist
        variant["knobs"] = knobs
    eng = parse_scenario(engine_scenario_dict(scenario, variant), limits=limits)
    if workload is None:
        workload = load_workload(scenario, eng, base, trace=trace)
    result = simulate(eng, workload, progress=progress)
    return summarise(result, key=variant["key"], strategy=variant["strategy"], scheduler=variant.get("scheduler", ""))


def _catalogue_spec(name) -> dict | None:
    """A hardware-catalogue deployment by name, as the engine resolves it (prices, theta)."""
    from planner.catalogue import engine_spec

    try:
        return engine_spec(name) if isinstance(name, str) else None
    except (KeyError, LookupError, ValueError):
        return None


def describe_assumptions(scenario: dict, summaries: dict[str, dict]) -> dict:
    """What the PDF's assumptions page lists: trace, fleet, prices (with sources), SLOs, knobs."""
    wl = scenario.get("workload") or {}
    any_s = next(iter(summaries.values()), {})
    trace = {
        "workload": wl.get("synthesize") if isinstance(wl.get("synthesize"), str) else
        ("inline synthesiser spec" if "synthesize" in wl else
         f"uploaded trace #{wl['trace_id']}" if wl.get("trace_id") else
         f"bundled trace {wl['fixture']}" if wl.get("fixture") else "synthetic"),
        "spec overrides": ", ".join(f"{k} = {v}" for k, v in (wl.get("spec_overrides") or {}).items()) or "none",
        "requests simulated": any_s.get("requests"),
        "simulated span (h)": round((any_s.get("duration_s") or 0) / 3600, 2),
        "seed": scenario.get("seed", 0),
    }
    fleet = [["region", "model", "deployment", "GPUs/inst", "initial", "min", "max", "$/inst-h", "theta TPS"]]
    ran = {(e.get("region"), e.get("model")): e for e in any_s.get("endpoints") or []}
    for e in (scenario.get("fleet") or {}).get("endpoints", []):
        dep = e.get("deployment")
        dep_d = dep if isinstance(dep, dict) else ((scenario.get("deployments") or {}).get(dep)
                                                   or _catalogue_spec(dep) or {})
        name = dep if isinstance(dep, str) else dep_d.get("name", "")
        seen = ran.get((e.get("region"), e.get("model")), {})
        price = (dep_d.get("price_per_instance_hour") or {}).get("on_demand") or seen.get("price_per_instance_hour")
        theta = dep_d.get("theta_tps")
        fleet.append([e.get("region"), e.get("model"), name,
                      dep_d.get("gpus_per_instance") or seen.get("gpus_per_instance") or "-", e.get("initial", 2),
                      e.get("min", 1), e.get("max", "-"), "-" if price is None else f"${float(price):,.2f}",
                      f"{float(theta):,.0f}" if theta else "not given"])
    thetas = {n: dep.get("theta_source") for n, dep in (scenario.get("deployments") or {}).items()
              if isinstance(dep, dict) and dep.get("theta_source")}
    spot = {r["name"]: r.get("spot_pool", {}) for r in (scenario.get("fleet") or {}).get("regions", [])
            if isinstance(r, dict)}
    prices = scenario.get("price_sources") or {
        "on-demand price": "from each deployment's price_per_instance_hour (hardware catalogue); SageServe 7.2.1 "
                           "quotes $98.32/h for an 8x H100 Azure cluster",
    }
    slo = scenario.get("slo") or {}
    slos = {"IW-F TTFT (s)": (slo.get("ttft_s") or {}).get("IW-F", 1.0),
            "IW-N TTFT (s)": (slo.get("ttft_s") or {}).get("IW-N", 60.0),
            "NIW completion (s)": (slo.get("e2e_s") or {}).get("NIW", 86400.0),
            "attainment": "share of requests that completed, met their tier's TTFT target and their deadline"}
    knobs = {k: ", ".join(f"{n} = {json.dumps(x)}" for n, x in v.items()) or "defaults"
             for k, v in (scenario.get("strategy_params") or {}).items() if isinstance(v, dict)}
    out_thetas = {"theta (input TPS per instance, used by the LT policies' ILP)": thetas} if thetas else {}
    pools = "; ".join(f"{region}: " + (", ".join(f"{m} {n}" for m, n in pool.items()) or "none")
                      for region, pool in spot.items()) or "none"
    return {"Trace": trace, "Fleet": fleet, **out_thetas, "Spot pool at start (instances)": pools,
            "Prices and sources": prices, "SLOs": slos, "Strategy knobs": knobs or "engine defaults"}
