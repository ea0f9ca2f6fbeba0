"""The knobs of PreServe's policies (pydantic models, ``strategy.params``): the load-aware router's (router.py) and
the autoscalers' (scaler.py). Kept apart from the code that reads them: router.py and scaler.py are compiled with
Cython (accel.MODULES), these models stay plain Python."""

from __future__ import annotations

from typing import Literal

from simulations.engine.policies.params import PolicyParams, knob
from simulations.engine.policies.preserve.anticipator import EXTENSION, HORIZON
from simulations.engine.policies.preserve.forecast import TABLE1_CODE

T_MEM = 0.8
BETA = 1.0


class LoadAwareParams(PolicyParams):
    beta: float = knob(BETA, "weight of the projected decode load against the current one", ge=0)
    t_mem: float = knob(T_MEM, "projected KV use above which an instance is potentially overloaded", gt=0)
    horizon: int = knob(HORIZON, "iterations the load anticipator projects ahead", ge=1)
    extension: float = knob(EXTENSION, "late-finish extension of the predicted decode length", ge=0)
    hold_capacity: int = knob(256, "requests the router may hold while every instance is overloaded", ge=0)
    hold: bool = knob(True, "hold requests while every instance is overloaded (false: route anyway)")
    queued_decode: bool = knob(False, "the current decode load also counts queued requests' predicted decode")
    projection_cache: bool = knob(True, "keep each instance's projection incrementally (false: recompute)")


class PreServeParams(LoadAwareParams):
    """The knobs of PreServe's autoscalers (scaler.py)."""

    tick_s: float = knob(1.0, "control tick (s)", gt=0)
    window_s: float = knob(600.0, "forecast window (s)", gt=0)
    t_f: float = knob(0.3, "low-load threshold of the once-per-window scale-down", gt=0, le=1)
    up_kv: float = knob(0.8, "reactive rules: +1 instance above this KV use", ge=0)
    down_kv: float = knob(0.3, "reactive rules: -1 instance below this KV use", ge=0)
    down_cooldown_s: float = knob(60.0, "reactive rules: at most one scale-in per this many seconds", ge=0)
    donate_to_spot: bool = knob(True, "a removed instance joins the region's spot pool (else its VM is freed)")
    router: Literal["preserve", "scenario"] | None = knob(
        None, "'preserve': the load-aware router; 'scenario': the scenario's instance router (default per "
              "autoscaler)")
    mu_p: float | None = knob(None, "prefill capacity of one instance (tokens/s; profile.py measures it)", gt=0)
    mu_d: float | None = knob(None, "decode capacity of one instance (tokens/s)", gt=0)
    mu_t: float | None = knob(None, "total token capacity of one instance (tokens/s)", gt=0)
    capacity: dict[str, list[float]] | None = knob(
        None, "per endpoint ('region/model'): [mu_p, mu_d, mu_t] of its deployment; sizes each endpoint from "
              "its own origin traffic's forecast (oracle-noise only) instead of one profile and the total")
    forecaster: str = knob("oracle-noise", "'oracle-noise' or a forecasts.core method fitted on history")
    history: dict[str, list[float]] | None = knob(None, "{'p': [...], 'd': [...]}: prompt / decode tokens/s "
                                                        "per past window (series forecasters)")
    series_resolution_s: int | None = knob(None, "series forecasters' resolution (s; default window_s)", ge=1)
    ape_p: float = knob(TABLE1_CODE["ape_p"], "oracle-noise: mean absolute error of the prompt forecast", ge=0)
    ape_d: float = knob(TABLE1_CODE["ape_d"], "oracle-noise: mean absolute error of the decode forecast", ge=0)
    max_ape_p: float = knob(TABLE1_CODE["max_ape_p"], "oracle-noise: largest prompt forecast error", ge=0)
    max_ape_d: float = knob(TABLE1_CODE["max_ape_d"], "oracle-noise: largest decode forecast error", ge=0)
