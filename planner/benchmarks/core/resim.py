"""Re-simulating a benchmark run: its workload and load stages become an engine scenario on one instance of the
deployment, simulated over several arrival seeds with the engine's public API (``simulations.engine``).

Rules (fixed before any comparison with the measurements):
- Arrivals. ``constant`` (inference-perf): per stage, rate x duration exponential gaps rescaled so that exactly
  rate x duration requests fall in the stage; ``poisson``: a Poisson process at the stage's rate. Stages follow
  each other in one continuous run (a stage starts with the previous stage's requests in flight). ``trace``: the
  measured arrivals, replayed as they are.
- Lengths. The prompt is the stage's measured mean prompt length when the file has it (the client counts it
  with the model's tokenizer, as the server does), else system prompt + question; the output is the configured
  output length (the server generates exactly that many tokens with ignore_eos; the client's re-tokenised output
  count reads lower and is not used). Synthetic/random workloads draw from their distributions (seeded).
- Scheduling. vLLM from 0.8 schedules with its V1 engine (the default from v0.8.0): the deployment runs the
  engine's V1 scheduling (one token budget per step, decodes first, then chunked prefills). Older vLLM versions and
  other engines keep the chunked-prefill model of ``engine.chunked_prefill``.
- Prefix caching (engine setting on). With V1 the engine simulates it (simulations/engine/instance/kvcache.py) on 16-token
  blocks: inference-perf's shared_prefix generator builds num_groups x prompts_per_group prompts once (a group's
  system prompt + a question) and request k sends prompt k mod that number
  (kubernetes-sigs/inference-perf, inference_perf/datagen/shared_prefix_datagen.py, ``load_lazy_data``), so a
  prompt's blocks are the system prompt's (shared by its group) followed by its own, repeated every time it is
  sent. Without V1: the system prompt, rounded down to whole 16-token blocks, is a hit for every request and each
  request is simulated with prompt - cached tokens (the earlier approximation).
- Engine settings. max_num_seqs -> max_batch_size, max_num_batched_tokens -> token budget per step, chunked
  prefill on/off, TP and gpu_memory_utilization -> the physics deployment (KV capacity), max_model_len.
- A shortened simulation (``duration_scale`` < 1, the calibration's fit window) of a shared_prefix run starts
  with a warm-up that is not scored: stage 0's arrivals until the prompt pool (num_groups x prompts_per_group
  prompts) has been sent once. In a full stage of the inference-perf H100 runs (100 prompts) 1.4-3.3 % of the
  requests send their prompt for the first time (a prefix-cache miss: the whole prompt is prefilled); in its first
  15 % it would be 9-22 %, from an empty server, so the fit would see a colder, lighter stage than the one
  measured (and made prefill nearly free to match it: eta_flop at its bound).
- Client/server overhead the engine does not see (HTTP, tokenisation, streaming): the calibrated ``client_s`` is
  added to every simulated TTFT and E2E.
- Async scheduling (vLLM's default from v0.14.0, vllm-project/vllm#27614; ``--no-async-scheduling`` turns it
  off): the scheduler runs one step ahead of the GPU, building step n+1 while step n executes, so a request that
  arrives during step n joins step n+2, one step later than a synchronous scheduler lets it; a request reaching an
  idle server is scheduled at once. The engine simulates it (the deployment's ``async_scheduling``, chunked.py).
"""

from __future__ import annotations

import gc
import math
import re
from dataclasses import dataclass

import numpy as np

from planner.benchmarks.core.schema import BenchmarkRun
from planner.catalogue.physics import Efficiency, architecture, deployment_spec
from simulations.engine import parse_scenario, simulate
from simulations.engine.workload.workload import Workload

KV_BLOCK = 16
# a full collection costs ~0.2 s (the whole heap): worth it after a long run's prefix arrays, not after the short
# simulations a calibration repeats hundreds of times (their garbage waits for Python's own collections)
BIG_RUN = 5000
REGION = "bench"
WARMUP = -1  # the stage label of a fit window's warm-up requests (simulated, not scored)


@dataclass(frozen=True)
class StageSim:
    """Simulated statistics of one stage (seconds), pooled over the seeds."""

    index: int
    ttft: dict
    e2e: dict
    per_token: float
    completed: int
    unfinished: int
    prefix_hit_rate: float = math.nan  # prompt tokens served from the prefix cache / prompt tokens (NaN: not cached)


def _stage_arrivals(rng: np.random.Generator, kind: str, rate: float, duration: float) -> np.ndarray:
    n = int(round(rate * duration))
    if n <= 0:
        return np.zeros(0)
    if kind == "constant":
        t = np.cumsum(rng.exponential(1.0 / rate, n + 1))
        return t[:-1] * (duration / t[-1])  # exactly n requests inside the stage
    t = np.cumsum(rng.exponential(1.0 / rate, int(n * 1.5) + 20))
    return t[t < duration]


def uses_v1(run: BenchmarkRun) -> bool:
    """vLLM 0.8 and later run the V1 engine by default (an unstated version counts as current)."""
    e = run.engine
    if e.engine != "vllm":
        return False
    parts = [int(x) for x in re.findall(r"\d+", e.engine_version)[:2]]
    return not parts or tuple(parts + [0])[:2] >= (0, 8)


