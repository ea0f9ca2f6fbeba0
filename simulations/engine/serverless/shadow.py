"""Shadow validation as a virtual replay (the paper's reading, §VI-C: "virtually add and simulate the future
compute procedure"), the switch ``shadow="replay"`` beside the default analytic bound (policies.Slinfer.shadow).

The node's future is replayed with the executor's own rules (policies.Slinfer.pick and executor.kick): one
iteration at a time for the instance holding the least-headroom request; a prefill runs alone for that request,
else the instance decodes its prefilled requests as one batch; instances still loading or resizing join when
ready. Every iteration is x margin (1.1). The replay runs until r has its first token and one more TPOT window
has passed, so every request's next token after r's prefill is checked. r is refused when its first token
misses its TTFT deadline (case 1) or a request that was on time misses a token deadline (case 2); case 3
(the node's steady-state decode round above TPOT_SLO) is the bound's check, kept as is. Requests already late
when the replay starts are not counted against r. Django-free.
"""

from __future__ import annotations

from simulations.engine.serverless.state import TPOT_SLO

MAX_STEPS = 400  # a replay longer than this is refused (never reached on the artefact's workloads: see tests)


def replay(ex, node, inst, r, start_wait: float, margin: float) -> bool:
    prof, now = ex.prof(node), ex.now
    eps = 1e-9
    # virtual instances: [ready_at, [[deadline, prefilled, context, tokens_left, checked, is_r], ...]]
    virtual = []
    for j in node.instances:
        reqs = [[q.deadline(), q.prefilled, q.context(), q.output_tokens - q.generated, q.deadline() > now, False]
                for q in j.requests]
        ready = max(j.ready_at, j.resizing_until, now)
        if j is inst:
            reqs.append([r.deadline(), False, r.context(), r.output_tokens - r.generated, True, True])
            ready = max(ready, now + start_wait)
        if reqs:
            virtual.append([ready, reqs])
    if inst is None:
        virtual.append([now + start_wait, [[r.deadline(), False, r.context(), r.output_tokens - r.generated, True,
                                            True]]])
    t = node.busy_until if node.running_inst is not None and node.busy_until > now else now
    r_first = None
    for _ in range(MAX_STEPS):
        live = [v for v in virtual if v[1]]
        if not live:
            return True
        ready = [v for v in live if v[0] <= t + eps]
        if not ready:
            t = min(v[0] for v in live)
            continue
        v = min(ready, key=lambda x: min(q[0] for q in x[1]))
        urgent = min(v[1], key=lambda q: q[0])
        if not urgent[1]:
            batch = [urgent]
            dt = margin * prof.prefill(urgent[2])
        else:
            batch = [q for q in v[1] if q[1]]
            dt = margin * prof.decode(len(batch), sum(q[2] for q in batch) / len(batch))
        t += dt
        for q in batch:
            if q[4] and t > q[0] + eps:
                return False  # case 1 (q is r) or case 2 (an on-time request pushed past its deadline)
            if q[5] and r_first is None:
                r_first = t
            q[0] += TPOT_SLO
            q[1] = True
            q[2] += 1
            q[3] -= 1
        v[1] = [q for q in v[1] if q[3] > 0]
        if r_first is not None and t >= r_first + TPOT_SLO:
            return True
    return False
