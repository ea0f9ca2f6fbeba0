# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The floor: the engine's batching model for a fixed fleet in one tight compiled loop (tests/benchmarks/bench_floor.py).

Per instance: FCFS waiting queue; an iteration either prefills the waiting prompts that fit (at most ``max_batch``
running requests, ``max_batch_tokens`` prompt tokens per iteration, the KV capacity in tokens) in
prefill(T) = c0 + c1 T + c2 T^2, each producing its first token, or decodes every running request by one token in
decode(B, C) = c0 + c_batch B + c_ctx C. A request leaves after its last output token and frees its KV. Arrivals go
to the instance with the fewest outstanding tokens (prompt + output of its unfinished requests). No preemption,
no autoscaling, no per-request bookkeeping beyond the two times the metrics need.
"""

import numpy as np
cimport numpy as cnp


def run_floor(double[:] arrival, long[:] prompt, long[:] output, int n_inst, int max_batch, long max_batch_tokens,
              long kv_capacity, double p0, double p1, double p2, double d0, double d_batch, double d_ctx):
    cdef Py_ssize_t n = arrival.shape[0]
    cdef cnp.ndarray[double] t_first_a = np.full(n, np.nan)
    cdef cnp.ndarray[double] t_done_a = np.full(n, np.nan)
    cdef double[:] t_first = t_first_a
    cdef double[:] t_done = t_done_a
    cdef long[:] remaining = np.array(output, dtype=np.int64)
    cdef long[:] nxt = np.full(n, -1, dtype=np.int64)  # the FCFS queue of each instance as a linked list
    cdef long[:] head = np.full(n_inst, -1, dtype=np.int64)
    cdef long[:] tail = np.full(n_inst, -1, dtype=np.int64)
    cdef long[:, :] running = np.zeros((n_inst, max_batch), dtype=np.int64)
    cdef long[:] n_run = np.zeros(n_inst, dtype=np.int64)
    cdef long[:] kv = np.zeros(n_inst, dtype=np.int64)
    cdef long[:] ctx = np.zeros(n_inst, dtype=np.int64)  # tokens of context of the running requests
    cdef long[:] outstanding = np.zeros(n_inst, dtype=np.int64)
    cdef double[:] busy = np.zeros(n_inst)  # when the instance's current iteration ends
    cdef char[:] active = np.zeros(n_inst, dtype=np.int8)  # has work (an iteration scheduled at busy[i])
    cdef Py_ssize_t a = 0, i, j, best, r, k, done = 0
    cdef long tokens, b
    cdef double t, now, dt
    cdef long iterations = 0
    while done < n:
        # the next instance event
        best = -1
        t = 1e300
        for i in range(n_inst):
            if active[i] and busy[i] < t:
                t = busy[i]
                best = i
        if best < 0 and a >= n:
            break  # what is left can never be admitted (a request larger than the KV capacity)
        if a < n and arrival[a] <= t:
            now = arrival[a]
            best = 0
            for i in range(1, n_inst):
                if outstanding[i] < outstanding[best]:
                    best = i
            i = best
            if tail[i] < 0:
                head[i] = a
            else:
                nxt[tail[i]] = a
            tail[i] = a
            outstanding[i] += prompt[a] + output[a]
            if not active[i]:
                active[i] = 1
                busy[i] = now
            a += 1
            continue
        i = best
        now = t
        iterations += 1
        # prefill the waiting prompts that fit
        tokens = 0
        b = 0
        while head[i] >= 0 and n_run[i] + b < max_batch:
            r = head[i]
            if tokens + prompt[r] > max_batch_tokens and b > 0:
                break
            if kv[i] + prompt[r] + output[r] > kv_capacity:
                break
            tokens += prompt[r]
            kv[i] += prompt[r] + output[r]
            head[i] = nxt[r]
            if head[i] < 0:
                tail[i] = -1
            running[i, n_run[i] + b] = r
            b += 1
        if b > 0:
            dt = p0 + p1 * tokens + p2 * tokens * tokens
            for k in range(n_run[i], n_run[i] + b):
                r = running[i, k]
                t_first[r] = now + dt
                remaining[r] -= 1
                ctx[i] += prompt[r] + 1
            n_run[i] += b
        elif n_run[i] > 0:
            dt = d0 + d_batch * n_run[i] + d_ctx * ctx[i]
            for k in range(n_run[i]):
                remaining[running[i, k]] -= 1
            ctx[i] += n_run[i]
        else:
            active[i] = 0
            continue
        busy[i] = now + dt
        # requests whose last token came out leave (a prefill can finish a one-token request)
        k = 0
        for j in range(n_run[i]):
            r = running[i, j]
            if remaining[r] <= 0:
                t_done[r] = now + dt
                kv[i] -= prompt[r] + output[r]
                ctx[i] -= prompt[r] + output[r]
                outstanding[i] -= prompt[r] + output[r]
                done += 1
            else:
                running[i, k] = r
                k += 1
        n_run[i] = k
    return t_first_a, t_done_a, iterations