def async_scheduling(run: BenchmarkRun) -> bool:
    """Whether the server scheduled one step ahead: the run's setting, else the engine version's default (vLLM:
    on from 0.14.0; an unstated version counts as current)."""
    e = run.engine
    if e.async_scheduling is not None:
        return bool(e.async_scheduling)
    if e.engine != "vllm":
        return False
    parts = [int(x) for x in re.findall(r"\d+", e.engine_version)[:2]]
    return not parts or tuple(parts + [0])[:2] >= (0, 14)


def cached_prefix_tokens(run: BenchmarkRun) -> int:
    """The earlier approximation (without V1): the system prompt's whole blocks are hit by every request."""
    sp = run.workload.shared_prefix
    if not run.engine.prefix_caching or sp is None or uses_v1(run):
        return 0
    return (sp.system_prompt_len // KV_BLOCK) * KV_BLOCK


_ID_SHIFT = 24  # a prefix id is (owner << 24) | block index: prompts up to 2^24 blocks


def prompt_block_ids(run: BenchmarkRun, first: int, n: int, prompt: int) -> list[np.ndarray]:
    """The 16-token block ids of requests ``first`` .. ``first + n - 1`` of a shared_prefix run (request k sends
    prompt k mod num_groups x prompts_per_group; prompt p belongs to group p // prompts_per_group): the system
    prompt's whole blocks are the group's, the blocks from the first one that holds question tokens the prompt's."""
    sp = run.workload.shared_prefix
    n_prompts = sp.num_groups * sp.prompts_per_group
    sys_blocks = sp.system_prompt_len // KV_BLOCK
    j = np.arange(-(-prompt // KV_BLOCK), dtype=np.int64)
    table = [((np.where(j < sys_blocks, p // sp.prompts_per_group, sp.num_groups + p) << _ID_SHIFT) | j)
             for p in range(n_prompts)]  # one array per distinct prompt, shared by the requests that send it
    return [table[k % n_prompts] for k in range(first, first + n)]


def build_requests(run: BenchmarkRun, seed: int, *, duration_scale: float = 1.0) -> dict:
    """Arrays arrival_s, input_tokens, output_tokens, stage for one seed (``duration_scale`` < 1 simulates the
    first part of every stage only, for a quicker fit)."""
    rng = np.random.default_rng(seed)
    if run.workload.kind == "requests":  # measured requests, in their order
        req = run.requests
        assert req is not None
        n = len(req.input_tokens)
        if run.load.type == "trace" and req.arrival_s is not None:
            arrival = np.asarray(req.arrival_s, float)
        else:
            arrival = np.cumsum(rng.exponential(1.0 / run.load.stages[0].rate, n))
        return {"arrival_s": arrival, "input_tokens": np.asarray(req.input_tokens, np.int64),
                "output_tokens": np.maximum(np.asarray(req.output_tokens, np.int64), 1),
                "stage": np.zeros(n, np.int64)}
    parts, stage_of, ins, outs, prefixes = [], [], [], [], []
    start = 0.0
    cached = cached_prefix_tokens(run)
    blocks = run.engine.prefix_caching and uses_v1(run) and run.workload.kind == "shared_prefix"
    sent = 0
    warm = warmup_s(run) if duration_scale < 1 else 0.0
    for i, st in enumerate(run.load.stages):
        dur = st.duration * duration_scale + (warm if i == 0 else 0.0)
        t = _stage_arrivals(rng, run.load.type, st.rate, dur) + start
        n = len(t)
        measured = next((s for s in run.stages if s.index == i), None)
        wl = run.workload
        if wl.kind == "shared_prefix":
            sp = wl.shared_prefix
            prompt = (measured.prompt_len_mean if measured and measured.prompt_len_mean
                      else sp.system_prompt_len + sp.question_len)
            ins.append(np.full(n, max(1, int(round(prompt)) - cached), np.int64))
            outs.append(np.full(n, sp.output_len, np.int64))
            if blocks:
                prefixes.extend(prompt_block_ids(run, sent, n, int(round(prompt))))
        else:
            ins.append(_draw(rng, wl.input, n))
            outs.append(_draw(rng, wl.output, n))
        parts.append(t)
        stage_of.append(np.where(t < warm, WARMUP, i) if i == 0 else np.full(n, i, np.int64))
        start += dur
        sent += n
    req = {"arrival_s": np.concatenate(parts), "input_tokens": np.concatenate(ins),
           "output_tokens": np.concatenate(outs), "stage": np.concatenate(stage_of)}
    if blocks:
        req["hash_ids"] = prefixes  # one id per 16-token block (Workload.prefix_chunk_tokens = 16)
    return req


def warmup_s(run: BenchmarkRun) -> float:
    """Seconds of stage 0 that send a shared_prefix run's prompt pool once (0 for other workloads)."""
    sp = run.workload.shared_prefix
    if run.workload.kind != "shared_prefix" or sp is None or not run.load.stages:
        return 0.0
    return sp.num_groups * sp.prompts_per_group / run.load.stages[0].rate


def _draw(rng, dist, n: int) -> np.ndarray:
    x = rng.normal(dist.mean, dist.std, n) if dist.std > 0 else np.full(n, dist.mean)
    return np.clip(np.round(x), max(1, dist.min), dist.max).astype(np.int64)


def deployment_for(run: BenchmarkRun, eff: Efficiency) -> dict:
    e = run.engine
    arch = architecture(e.model)
    dep = deployment_spec(arch.name, e.gpu, e.tensor_parallel_size, eff, max_num_seqs=e.max_num_seqs,
                          max_num_batched_tokens=e.max_num_batched_tokens,
                          memory_utilisation=e.gpu_memory_utilization, max_model_len=e.max_model_len)
    return {**dep, **scheduling_of(run)}


def scheduling_of(run: BenchmarkRun) -> dict:
    """The deployment fields of the run's scheduler: V1 scheduling with its prefix caching and async scheduling
    settings (vLLM >= 0.8), else none (the scenario's chunked-prefill model)."""
    if not uses_v1(run):
        return {}
    return {"vllm_v1": True, "prefix_caching": bool(run.engine.prefix_caching),
            **({"async_scheduling": True} if async_scheduling(run) else {})}


def scenario_for(run: BenchmarkRun, deployment: dict, seed: int) -> dict:
    model = deployment["model"]
    return {
        "name": f"re-simulation of {run.name}", "seed": seed,
        "deployments": {deployment["name"]: deployment},
        "workload": {"frame": True, "model": model, "region": REGION, "tier": "IW-F"},
        "fleet": {"regions": [{"name": REGION}],
                  "endpoints": [{"region": REGION, "model": model, "deployment": deployment["name"],
                                 "initial": 1, "min": 1, "max": 1}]},
        "strategy": {"autoscaler": "static", "instance_router": "jsq-tokens", "scheduler": "fcfs"},
        "engine": {"mode": "fast", "chunked_prefill": bool(run.engine.chunked_prefill), "seed": seed,
                   "over_context": "ignore"},
    }


def _stats(x: np.ndarray) -> dict:
    if x.size == 0:
        return {"mean": math.nan, "p50": math.nan, "p90": math.nan, "p99": math.nan}
    p50, p90, p99 = np.percentile(x, [50, 90, 99])
    return {"mean": float(x.mean()), "p50": float(p50), "p90": float(p90), "p99": float(p99)}


def simulate_run(run: BenchmarkRun, eff: Efficiency, *, seeds=(0, 1, 2), duration_scale: float = 1.0,
                 deployment: dict | None = None) -> list[StageSim]:
    """Simulate the run over ``seeds`` and return per-stage statistics pooled over the seeds."""
    dep = deployment or deployment_for(run, eff)
    pooled: dict[int, dict[str, list]] = {}
    for seed in seeds:
        req = build_requests(run, seed, duration_scale=duration_scale)
        scenario = parse_scenario(scenario_for(run, dep, seed))
        workload = Workload.from_arrays({k: req[k] for k in ("arrival_s", "input_tokens", "output_tokens", "hash_ids")
                                         if k in req}, default_model=dep["model"], default_region=REGION)
        workload.prefix_chunk_tokens = KV_BLOCK
        # from_arrays sorts by arrival (stable) and shifts the first arrival to 0: keep the stage labels aligned
        order = np.argsort(req["arrival_s"], kind="stable")
        stage = req["stage"][order]
        out = req["output_tokens"][order]
        res = simulate(scenario, workload).requests
        if "cached_tokens" in res and len(workload.input_tokens) > BIG_RUN:
            gc.collect()  # the finished run's cyclic garbage holds its prefix arrays: free it before the next
        done = res["completed"]
        for i in np.unique(stage[stage != WARMUP]):
            sel = stage == i
            ok = sel & done
            acc = pooled.setdefault(int(i), {"ttft": [], "e2e": [], "tok": [], "done": 0, "left": 0, "hit": 0,
                                             "prompt": 0})
            if "cached_tokens" in res:
                acc["hit"] += int(res["cached_tokens"][sel].sum())
                acc["prompt"] += int(workload.input_tokens[sel].sum())
            ttft = res["ttft_s"][ok] + eff.client_s
            e2e = res["e2e_s"][ok] + eff.client_s
            acc["ttft"].append(ttft)
            acc["e2e"].append(e2e)
            multi = out[ok] > 1
            acc["tok"].append((e2e[multi] - ttft[multi]) / (out[ok][multi] - 1))
            acc["done"] += int(ok.sum())
            acc["left"] += int((sel & ~done).sum())
    out_stages = []
    for i, acc in sorted(pooled.items()):
        tok = np.concatenate(acc["tok"])
        out_stages.append(StageSim(index=i, ttft=_stats(np.concatenate(acc["ttft"])),
                                   e2e=_stats(np.concatenate(acc["e2e"])),
                                   per_token=float(tok.mean()) if tok.size else math.nan,
                                   completed=acc["done"], unfinished=acc["left"],
                                   prefix_hit_rate=acc["hit"] / acc["prompt"] if acc["prompt"] else math.nan))
    return out_stages
