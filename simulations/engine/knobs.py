"""The knobs (``strategy.params``) each policy class reads, and the check that refuses a knob no class of the
chosen autoscaler reads (a misspelt knob would silently do nothing). Used by the scenario parser (scenario.py) and
the comparison service; ``schema`` re-exports it.
"""

from __future__ import annotations

from planner.inputs import suggest
from simulations.engine.config import ScenarioError

# Knobs (strategy.params) each policy class reads, by class; a policy reads the knobs of every class in its MRO.
# A policy none of whose classes is listed is not checked. Add a new knob here with the policy that reads it.
NIW_QUEUE = {"niw_one_below", "niw_two_below", "niw_escalate_after_s", "niw_signal_period_s", "niw_feed",
              "niw_escalate", "niw_gate", "niw_load_window_s"}
LLUMNIX_LIVE = {"poll_s", "migrate_out_threshold", "bandwidth_gb_s", "switch_overhead_s", "last_stage_max_blocks",
                 "max_stages"}  # policies/llumnix_migration.py's migration loop
SCALE_LOCK = {"cooldown_out_s", "cooldown_in_s", "lock_after_scale_out"}  # autoscalers.ScaleLock
KNOBS: dict[str, set[str]] = {
    # the routers read the same params: the region router's preference order, Llumnix dispatch's block size, the
    # paper's MU router's GPU-utilisation weight (policies/baselines.py)
    "Autoscaler": {"preference", "block_tokens", "mu_util_weight"},
    "PeakProvisioning": {"window_s", "headroom"},
    "ReactiveUnified": {"scale_out_above", "scale_in_below", "cooldown_s", "donate_to_spot", "tick_s", *SCALE_LOCK},
    "ReactiveSiloed": {"niw_share"},
    "ReactiveUnifiedWithQueue": NIW_QUEUE,
    "LongTerm": {"decision_period_s", "resolution_s", "forecast_method", "refit_every_s", "min_history_s",
                 "beta_fraction", "epsilon", "forecast_value", "scale_out_above", "scale_in_below", "cooldown_s",
                 "ua_window_s", "ua_up_ratio", "ua_down_ratio", "observe_window_s", "ilp_time_limit_s",
                 "history_tps", "niw_queue", "tick_s", *NIW_QUEUE, *SCALE_LOCK,
                 "beyond_target_above", "forecast_mode", "gate_scale_in", "hindsight_window_s", "ua_gate_util",
                 "ua_scale_in", "beta_basis"},
    "LlumnixScaler": {"interval_s", "scale_up_below", "scale_down_above", "block_tokens", "donate_to_spot"},
    "LlumnixMigrate": {"scaling", *LLUMNIX_LIVE},  # policies/llumnix_migration.py
    "StaticN": {"instances"},
    "KvCapExample": {"timeout_s", "cap", "kv_high"},
    # policies/chiron/baselines.py (with ``migration: "live"`` it runs the LlumnixMigrate loop: its knobs too)
    "LlumnixBatch": {"max_batch", "approx_queue", "migrate", "migration", "migrate_slack", *LLUMNIX_LIVE},
    "Chiron": {"theta", "delta", "interactive_tick_s", "batch_tick_s", "local_queue", "prefill_budget", "z", "kv_room",
               "max_evict_per_change", "global", "scale_out_above", "scale_in_below", "record_estimates",
               "interactive_autoscaler", "batch_autoscaler", "k_groups", "alpha", "window_s", "min_batch",
               "max_batch", "local", "static_batch", "log_local_steps", "measure_first_s", "theta_window_s", "theta_from"},  # policies/chiron/ (policy.py, local.py)
}


def known_knobs(autoscaler: str) -> set[str] | None:
    """The knobs an autoscaler reads, or None when none of its classes declares them (not checked)."""
    from simulations.engine.policies import AUTOSCALERS

    cls = AUTOSCALERS.get(autoscaler)
    if cls is None:
        return None
    names = [c.__name__ for c in cls.__mro__]
    if not any(n in KNOBS and n != "Autoscaler" for n in names):
        return None
    return set().union(*(KNOBS.get(n, set()) for n in names))


def check_knobs(autoscaler: str, params: dict, where: str) -> None:
    """ScenarioError for a knob the autoscaler does not read (a misspelt knob would silently do nothing)."""
    known = known_knobs(autoscaler)
    if known is None:
        return
    for key in params:
        if key not in known:
            raise ScenarioError(f"{where}.{key}", f"is not a knob of the {autoscaler!r} autoscaler",
                                hint=suggest(key, sorted(known)))


def check_knob_values(autoscaler: str, params: dict, where: str, routers: tuple = ()) -> None:
    """Refuse a bad knob *value* at the boundary, not in the worker: construct the autoscaler once with its params
    (policy constructors only parse and check their knobs) and let each chosen router class check the params it
    reads (its ``check_params``). ``routers``: (PolicyKind, name) pairs. The error names the knob under ``where``."""
    import numpy as np

    from simulations.engine.policies import AUTOSCALERS
    from simulations.engine.policies.registry import get_policy

    if autoscaler not in AUTOSCALERS:
        return  # not an autoscaler name: the name checks say so
    try:
        AUTOSCALERS[autoscaler](dict(params), np.random.default_rng(0))
        for kind, name in routers:
            check = getattr(get_policy(kind, name), "check_params", None)
            if check is not None:
                check(params)
    except ScenarioError as exc:
        field = exc.field
        if field.startswith("strategy.params"):
            field = where + field[len("strategy.params"):]
        raise ScenarioError(field, exc.message, hint=exc.hint or "see the policy's knobs in docs/simulator.md") from None
    except (ValueError, TypeError) as exc:
        raise ScenarioError(where, str(exc), hint="see the policy's knobs in docs/simulator.md") from None
