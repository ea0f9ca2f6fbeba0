"""Strategy bundles: a named, registered way to run one strategy . Django-free.

A bundle is everything a comparison variant fixes besides the scenario: the autoscaler and its parameters,
the routers and the scheduler, engine options, the predictor (forecast method of the LT policies), and
deployment rules for the scaling signal. Bundles are selected by name from the page, the API
(``"bundles": [...]``) and the CLI (``manage.py compare --bundles ...``); ``manage.py compare --list-bundles``
prints them. Another strategy family (PreServe, Chiron, Llumnix-like...) registers its own::

    from planner.comparisons.core.bundles import Bundle, register_bundle
    register_bundle(Bundle(name="preserve.default", strategy="preserve", family="preserve",
                           description="...", params={...}))

and lists its module in ``FAMILY_MODULES`` (imported on first lookup) so every process sees it. ``strategy``
must be a comparison strategy (variants.STRATEGIES) or an engine autoscaler the family adds to
variants.BUNDLE_STRATEGIES (runnable through its bundles only, e.g. because it needs their params).

The SageServe families registered here:

- ``sageserve-text.<strategy>``: the paper's text (the engine defaults: 70 % / 30 %, 15 s cooldown, NIW queue
  60 % / 50 % with the 10 h escalation, LT-UA in the hour's last 20 min, rerouting on) - today's runs.
- ``sageserve-code.<strategy>``: what the authors' public simulator (github.com/kjain1810/SageServe) does;
  every setting carries its source in ``sources`` (file and line at commit 635bcbd, the copy we could read;
  the audit cites their commit fcfde73).
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass, field

FAMILY_MODULES: list[str] = [  # extra modules that register bundles (other strategy families)
    "planner.comparisons.core.bundles_preserve",
    "planner.comparisons.core.chiron_bundles",
    "planner.comparisons.core.bundles_industry",
]
# strategy keys a bundle may set (``predictor``: the output-length predictor, engine/workload/predictors.py)
_KNOWN_KEYS = ("region_router", "endpoint_router", "instance_router", "scheduler", "predictor", "predictor_params")


class BundleError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Bundle:
    name: str
    strategy: str
    description: str
    family: str = ""
    params: dict = field(default_factory=dict)  # autoscaler params (the variant's knobs)
    policy: dict = field(default_factory=dict)  # region_router / endpoint_router / instance_router / scheduler
    engine: dict = field(default_factory=dict)  # engine options, e.g. {"instant_provisioning": True}
    predictor: str = ""  # forecast method of the LT policies ("" = the scenario's)
    signal: str = ""  # "" (the deployment's own) or parts joined by "+" (apply_signal_rule): "mha" sizes KV as multi-head attention, "reserve" / "queued"
    sources: dict = field(default_factory=dict)  # setting -> where it comes from

    def to_dict(self) -> dict:
        return {"name": self.name, "strategy": self.strategy, "family": self.family,
                "description": self.description, "params": copy.deepcopy(self.params),
                "policy": dict(self.policy), "engine": dict(self.engine), "predictor": self.predictor,
                "signal": self.signal, "sources": dict(self.sources)}


BUNDLES: dict[str, Bundle] = {}


def register_bundle(bundle: Bundle) -> Bundle:
    if bundle.name in BUNDLES and BUNDLES[bundle.name] != bundle:
        raise BundleError("bundle", f"{bundle.name!r} is already registered with other settings")
    unknown = set(bundle.policy) - set(_KNOWN_KEYS)
    if unknown:
        raise BundleError(f"bundles.{bundle.name}.policy", f"unknown keys {sorted(unknown)}; use {list(_KNOWN_KEYS)}")
    BUNDLES[bundle.name] = bundle
    return bundle


def _load_families() -> None:
    for mod in FAMILY_MODULES:
        importlib.import_module(mod)


def get_bundle(name: str, where: str = "bundles") -> Bundle:
    _load_families()
    if name not in BUNDLES:
        raise BundleError(where, f"unknown bundle {name!r}; use one of {sorted(BUNDLES)}")
    return BUNDLES[name]


def bundle_names() -> list[str]:
    _load_families()
    return sorted(BUNDLES)


# ------------------------------------------------------------------ scaling signal rule "mha"
# Attention heads per model (HF configs); the catalogue holds the KV heads. Multi-head sizing counts KV per
# token as 2 x layers x heads x head_dim x dtype = 2 x hidden x layers x dtype, the authors' formula.
ATTENTION_HEADS = {"llama2-70b": 64, "bloom-176b": 112, "llama3.1-8b": 32, "llama3.2-3b": 24}
KV_HEADS = {"llama2-70b": 8, "bloom-176b": 112, "llama3.1-8b": 8, "llama3.2-3b": 8}


def mha_signal_tokens(model: str, kv_capacity_tokens: int) -> int | None:
    """KV tokens one instance holds if KV were sized for multi-head attention on the same memory budget:
    the true (GQA) capacity x kv_heads / attention heads (Llama-2-70B: / 8). None for an unknown model."""
    if model not in ATTENTION_HEADS:
        return None
    return max(1, int(kv_capacity_tokens) * KV_HEADS[model] // ATTENTION_HEADS[model])


SIGNAL_PARTS = ("mha", "reserve", "queued")


def apply_signal_rule(scenario: dict, rule: str) -> dict:
    """Apply a signal rule to every deployment of the scenario (returns a copy). The rule joins parts with '+':
    ``mha`` sets ``signal_kv_tokens`` (multi-head KV sizing, for the models it knows), ``reserve`` sets
    ``signal_reserve_output`` (each admitted request's whole output counted from admission), ``queued`` sets
    ``signal_queued`` (queued prompts counted). Admission always keeps the true KV."""
    if not rule:
        return scenario
    parts = rule.split("+")
    bad = [p for p in parts if p not in SIGNAL_PARTS]
    if bad:
        raise BundleError("signal", f"unknown signal rule {rule!r}; join {', '.join(SIGNAL_PARTS)} with '+', or ''")
    d = copy.deepcopy(scenario)
    deps = d.get("deployments") or {}
    for dep in list(deps.values()) + [e.get("deployment") for e in (d.get("fleet") or {}).get("endpoints", [])]:
        if not isinstance(dep, dict):
            continue
        if "mha" in parts and dep.get("kv_capacity_tokens"):
            tokens = mha_signal_tokens(str(dep.get("model", "")), int(dep["kv_capacity_tokens"]))
            if tokens is not None:
                dep["signal_kv_tokens"] = tokens
        if "reserve" in parts:
            dep["signal_reserve_output"] = True
        if "queued" in parts:
            dep["signal_queued"] = True
    return d


# ------------------------------------------------------------------ SageServe: the paper's text
_TEXT = {
    "reactive-unified": "SageServe 'Reactive' as the paper's text describes it (sec. 4, 7.1): 70 % / 30 % effective "
                        "memory, 15 s cooldown, NIW queue manager 60 % / 50 % with the 10 h escalation",
    "reactive-siloed": "SageServe's siloed baseline (sec. 4): IW and NIW pools, 70 % / 30 %",
    "lt-i": "SageServe LT-I as in the paper's text (sec. 5, 6.3)",
    "lt-u": "SageServe LT-U as in the paper's text: towards the target as utilisation crosses 70 % / 30 %",
    "lt-ua": "SageServe LT-UA as in the paper's text: LT-U plus >= 5x / <= 0.5x in the hour's last 20 min",
}
for _s, _d in _TEXT.items():
    register_bundle(Bundle(name=f"sageserve-text.{_s}", strategy=_s, family="sageserve-text", description=_d,
                           predictor="arima" if _s.startswith("lt-") else "",
                           sources={"all settings": "engine defaults = SageServe paper text (sections 4-7); "
                                                    "docs/reproduction.md"}))

# ------------------------------------------------------------------ SageServe: the authors' public code
REPO = "kjain1810/SageServe@635bcbd"
AUTHORS_SOURCES = {
    "scale_out_above=0.5": f"{REPO} arbiter.py:260 BasicArbiter.scale `if memory_utilisation > 0.5:`",
    "scale_in_below=0.25": f"{REPO} arbiter.py:285 BasicArbiter.scale `elif memory_utilisation < 0.25`",
    "lock_after_scale_out": f"{REPO} arbiter.py:270 and :284 BasicArbiter.scale `next_scale_time = clock() + "
                            "self.overheads.reclaim_spot` (same-model spot) / `+ self.overheads.spin_up` (other)",
    "cooldown_in_s=0": f"{REPO} arbiter.py:293 `clock() + self.overheads.spin_down` with "
                       "configs/arbiter_repo/arbiters/basic_arbiter.yaml:4 `spin_down: 0`",
    "reclaim 65 s / spin-up 155 s": f"{REPO} configs/arbiter_repo/arbiters/basic_arbiter.yaml:3,5 "
                                    "(`spin_up: 155`, `reclaim_spot: 65`)",
    "cooldown_out_s=0": f"{REPO} arbiter.py BasicArbiter.scale: no cooldown besides the lock "
                        "(`if self.scaling_in_progress[...]: return`)",
    "instant_provisioning": "audit of the authors' code: instances arrive instantly in the authors' simulation; waste is "
                            "added afterwards in their plotting script (not re-read here)",
    "signal=mha": "audit of the authors' code: KV per token sized `2 * hidden * layers * dtype` (multi-head, ignores GQA: 8x "
                  "too large for Llama-2-70B); we apply the multi-head factor on our memory budget",
    "niw_feed=code, niw_escalate=false": "audit of the authors' code: the NIW feed sends one request at <= 0.5 and two at "
                                         "0.5-0.6, with no 10 h escalation (not re-read here)",
    "lt-u gate_scale_in=false": f"{REPO} arbiter.py GlobalAribiterMemoryUtilizationScaling.force_scale_down: "
                                "`self.scale_down_to_spot(model_endpoint)` at once (no utilisation check)",
    "lt-u scale_out_above=0.5": f"{REPO} arbiter.py GlobalAribiterMemoryUtilizationScaling.scale "
                                "`elif self.changes[...] > 0 and memory_utilisation > 0.5:`",
    "lt-u beyond_target_above=0.9": f"{REPO} arbiter.py GlobalAribiterMemoryUtilizationScaling.scale "
                                    "`if memory_utilisation > 0.9:` (when no change is left)",
    "lt-ua ratio > 5 at any minute, no 0.5x rule": f"{REPO} arbiter.py GlobalArbiterARIMAChecking.scale "
                                                  "`ratio = self.ratio_between_arima_and_actual(); if ratio > "
                                                  "self.threshhold:` (threshold 5 per the audit), no scale-in "
                                                  "branch, no utilisation check",
    "lt region_router=local": "audit of the authors' code: LT disables cross-region rerouting",
    "forecast_mode=hindsight, window 20-60 min": "audit of the authors' code: in-sample one-step ARIMA (near hindsight) "
                                                 "maxed over minutes 20-60 ahead; ours: the actual coming traffic, "
                                                 "labelled hindsight",
    "gpus_per_instance=8 (every model)": "audit of the authors' code: all models use 8 GPUs (scenario preset only)",
    "signal_reserve_output=true": f"{REPO} task.py:184-187 TokenTask.memory `num_tokens = self.token_size` (the "
                                  "whole output) allocated when the decode task starts, task.py:195-199 "
                                  "TokenTask.run `self.instance.alloc_memory(self.request, self.memory)`, freed at "
                                  "the request's completion; the prompt's memory at PromptTask.run (task.py:124-129)",
    "signal_queued=false": f"{REPO} arbiter.py:258 `memory_utilisation = model_endpoint.get_memory() / "
                           "model_endpoint.get_max_memory()`; model_endpoint_router.py:87-91 get_memory sums the "
                           "applications' allocated memory (a queued request holds none)",
    "beta_basis=arrived": f"{REPO} global_arbiter.py:158-169 MilpGlobalArbiter.get_ilp_forecast adds "
                          "`0.1 * df[\"prompt_size\"].max()` over the past hour's NIW ('dev') trace arrivals "
                          "(arrivals, not what was released; theirs is 10 % of the largest prompt, ours 10 % of "
                          "the mean NIW input TPS: not copied)",
    "niw_gate=kv": "audit of the authors' code: the authors' NIW feed reads memory utilisation (not re-read here)",
}
_NIW_CODE = {"niw_feed": "code", "niw_escalate": False}
_LOCK = {"lock_after_scale_out": True, "cooldown_out_s": 0.0, "cooldown_in_s": 0.0}
_LT_CODE = {**_NIW_CODE, **_LOCK, "scale_out_above": 0.5, "scale_in_below": 0.25, "forecast_mode": "hindsight",
            "hindsight_window_s": [1200.0, 3600.0]}
_CODE = {
    "reactive-unified": ({**_NIW_CODE, **_LOCK, "scale_out_above": 0.5, "scale_in_below": 0.25}, {},
                         "Reactive as the authors' code runs it: 50 % / 25 %, locked until a new instance is ready, "
                         "no lock after a scale-in, NIW feed reversed, no escalation"),
    "lt-i": ({**_LT_CODE}, {"region_router": "local"},
             "LT-I as the authors' code runs it: hindsight forecast (max over 20-60 min), no rerouting"),
    "lt-u": ({**_LT_CODE, "gate_scale_in": False, "beyond_target_above": 0.9}, {"region_router": "local"},
             "LT-U as the authors' code runs it: scale-out gated at 50 %, scale-in at once, past the target above 90 %"),
    "lt-ua": ({**_LT_CODE, "gate_scale_in": False, "ua_gate_util": False, "ua_window_s": 3600.0,
               "ua_scale_in": False, "ua_up_ratio": 5.0}, {"region_router": "local"},
              "LT-UA as the authors' code runs it: LT-U's gates plus > 5x the forecast at any minute, no 0.5x rule"),
}
for _s, (_p, _pol, _d) in _CODE.items():
    register_bundle(Bundle(name=f"sageserve-code.{_s}", strategy=_s, family="sageserve-code", description=_d,
                           params=_p, policy=_pol, engine={"instant_provisioning": True},
                           predictor="arima" if _s.startswith("lt-") else "", signal="mha+reserve",
                           sources=AUTHORS_SOURCES))
