# cython: annotation_typing=False
"""``PolicyView``: the one object a policy (autoscaler, router, scheduler, queue manager) receives.

Policies never see the simulator. Every hook and every router / scheduler constructor gets a ``PolicyView`` of
the run: read-only information about requests, endpoints and instances, and the control verbs. A policy module
uses nothing else of the engine (``simulations/tests/test_policy_view.py`` reads every policy module's syntax
tree and fails on any other attribute of the view, on private names and on the endpoints' back reference to the
simulator).

Members (docs/simulator.md, "Policy view", has the full contract):

- time and fleet (read-only): ``now``, ``n_arrived``, ``endpoints``, ``instances``, ``region_names``,
  ``model_names``,
  ``endpoints_for(region, model)``, ``candidates(region_idx, model_idx, tier)``, ``spot_count(region, model)``;
- requests (read-only, known at arrival; never the future): ``tier_of``, ``model_of``, ``region_of``,
  ``arrival_s``, ``prompt_tokens``, ``request_tokens`` (prompt, predicted output or -1), ``request_slo``
  (its own or its tier's TTFT / ITL targets), ``output_tokens`` (a finished request only), ``tokens_generated``,
  ``observed()`` (the arrivals so far, as arrays);
- instances (read-only): ``kv_used``, ``request_count``, ``queued_prompt_tokens``, ``remaining_decode_tokens``,
  ``running_requests``, ``running_generated``, ``queued_requests``, ``running_by_tier``, ``migration_copy_s``, ``migrating``,
  ``migrations``; the ``Endpoint`` and ``Instance`` objects themselves are read-only except
  ``instance.kind``, ``instance.policy_state`` and ``endpoint.last_scale_t``;
- control verbs: ``dispatch``, ``send``, ``drop``, ``evict``, ``set_max_batch``, ``withdraw_waiting``,
  ``take_swapped``, ``resume_swapped``, ``migrate_running``, ``set_priority``; fleet verbs ``scale_out``,
  ``scale_in``, ``drain``, ``add_instance``; ``record_scaling`` (a scaling decision in the run's event list) and
  ``last_scaling_event``.

The verbs are bound methods of the simulator's parts (control.py, fleet.py, arrivals.py; their docstrings are the
reference), bound once per run, so a call through the view costs what a direct call costs. The request reads below
(``tier_of``, ``request_slo``, ...) run once or more per request: the module is compiled with Cython (accel.MODULES),
its annotations not typing the arguments (a request id may be a numpy integer, as in Python); ``output_tokens`` and
``request_slo`` read the run state's typed per-request views (view.pxd).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cython

from simulations.engine.core.state import RunState

VERBS = (
    # fleet
    "endpoints_for", "candidates", "spot_count", "scale_out", "scale_in", "drain", "add_instance",
    # requests and instances: reads
    "observed", "request_tokens", "tokens_generated", "kv_used", "request_count", "queued_prompt_tokens",
    "remaining_decode_tokens", "running_requests", "running_generated", "queued_requests", "running_by_tier",
    "migration_copy_s", "migrating", "migrations",
    # requests and instances: control
    "dispatch", "send", "drop", "evict", "set_max_batch", "withdraw_waiting", "take_swapped", "resume_swapped",
    "migrate_running",
)
PROPERTIES = ("now", "n_arrived", "endpoints", "instances", "region_names", "model_names")
METHODS = ("tier_of", "model_of", "region_of", "arrival_s", "prompt_tokens", "output_tokens", "request_slo",
           "set_priority", "record_scaling", "last_scaling_event")
# everything a policy may touch on the view (the policy-view test reads this)
MEMBERS = frozenset(VERBS + PROPERTIES + METHODS)


class PolicyView:
    """What a policy may read and call during a run (see the module docstring)."""

    __slots__ = ("_sim", *VERBS)

    endpoints_for: Callable
    candidates: Callable
    spot_count: Callable
    scale_out: Callable
    scale_in: Callable
    drain: Callable
    add_instance: Callable
    observed: Callable
    request_tokens: Callable
    tokens_generated: Callable
    kv_used: Callable
    request_count: Callable
    queued_prompt_tokens: Callable
    remaining_decode_tokens: Callable
    running_requests: Callable
    running_generated: Callable
    queued_requests: Callable
    running_by_tier: Callable
    migration_copy_s: Callable
    migrating: Callable
    migrations: Callable
    dispatch: Callable
    send: Callable
    drop: Callable
    evict: Callable
    set_max_batch: Callable
    withdraw_waiting: Callable
    take_swapped: Callable
    resume_swapped: Callable
    migrate_running: Callable

    def __init__(self, sim: Any) -> None:
        self._sim = sim
        parts = (sim.control, sim.lifecycle, sim.routing)
        for name in VERBS:
            setattr(self, name, next(getattr(p, name) for p in parts if hasattr(p, name)))

    # ------------------------------------------------------------------ time and fleet
    @property
    def now(self) -> float:
        """The current simulated time (s)."""
        return self._sim.state.now

    @property
    def n_arrived(self) -> int:
        """Requests arrived so far (ids ``0 .. n_arrived - 1``; ids are in arrival order)."""
        return int(self._sim.state.n_arrived)

    @property
    def endpoints(self) -> list:
        """Every endpoint of the fleet (``Endpoint``: region, model, pool, serving / provisioning / draining
        instances, ``util_at(t)``, min / max instances)."""
        return self._sim.endpoints

    @property
    def instances(self) -> list:
        """Every instance of the run so far, by ``iid`` (released ones too: check ``instance.state``)."""
        return self._sim.instances

    @property
    def region_names(self) -> list:
        return self._sim.region_names

    @property
    def model_names(self) -> list:
        return self._sim.model_names

    # ------------------------------------------------------------------ requests (read-only)
    def tier_of(self, rid: int) -> int:
        """Tier index of request ``rid`` (``config.TIERS``: 0 IW-F, 1 IW-N, 2 NIW)."""
        return int(self._sim.state.req_tier[rid])

    def model_of(self, rid: int) -> int:
        """Model index of request ``rid`` (into ``model_names``)."""
        return int(self._sim.state.req_model[rid])

    def region_of(self, rid: int) -> int:
        """Origin region index of request ``rid`` (into ``region_names``)."""
        return int(self._sim.state.req_region[rid])

    def arrival_s(self, rid: int) -> float:
        """Arrival time of request ``rid`` (s)."""
        return float(self._sim.state.req_arr[rid])

    def prompt_tokens(self, rid: int) -> int:
        """Prompt tokens of request ``rid``."""
        return int(self._sim.state.req_inp[rid])

    @cython.locals(st=RunState, i=cython.Py_ssize_t)
    def output_tokens(self, rid: int) -> int:
        """Output tokens of a *finished* request (before it finishes its length is unknown to a real system:
        use ``request_tokens`` for the predicted length, ``tokens_generated`` for the tokens so far)."""
        st = self._sim.state
        i = rid
        if st._t_done[i] != st._t_done[i]:
            raise ValueError(f"output_tokens: request {rid} has not finished")
        return int(st._out[i])

    @cython.locals(st=RunState, i=cython.Py_ssize_t)
    def request_slo(self, rid: int) -> tuple:
        """``(ttft_s, itl_s)`` targets of request ``rid``: its own (the workload's ``ttft_slo_s`` / ``tpot_slo_s``
        columns), else its tier's in the scenario's ``slo`` block, else None."""
        sim = self._sim
        st = sim.state
        i = rid
        tier = ("IW-F", "IW-N", "NIW")[st._tier[i]]
        slo = sim.scenario.slo
        w = sim.workload
        ttft, itl = slo.ttft_s.get(tier), slo.itl_s.get(tier)
        if w.ttft_slo_s is not None and w.ttft_slo_s[rid] == w.ttft_slo_s[rid]:
            ttft = float(w.ttft_slo_s[rid])
        if w.tpot_slo_s is not None and w.tpot_slo_s[rid] == w.tpot_slo_s[rid]:
            itl = float(w.tpot_slo_s[rid])
        return ttft, itl

    # ------------------------------------------------------------------ control
    def set_priority(self, rid: int, priority: int) -> None:
        """Set request ``rid``'s scheduler priority (0 first, 1 otherwise; the NIW queue manager escalates an
        old request to 0). Takes effect when the request next joins a waiting queue."""
        self._sim.state.req_prio[rid] = int(priority)

    def record_scaling(self, now: float, endpoint: Any, action: str, **fields: Any) -> None:
        """Record a scaling decision the fleet verbs do not record themselves (a drain the policy chose, a plan):
        ``{"t": now, "endpoint": endpoint.name, "action": action, **fields}`` joins the run's scaling events."""
        self._sim.scaling_events.append({"t": now, "endpoint": endpoint.name, "action": action, **fields})

    def last_scaling_event(self) -> dict | None:
        """A copy of the run's latest scaling event (None before the first)."""
        events = self._sim.scaling_events
        return dict(events[-1]) if events else None
