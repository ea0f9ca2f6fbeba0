"""Chiron's local autoscaler (Patke et al., sec. 4, Algorithm 1): one per instance, tunes its max batch size.

On every change of the instance's running batch (the engine's ``on_batch_change`` hook) the controller
accumulates what it observed since the previous change; once a measurement window of at least ``window_s``
simulated seconds (default 1 s) has closed, it applies Algorithm 1 once:

    LBP = ITL / ITL_SLO, TBP = throughput_prev / throughput_curr, BP = max(LBP, TBP)
    BP < 1: B <- alpha * (1 / BP) * B + (1 - alpha) * B        (alpha = 0.5)
    else:   B <- B / 2

What is measured, and how (the paper leaves it open):

- **ITL** = window length / decode iterations completed in it (the instance's iteration counter ``inst.it``; at
  least 1), so prefill and swap-in pauses inside the window count, as a client would see them.
- **Throughput** = output tokens generated in the window / window length, the tokens being the running batch
  size in force between two changes times the decode iterations completed between them.
- **Saturation.** A throughput sample is only taken while the instance is *saturated*: at every batch change of
  the window, requests were waiting on the instance (locally or swapped) or the batch was at its limit. An
  unsaturated window says nothing about the batch size (throughput fell because demand fell), so then TBP is not
  used (only LBP) and the limit is not raised (it is not binding); LBP >= 1 still halves it.
- **TBP after an increase only.** TBP > 1 means "the last increase gave no throughput gain" (sec. 4.2), so it is
  computed when the previous step raised the limit; after a decrease it is not (otherwise every halving lowers
  throughput, which would halve again, down to 1).
- The instance's ITL SLO is the tightest ITL SLO among its running requests (sec. 4.2); with none running, the
  window is skipped.
- Limits: integer, clamped to [``min_batch``, ``max_batch``] (1 and 4,096: the top of the paper's 2,048-4,096).
  The KV cache bounds the running batch whatever the limit: the engine admits only what fits, and preempts when
  the KV is full (vLLM). The batch actually run is reported next to the limit (``running``).

The state of one instance (``InstanceState``, kept in ``inst.policy_state["chiron"]``) holds Algorithm 1's window
and what the ``chiron`` policy counts on the instance; compiled, its fields are C fields (local.pxd), so the two
hooks of every request read them without dictionary or list lookups.
"""

from __future__ import annotations

import math

from simulations.engine.policies.chiron.knobs import LocalParams


class InstanceState:
    """Chiron's state of one instance: its requests by class and ITL SLO (policy.py) and its local window."""

    def __init__(self) -> None:
        self.ni = 0  # interactive requests on the instance (dispatched, not completed or taken back)
        self.nb = 0  # batch requests on the instance
        self.itl: dict = {}  # ITL SLO -> requests on the instance with it
        self.refused = False  # an interactive request found it full since the last batch change
        self.pump_it = -1  # decode iteration of the last pump from the global queue (-1: none yet)
        self.win_new = False  # a local window closed and the policy has not read its tokens yet
        self.win_tok = 0.0  # output tokens of the last closed window
        self.started = False  # the local window below is set (``LocalAutoscaler.start``)
        self.sat = True  # saturated at every batch change of the window so far
        self.last_up = False  # the last step raised the limit
        self.t0 = 0.0  # start of the window (s)
        self.tok = 0.0  # output tokens of the window so far
        self.itl_slo = math.inf  # tightest ITL SLO seen in the window
        self.last_t = 0.0
        self.prev_thr = 0.0  # throughput of the last saturated window (tokens/s)
        self.it0 = 0  # decode iterations at the start of the window
        self.last_it = 0  # decode iterations at the last batch change
        self.last_b = 0  # running batch in force since the last batch change
        self.limit = 0  # the limit Algorithm 1 set


def state_of(inst):
    """The instance's ``InstanceState``, made on first use."""
    ps = inst.policy_state
    st = ps.get("chiron")
    if st is None:
        st = ps["chiron"] = InstanceState()
    return st


