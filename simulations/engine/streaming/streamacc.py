"""What a streamed replay reports, accumulated online from one continuous simulation.

``StreamAccumulator`` folds finished requests out of the run's request window (window.py) as their rows are
dropped, and the run's scaling events and timeline samples before they are cleared; at the end it folds the rest
(requests still unfinished count as dropped, reason ``unfinished``, as in ``build_result``) and reads the fleet's
instance-hours, GPU-hours, cost and energy from the run's instances with the same code as the per-request result
(metrics.usage_block, energy.add_energy): those are exact.

Exact: request, completion and drop counts (by tier and reason), SLO attainment (counted with build_result's
rule: TTFT target and completion deadline / E2E target), sums, means and maxima of TTFT, E2E, queueing, mean and
max time between tokens, GPU-hours, cost, energy, scale events, preemptions. Percentiles: ``LogHistogram``
(stream.py), within ``REL_ERR`` (0.5 %) of the exact nearest-rank percentile. Hourly rollups by the request's
arrival hour per endpoint and tier, and per endpoint and hour: GPU-hours and instance-hours (from the instances'
life times), mean serving / provisioning instances, utilisation and queue (from the timeline samples).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from simulations.engine.results.sketch import REL_ERR, Stat
from simulations.engine.scenario.config import TIERS

LATENCIES = ("ttft", "e2e", "queueing", "tbt_mean", "tbt_max")
HOUR = 3600.0


class StreamAccumulator:
    """Counts, sums and histograms of one streamed run, folded in as requests leave the window."""

    def __init__(self, sim) -> None:
        self.endpoint_names = [ep.name for ep in sim.endpoints]
        self.tiers = {name: {"requests": 0, "completed": 0, "slo_met": 0, "preempted_requests": 0,
                             "drop_reasons": {}, **{k: Stat() for k in LATENCIES}} for name in TIERS}
        self.all = {k: Stat() for k in LATENCIES}
        self.requests = self.completed = self.slo_met = 0
        self.preemptions = self.requests_preempted = self.max_preemptions = 0
        self.chunks = 0
        self.scale_outs = self.scale_ins = 0
        self.nominal: dict = {}  # (region, model) -> nominal provisioning delays (instant_provisioning)
        self.last_arrival = 0.0
        self.max_window = 0
        # hour -> [endpoint (+ never served), tier, (requests, completed, ttft sum, e2e sum, slo met)]
        self.hourly: dict[int, np.ndarray] = {}
        # hour -> [endpoint, (samples, serving, provisioning, draining, utilisation, queue)] from the timeline
        self.samples: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ folding
    def fold_requests(self, sim, rows: np.ndarray, final: bool = False) -> None:
        """Fold the window rows ``rows`` (sorted indices): finished requests (any request when ``final``)."""
        hi = int(rows.size)
        if hi <= 0:
            return
        w = sim.workload
        arr = w.arrival_s[rows]
        tier = np.asarray(w.tier[rows], dtype=np.int64)
        out = w.output_tokens[rows]
        t_first = np.asarray(sim.state.t_first)[rows]
        t_done = np.asarray(sim.state.t_done)[rows]
        dropped = np.zeros(hi, dtype=bool)
        why_of = {}
        if sim.state.dropped:
            pos = {int(r): j for j, r in enumerate(rows.tolist())} if not final else None
            for rid, why in sim.state.dropped.items():
                j = rid if final else pos.get(rid)
                if j is not None:
                    dropped[j] = True
                    why_of[j] = why
        done = ~np.isnan(t_done) & ~dropped
        if not final and not (done | dropped).all():
            raise AssertionError("fold_requests: a request still in flight was to leave the window")
        ttft = t_first - arr
        e2e = t_done - arr
        queueing = np.asarray(sim.state.t_admit)[rows] - arr
        multi = out > 1
        with np.errstate(invalid="ignore", divide="ignore"):
            tbt = (t_done - t_first) / np.maximum(out - 1, 1)
        tbt_max = np.asarray(sim.state.tbt_max)[rows]
        met = self._slo_met(sim, w, rows, done, ttft, e2e, t_done)
        pre = np.asarray(sim.state.preempted)[rows]
        self.requests += hi
        self.completed += int(done.sum())
        self.slo_met += int(met.sum())
        self.preemptions += int(pre.sum())
        self.requests_preempted += int((pre > 0).sum())
        self.max_preemptions = max(self.max_preemptions, int(pre.max()))
        self.last_arrival = max(self.last_arrival, float(arr.max()))
        values = {"ttft": ttft, "e2e": e2e, "queueing": queueing, "tbt_mean": tbt, "tbt_max": tbt_max}
        dm = done & multi
        for key, x in values.items():
            self.all[key].add(x[dm] if key.startswith("tbt") else x[done])
        for i, name in enumerate(TIERS):
            sel = tier == i
            if not sel.any():
                continue
            acc = self.tiers[name]
            d = done & sel
            acc["requests"] += int(sel.sum())
            acc["completed"] += int(d.sum())
            acc["slo_met"] += int(met[sel].sum())
            acc["preempted_requests"] += int((pre[sel] > 0).sum())
            for key, x in values.items():
                acc[key].add(x[d & multi] if key.startswith("tbt") else x[d])
            reasons = acc["drop_reasons"]
            for rid in np.flatnonzero(sel & dropped).tolist():
                reasons[why_of[rid]] = reasons.get(why_of[rid], 0) + 1
            if final:
                left = int((sel & ~done & ~dropped).sum())
                if left:
                    reasons["unfinished"] = reasons.get("unfinished", 0) + left
        self._hourly(arr, np.asarray(sim.state.served_ep)[rows], tier, done, met, ttft, e2e)

    def fold_unsimulated(self, w) -> None:
        """Requests of a chunk that starts after the run's time limit (``engine.max_time_s``): never simulated,
        counted as dropped ``unfinished``, as ``build_result`` counts the requests an unstreamed run did not reach
        (and their rows never enter the window)."""
        n = len(w)
        if not n:
            return
        tier = np.asarray(w.tier, dtype=np.int64)
        self.requests += n
        self.last_arrival = max(self.last_arrival, float(w.arrival_s.max()))
        for i, name in enumerate(TIERS):
            k = int((tier == i).sum())
            if k:
                reasons = self.tiers[name]["drop_reasons"]
                self.tiers[name]["requests"] += k
                reasons["unfinished"] = reasons.get("unfinished", 0) + k
        no = np.zeros(n, dtype=bool)
        nan = np.full(n, np.nan)
        self._hourly(np.asarray(w.arrival_s), np.full(n, -1, dtype=np.int64), tier, no, no, nan, nan)

    @staticmethod
    def _slo_met(sim, w, rows, done, ttft, e2e, t_done) -> np.ndarray:
        """build_result's rule (metrics.slo_met) on the window rows ``rows``."""
        from simulations.engine.results.metrics import slo_met

        deadline = w.deadline_s[rows] if w.deadline_s is not None else None
        return slo_met(sim, w.tier[rows], w.arrival_s[rows], deadline, done, ttft, e2e, t_done)

    def _hourly(self, arr, ep, tier, done, met, ttft, e2e) -> None:
        n_ep, n_t = len(self.endpoint_names) + 1, len(TIERS)
        hour = (arr // HOUR).astype(np.int64)
        ep = np.where(ep >= 0, ep, n_ep - 1).astype(np.int64)  # last row: never served
        h0 = int(hour.min())
        key = ((hour - h0) * n_ep + ep) * n_t + tier
        size = (int(hour.max()) - h0 + 1) * n_ep * n_t
        fields = [np.bincount(key, minlength=size), np.bincount(key, weights=done, minlength=size),
                  np.bincount(key[done], weights=ttft[done], minlength=size),
                  np.bincount(key[done], weights=e2e[done], minlength=size),
                  np.bincount(key, weights=met, minlength=size)]
        block = np.stack(fields, axis=-1).reshape(-1, n_ep, n_t, len(fields))
        for j in np.flatnonzero(block[..., 0].reshape(block.shape[0], -1).any(axis=1)).tolist():
            h = h0 + j
            if h in self.hourly:
                self.hourly[h] += block[j]
            else:
                self.hourly[h] = block[j].copy()

    def fold_events(self, sim, final: bool = False) -> None:
        """Count the scaling events so far and clear them (the last one stays: a policy may read it)."""
        from simulations.engine.results.metrics import nominal_provisioning

        ev = sim.scaling_events
        k = len(ev) if final else max(0, len(ev) - 1)
        if not k:
            return
        part = ev[:k]
        self.scale_outs += sum(1 for e in part if e["action"] == "scale_out")
        self.scale_ins += sum(1 for e in part if e["action"] == "scale_in")
        for key, delays in nominal_provisioning(sim, part).items():
            self.nominal.setdefault(key, []).extend(delays)
        del ev[:k]  # in place: the fused arrival path holds the list

    def fold_timeline(self, sim) -> None:
        """Hourly means per endpoint of the timeline samples (serving, provisioning, draining, utilisation, queue)."""
        tl = sim.timeline
        if not tl:
            return
        a = np.asarray(tl, dtype=np.float64)
        del tl[:]
        n_ep = len(self.endpoint_names)
        hour = (a[:, 0] // HOUR).astype(np.int64)
        eid = a[:, 1].astype(np.int64)
        for h in np.unique(hour).tolist():
            sel = hour == h
            block = np.zeros((n_ep, 6))
            np.add.at(block[:, 0], eid[sel], 1.0)
            for c, col in enumerate((2, 3, 4, 5, 6), start=1):
                np.add.at(block[:, c], eid[sel], a[sel, col])
            if h in self.samples:
                self.samples[h] += block
            else:
                self.samples[h] = block

    # ------------------------------------------------------------------ the end
    def finish(self, sim, scenario) -> dict:
        """Fold what is left and build the result dict (``StreamResult.to_dict``)."""
        from simulations.engine.results.energy import add_energy
        from simulations.engine.results.metrics import _floors, usage_block

        self.fold_requests(sim, np.arange(int(sim.state.n)), final=True)
        self.fold_events(sim, final=True)
        self.fold_timeline(sim)
        end = max(sim.state.t_work, self.last_arrival)
        usage, tot = usage_block(sim, end, self.nominal)
        sim.lifecycle.spot_flush(end)
        summary = {
            "requests": self.requests, "completed": self.completed, "dropped": self.requests - self.completed,
            "chunks": self.chunks, "duration_s": end,
            **{k: self.all[k].to_dict() for k in LATENCIES},
            "slo_attainment": self.slo_met / self.requests if self.requests else None,
            **tot, "scaling_waste_gpu_hours": tot["provisioning_gpu_hours"], **_floors(sim, end, tot["gpu_hours"]),
            "spot_instance_hours": {name: s / 3600 for name, s in zip(sim.region_names, sim.lifecycle.spot_seconds,
                                                                     strict=False)},
            "scale_outs": self.scale_outs, "scale_ins": self.scale_ins, "preemptions": self.preemptions,
            "preemptions_per_request": {"max": self.max_preemptions, "requests_preempted": self.requests_preempted},
            "context_limits": getattr(sim, "context_limits", None),
            "events": int(sim.state.events), "mode": sim.engine.mode, "strategy": sim.scenario.policy.autoscaler,
            "scheduler": sim.scenario.policy.scheduler, "seed": sim.engine.seed,
        }
        holder = SimpleNamespace(usage=usage, summary=summary)
        add_energy(holder, scenario)
        tiers = {}
        for name, acc in self.tiers.items():
            if not acc["requests"]:
                continue
            tiers[name] = {"requests": acc["requests"], "completed": acc["completed"],
                           "dropped": acc["requests"] - acc["completed"], "drop_reasons": acc["drop_reasons"],
                           "slo_attainment": acc["slo_met"] / acc["requests"],
                           "preempted_requests": acc["preempted_requests"],
                           **{k: acc[k].to_dict() for k in LATENCIES}}
        return {"summary": summary, "tiers": tiers, "hourly": self._hourly_rows(),
                "hourly_endpoints": self._endpoint_rows(sim, end), "usage": usage, "result_mode": "streaming",
                "percentile_rel_error": REL_ERR,
                "window": {"exact": True, "max_requests_held": self.max_window,
                           "trimmed": bool(getattr(sim, "rows_dropped", 0))}}

    def _hourly_rows(self) -> list:
        names = self.endpoint_names + ["(not served)"]
        rows = []
        for h in sorted(self.hourly):
            block = self.hourly[h]
            for e, ep_name in enumerate(names):
                for i, tier in enumerate(TIERS):
                    req, comp, s_ttft, s_e2e, met = block[e, i]
                    if req:
                        rows.append({"hour": h, "endpoint": ep_name, "tier": tier, "requests": int(req),
                                     "completed": int(comp), "slo_met": int(met),
                                     "ttft_mean_s": s_ttft / comp if comp else None,
                                     "e2e_mean_s": s_e2e / comp if comp else None})
        return rows

    def _endpoint_rows(self, sim, end: float) -> list:
        """Per endpoint and hour: GPU- and instance-hours of its instances (requested -> released, or the end),
        and the timeline's hourly means."""
        from simulations.engine.core.entities import RELEASED

        n_ep = len(self.endpoint_names)
        n_h = int(end // HOUR) + 1
        inst_s = np.zeros((n_h, n_ep))
        gpus = np.array([ep.spec.gpus_per_instance for ep in sim.endpoints], dtype=np.float64)
        for inst in sim.instances:
            a = inst.t_requested
            b = inst.t_released if inst.state == RELEASED else end
            e = inst.endpoint.eid
            h = int(a // HOUR)
            while a < b and h < n_h:
                edge = min(b, (h + 1) * HOUR)
                inst_s[h, e] += edge - a
                a = edge
                h += 1
        rows = []
        for h in range(n_h):
            s = self.samples.get(h)
            for e, name in enumerate(self.endpoint_names):
                k = s[e, 0] if s is not None else 0.0
                if not inst_s[h, e] and not k:
                    continue
                row = {"hour": h, "endpoint": name, "instance_hours": inst_s[h, e] / HOUR,
                       "gpu_hours": inst_s[h, e] * gpus[e] / HOUR}
                if k:
                    row.update({"serving_mean": s[e, 1] / k, "provisioning_mean": s[e, 2] / k,
                                "draining_mean": s[e, 3] / k, "utilisation_mean": s[e, 4] / k,
                                "queue_mean": s[e, 5] / k})
                rows.append(row)
        return rows


class StreamResult:
    """A streamed replay's outcome; ``to_dict()``: summary, tiers, hourly, hourly_endpoints, usage, result_mode,
    percentile_rel_error, window."""

    def __init__(self, data: dict) -> None:
        self.data = data

    def to_dict(self) -> dict:
        return self.data


class ChunkInfo:
    """What ``on_chunk(i, t0, info)`` receives after chunk ``i`` ran: ``info.summary`` (also ``info.to_dict()``):
    ``requests`` (the chunk's), ``t0`` / ``t1`` (its span: the run stopped just before ``t1``), ``sim_time_s``,
    ``requests_total`` / ``folded`` (folded out of the window so far) / ``completed`` (of the folded),
    ``window`` (rows held now) and ``in_flight`` (arrived, not finished), ``events``."""

    def __init__(self, summary: dict) -> None:
        self.summary = summary

    def to_dict(self) -> dict:
        return dict(self.summary)
