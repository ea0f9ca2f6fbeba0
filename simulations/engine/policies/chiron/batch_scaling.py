"""Chiron's batch autoscaler (Algorithm 2) and the throughput it reads, as a base class of the ``chiron`` policy
(policy.py), per endpoint: the waiting-time estimate of every request group in the endpoint's global queue against
its TTFT deadline, the smallest number of batch instances of that endpoint that makes every group on time (added at
once), the endpoint's idle batch instances retired while its queue is empty, and Theta (the endpoint's batch token
throughput) measured over a sliding window. An endpoint's queue holds the requests of its model only and only its
instances serve them, so the queue, Theta, mu_o and r_new of Alg. 2 are all the endpoint's (``EndpointBatch``).

It reads the policy's state (``batch_of(ep)``, ``local``, ``events``, the per-instance ``policy_state``) and calls its
``_add`` and ``_state``; the policy module's docstring describes the whole algorithm.
"""

from __future__ import annotations

import math

from simulations.engine.policies.chiron.queue import estimate_wait

INTERACTIVE, MIXED, BATCH = "interactive", "mixed", "batch"


class BatchScaling:
    """Alg. 2 of Chiron; mixed into ``Chiron`` (policy.py), which owns the state these methods read."""

    def _rate_prior(self, inst, mean_out) -> float:
        """Tokens/s of one instance at its KV-bound batch, from the deployment's latency model (until measured);
        ``mean_out``: the mean output length of its endpoint's completed requests (0: none yet)."""
        d = inst.spec.decode
        mu = mean_out or 256.0
        ctx = max(1.0, self._mean_prompt + mu / 2.0)
        b = max(1.0, min(self.local.max_batch, inst.cap / (ctx + mu / 2.0)))
        return b / (d.c0 + d.c_batch * b + d.c_ctx * b * ctx)

    _mean_prompt = 256.0  # the prior's prompt length: the fleet's last 5,000 arrivals (every endpoint's)
    _mean_prompt_t = None  # the time _mean_prompt was taken

    def observed_theta(self, eb, now) -> float | None:
        """Theta of eq. 1 for the endpoint whose batch side is ``eb`` over the last ``theta_window_s`` (60 s), once
        batch work has run there for two windows (None before: the first window holds the ramp): the token
        throughput as the endpoint's instances actually deliver it to the batch class (prefill pauses, preemptions
        and the interactive share included).

        ``theta_from: "completed"`` (default): output tokens of the batch requests completed in the window. In
        steady state it equals the generation rate; it shares the completion sample with mu_o, so the length bias
        of early completions (short requests finish first: mu_o reads ~100 tokens for a true 188 two minutes into
        a dump) cancels in (q - 1) mu_o / Theta: estimator R^2 0.95 at 2,000 queued, against 0.57 with
        ``"generated"``: each closed local-autoscaler window's output tokens on a batch or mixed instance times
        its batch share of requests (the literal "token generation throughput", no lag, but divided by a biased
        mu_o it over-reads the drain rate 1.5x)."""
        dq = eb.gen_tok if self.theta_from == "generated" else eb.done_tok
        while dq and dq[0][0] < now - self.theta_window_s:
            dq.popleft()
        if eb.first_batch_t is None or now - eb.first_batch_t < 2 * self.theta_window_s:
            return None
        return sum(x for _, x in dq) / self.theta_window_s

    def batch_theta(self, sim, ep, now) -> tuple[float, float]:
        """(Theta_now, r_new): batch token throughput of the endpoint's serving batch and mixed instances, and of one
        new batch instance. Theta_now is the observed completion rate (``observed_theta``) once there is one, else the
        instances' measured saturated throughput (the latency model's at the KV-bound batch until measured) times
        their batch share; r_new is Theta_now per batch-equivalent instance, or the prior of one instance."""
        eb = self.batch_of(ep)
        mean_out = eb.out_stats.mean
        theta = 0.0
        prior = 0.0
        equiv = 0.0
        for inst in ep.serving:
            if inst.kind == INTERACTIVE:
                continue
            st = self._state(inst)
            prior = self._rate_prior(inst, mean_out)
            thr = st.prev_thr if st.started and st.prev_thr > 0 else prior  # the last saturated window's
            share = 1.0 if inst.kind == BATCH else 1.0 - min(1.0, st.ni / max(1, st.ni + st.nb)) \
                if st.nb else (0.5 if st.ni else 1.0)
            theta += thr * share
            if not self._fresh(inst, now):
                equiv += share
        if not prior and ep.serving:
            prior = self._rate_prior(ep.serving[0], mean_out)
        seen = self.observed_theta(eb, now)
        if seen is not None and seen > 0 and equiv > 0:
            return seen, seen / equiv
        return theta, (eb.r_new or prior)

    def _fresh(self, inst, now) -> bool:
        """A batch instance ready for less than one Theta window: its ramp is not (fully) in the measured Theta, so
        Alg. 2 counts it as still coming (like a provisioning one) rather than as measured capacity."""
        return inst.kind == BATCH and now - inst.t_ready < self.theta_window_s

    def _wait(self, tokens, theta, extra, r_new, load_s):
        """Time to process ``tokens`` with ``theta`` now and ``extra`` instances at ``r_new`` after ``load_s``. With no
        batch capacity now (``theta`` 0: an endpoint whose instances are all interactive) even the head of the queue
        waits for the first new instance to load (``load_s``), and forever without one."""
        if extra == 0 or (theta > 0 and theta * load_s >= tokens):
            return tokens / theta if theta > 0 else math.inf
        rate = theta + extra * r_new
        if rate <= 0:
            return math.inf
        return load_s + (tokens - theta * load_s) / rate

    def _batch_tick(self, sim, ep, now):
        """Alg. 2 for endpoint ``ep`` on its own queue (its batch instances serve only its requests)."""
        if now != self._mean_prompt_t:  # once a tick, not once an endpoint: the arrivals are the same
            self._mean_prompt_t = now
            obs_in = sim.observed(now)["input_tokens"]
            if len(obs_in):
                self._mean_prompt = float(obs_in[-min(len(obs_in), 5000):].mean())
        eb = self.batch_of(ep)
        queue = eb.queue
        batch_insts = [i for i in ep.serving if i.kind == BATCH]
        if not len(queue):
            idle = [i for i in batch_insts if sim.request_count(i) == 0 and self._state(i).nb <= 0]
            for inst in idle:
                sim.drain(inst, now, donate=True)
                sim.record_scaling(now, ep, "scale_in", source="spot", delay_s=0.0)
            if idle:
                self.events.append((now, "remove", BATCH, len(idle), "idle"))
            return
        out_stats = eb.out_stats
        if out_stats.n < 30:
            return  # no output-length statistics yet (the estimator needs past requests)
        mu, sigma = out_stats.mean, out_stats.std
        theta, r_new = self.batch_theta(sim, ep, now)
        load_s = ep.spec.startup.spot_reclaim_s
        prov = sum(1 for i in ep.provisioning if i.kind == BATCH)
        if self.observed_theta(eb, now) is not None:
            prov += sum(1 for i in ep.serving if self._fresh(i, now))
        groups = queue.snapshot()
        if self.record_estimates:
            self._record(queue, now, mu, sigma, theta)

        def bbp(extra):
            late = 0
            for size, a0, a1, ahead, slo in groups:
                for q_ahead, arr in ((ahead, a0), (ahead + size - 1, a1)):
                    m, s = estimate_wait(q_ahead, mu, sigma, 1.0)  # in tokens
                    w = self._wait(m + self.z * s, theta, extra + prov, r_new, load_s)
                    if now + w > arr + slo:
                        late += 1
                        break
            return late

        if not self.scale_batch:
            return
        if self.measure_first_s > 0 and self.observed_theta(eb, now) is None and all(
                a0 + slo - now > self.measure_first_s for _, a0, _, _, slo in groups):
            return  # Theta not measured yet (a dump's ramp under-reads it) and no deadline is near
        room = ep.max_instances - ep.n_active
        n = 0
        while n < room and bbp(n) > 0:
            n += 1
        if n:
            self._add(sim, ep, BATCH, n, now, f"BBP {bbp(0)} groups late")

    def _record(self, queue, now, mu, sigma, theta):
        for k, rid in enumerate(queue.order()):
            m, s = estimate_wait(k, mu, sigma, theta)
            self.estimates.append((now, rid, k, m, s))