class LocalAutoscaler:
    """Algorithm 1 over the instances of one policy (state kept in ``state_of(inst)``)."""

    def __init__(self, params: dict) -> None:
        k = LocalParams.read(params)
        self.alpha = k.alpha
        self.window_s = k.window_s
        self.min_batch = k.min_batch
        self.max_batch = k.max_batch
        self.enabled = k.local
        self.static_batch = k.static_batch  # ablation: a fixed limit (None = the deployment's)
        self.log_steps = k.log_local_steps
        self.steps: list = []  # (t, iid, kind, limit, lbp, tbp, itl, throughput) when log_local_steps

    def initial_limit(self, inst) -> int:
        if not self.enabled and self.static_batch:
            return int(self.static_batch)
        return int(inst.spec.max_batch_size)

    def start(self, inst, now: float) -> int:
        limit = self.initial_limit(inst)
        st = state_of(inst)
        st.started, st.sat, st.last_up = True, True, False
        st.t0 = st.last_t = now
        st.it0 = st.last_it = inst.it
        st.tok, st.itl_slo, st.prev_thr = 0.0, math.inf, 0.0
        st.last_b = inst.B
        st.limit = limit
        return limit

    def observe(self, inst, now: float, itl_slo: float, saturated: bool):
        """Account the interval since the previous change; at the end of a window apply Algorithm 1 and return
        the new limit (None if unchanged)."""
        return self.observe_state(state_of(inst), inst, inst.it, inst.B, now, itl_slo, saturated)

    def observe_state(self, st, inst, it, running, now, itl_slo, saturated):
        """``observe`` with the instance's state, decode iterations (``inst.it``) and running batch (``inst.B``) at
        hand."""
        if not st.started:
            self.start(inst, now)
            return None
        st.tok += st.last_b * (it - st.last_it)
        st.last_it = it
        st.last_t = now
        st.last_b = running
        st.sat = st.sat and saturated
        if itl_slo < st.itl_slo:
            st.itl_slo = itl_slo
        span = now - st.t0
        if span < self.window_s:
            return None
        iters = it - st.it0
        sat, slo, tokens = st.sat, st.itl_slo, st.tok
        st.sat, st.t0, st.it0, st.tok, st.itl_slo = True, now, it, 0.0, math.inf
        st.win_new, st.win_tok = True, tokens  # the closed window's output tokens, for the global autoscaler
        if not self.enabled or not math.isfinite(slo):
            return None
        return self._step(st, inst, now, span / max(iters, 1), tokens / span, slo, sat)

    def _step(self, st, inst, now, itl, thr, slo, sat):
        """Algorithm 1 at the end of a window: ITL (a window without a decode iteration, a prefill stall, shows its
        whole length) and throughput of the window, against the ITL SLO."""
        lbp = itl / slo
        tbp = 0.0
        if sat:
            if st.last_up and st.prev_thr > 0 and thr > 0:
                tbp = st.prev_thr / thr
            st.prev_thr = thr
        bp = max(lbp, tbp)
        old = st.limit
        if bp < 1.0:
            if not sat:
                st.last_up = False
                return None
            new = self.alpha * (1.0 / max(bp, 1e-9)) * old + (1.0 - self.alpha) * old
            st.last_up = True
        else:
            new = old / 2.0
            st.last_up = False
        new = int(min(self.max_batch, max(self.min_batch, round(new))))
        if new == old and bp < 1.0:  # rounding: grow by at least one while backpressure allows it
            new = min(self.max_batch, old + 1)
        st.limit = new
        if self.log_steps:
            self.steps.append((now, inst.iid, inst.kind, new, lbp, tbp, itl, thr, inst.B))
        return new if new != old else None

    @staticmethod
    def limit(inst) -> int:
        st = inst.policy_state.get("chiron")
        return int(st.limit) if st is not None and st.started else int(inst.max_b)
