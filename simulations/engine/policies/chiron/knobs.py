"""The knobs of Chiron's policies (pydantic models, ``strategy.params``): the local autoscaler's (local.py) and the
``chiron`` autoscaler's (policy.py). Kept apart from the code that reads them: policy.py and local.py are compiled
with Cython (accel.MODULES), these models stay plain Python."""

from __future__ import annotations

from typing import Literal

from simulations.engine.policies.params import PolicyParams, knob


class LocalParams(PolicyParams):
    alpha: float = knob(0.5, "Algorithm 1's multiplicative step of the batch size", gt=0)
    window_s: float = knob(1.0, "measurement window of the local autoscaler (s)", gt=0)
    min_batch: int = knob(1, "smallest batch size the local autoscaler sets", ge=1)
    max_batch: int = knob(4096, "largest batch size the local autoscaler sets", ge=1)
    local: bool = knob(True, "false: no local autoscaler (a static batch size, ablation)")
    static_batch: int | None = knob(None, "with local false: the fixed batch size (none: the deployment's)", ge=1)
    log_local_steps: bool = knob(False, "record every local step (for reports)")


class ChironParams(LocalParams):
    """The knobs of the ``chiron`` autoscaler (policy.py)."""

    theta: float = knob(1.0 / 3.0, "IBP threshold of the interactive autoscaler", gt=0, le=1)
    delta: float = knob(0.1, "hysteresis around theta", ge=0)
    interactive_tick_s: float = knob(10.0, "period of the interactive autoscaler (s)", gt=0)
    batch_tick_s: float = knob(10.0, "period of the batch autoscaler (s)", gt=0)
    local_queue: int = knob(4, "requests kept in an instance's local queue", ge=0)
    prefill_budget: int = knob(2048, "prompt tokens dispatched to an instance per pump", ge=1)
    z: float = knob(0.0, "z-score of the waiting-time estimate (0: its mean)")
    kv_room: float = knob(0.95, "share of an instance's KV the global queue may fill", gt=0, le=1)
    max_evict_per_change: int = knob(64, "batch requests evicted per batch change at most", ge=0)
    global_: Literal["chiron", "utilisation"] = knob(
        "chiron", "'chiron': the global queue; 'utilisation': a utilisation autoscaler (ablation)", alias="global")
    scale_out_above: float = knob(0.7, "'utilisation' ablation: scale out above this utilisation", ge=0)
    scale_in_below: float = knob(0.3, "'utilisation' ablation: scale in below this utilisation", ge=0)
    record_estimates: bool = knob(False, "record the waiting-time estimates (for reports)")
    interactive_autoscaler: bool = knob(True, "false: a fixed interactive / mixed fleet")
    batch_autoscaler: bool = knob(True, "false: no batch instances (estimator studies)")
    k_groups: int = knob(3, "request groups of the global queue", ge=1)
    theta_window_s: float = knob(60.0, "window of the measured batch throughput (s)", gt=0)
    measure_first_s: float = knob(900.0, "wait for a measured throughput while every deadline is further than "
                                         "this (s); 0: act on the prior at once", ge=0)
    theta_from: Literal["generated", "completed"] = knob(
        "completed", "measure throughput from tokens of completed batch requests or tokens generated")
