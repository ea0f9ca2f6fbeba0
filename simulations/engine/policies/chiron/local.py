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
"""

from __future__ import annotations

import math

from simulations.engine.policies.chiron.knobs import LocalParams

SAT, T0, IT0, TOK, ITL_SLO, LAST_T, LAST_IT, LAST_B, PREV_THR, LAST_UP, LIMIT = range(11)


class LocalAutoscaler:
    """Algorithm 1 over the instances of one policy (state kept in ``inst.policy_state['local']``)."""

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
        inst.policy_state["local"] = [True, now, inst.it, 0.0, math.inf, now, inst.it, inst.B, 0.0, False, limit]
        return limit

    def observe(self, inst, now: float, itl_slo: float, saturated: bool) -> int | None:
        """Account the interval since the previous change; at the end of a window apply Algorithm 1 and return
        the new limit (None if unchanged)."""
        st = inst.policy_state.get("local")
        if st is None:
            self.start(inst, now)
            return None
        it = inst.it
        st[TOK] += st[LAST_B] * (it - st[LAST_IT])
        st[LAST_IT] = it
        st[LAST_T] = now
        st[LAST_B] = inst.B
        st[SAT] = st[SAT] and saturated
        if itl_slo < st[ITL_SLO]:
            st[ITL_SLO] = itl_slo
        span = now - st[T0]
        if span < self.window_s:
            return None
        iters = it - st[IT0]
        sat, slo, tokens = st[SAT], st[ITL_SLO], st[TOK]
        st[SAT], st[T0], st[IT0], st[TOK], st[ITL_SLO] = True, now, it, 0.0, math.inf
        inst.policy_state["win"] = (now, tokens)  # the closed window's output tokens, for the global autoscaler
        if not self.enabled or not math.isfinite(slo):
            return None
        itl = span / max(iters, 1)  # a window without a decode iteration (prefill stall) shows its whole length
        thr = tokens / span
        lbp = itl / slo
        tbp = 0.0
        if sat:
            if st[LAST_UP] and st[PREV_THR] > 0 and thr > 0:
                tbp = st[PREV_THR] / thr
            st[PREV_THR] = thr
        bp = max(lbp, tbp)
        old = st[LIMIT]
        if bp < 1.0:
            if not sat:
                st[LAST_UP] = False
                return None
            new = self.alpha * (1.0 / max(bp, 1e-9)) * old + (1.0 - self.alpha) * old
            st[LAST_UP] = True
        else:
            new = old / 2.0
            st[LAST_UP] = False
        new = int(min(self.max_batch, max(self.min_batch, round(new))))
        if new == old and bp < 1.0:  # rounding: grow by at least one while backpressure allows it
            new = min(self.max_batch, old + 1)
        st[LIMIT] = new
        if self.log_steps:
            self.steps.append((now, inst.iid, inst.kind, new, lbp, tbp, itl, thr, inst.B))
        return new if new != old else None

    @staticmethod
    def limit(inst) -> int:
        st = inst.policy_state.get("local")
        return int(st[LIMIT]) if st is not None else int(inst.max_b)
