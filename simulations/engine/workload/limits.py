"""Context limits before the run: what ``engine.over_context`` does to requests longer than their
deployment's ``max_model_len`` (Django-free; not a loop module).

vLLM refuses a prompt longer than ``max_model_len`` and stops generating when prompt + output reach it
(finish reason "length"). Per model, the limit used here is the largest of its endpoints' deployments
(0 = an endpoint without a limit: nothing is changed for that model). Modes:

- ``reject`` (default, vLLM): a request whose prompt is longer than the limit (vLLM V1's input check: "The prompt
  ... is too long to fit into the model") is dropped at routing with reason ``prompt_exceeds_max_model_len``
  (arrivals.py, ``Endpoint.adm``); one whose prompt fits but whose output would not has its output cut to
  ``max(1, limit - prompt)`` tokens here (vLLM stops at max_model_len; the prefill's token always comes out).
- ``truncate``: the prompt's head is cut so prompt + output fit (output first cut to ``limit - 1`` if it alone is too
  long); nothing is dropped.
- ``route``: like ``reject``, but a request goes only to endpoints whose limit fits it (arrivals.py); outputs are cut
  to the largest limit.
- ``ignore``: simulated as given (the earlier model; validity.py still warns).

The returned ``info`` (``result.summary["context_limits"]``) counts what was done, so the run summary and
validity.py's over-context counts can be checked against each other.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np


def model_limits(fleet, model_names: list[str]) -> np.ndarray:
    """Per model index: the largest max_model_len of its endpoints' deployments; 0 if any endpoint has none."""
    lim = np.zeros(len(model_names), dtype=np.int64)
    for m, name in enumerate(model_names):
        vals = [e.deployment.max_model_len for e in fleet.endpoints if e.model == name]
        lim[m] = 0 if (not vals or 0 in vals) else max(vals)
    return lim


def apply_context_limits(fleet, workload, model_names: list[str], mode: str):
    """The workload the loop runs (outputs / prompts cut as ``mode`` says) and a summary of what was changed."""
    lim_m = model_limits(fleet, model_names)
    info = {"mode": mode, "limits": {model_names[m]: int(v) for m, v in enumerate(lim_m) if v},
            "prompts_over_limit": 0, "outputs_cut": 0, "output_tokens_cut": 0, "prompts_truncated": 0,
            "prompt_tokens_cut": 0}
    if mode == "ignore" or not lim_m.any() or len(workload) == 0:
        return workload, info
    lim = lim_m[workload.model]
    has = lim > 0
    inp = np.asarray(workload.input_tokens, dtype=np.int64)
    out = np.asarray(workload.output_tokens, dtype=np.int64)
    over_prompt = has & (inp > lim)
    info["prompts_over_limit"] = int(over_prompt.sum())
    if mode == "truncate":
        out2 = np.where(has, np.minimum(out, lim - 1), out)
        inp2 = np.where(has, np.minimum(inp, lim - out2), inp)
        info["prompts_truncated"] = int((inp2 < inp).sum())
        info["prompt_tokens_cut"] = int((inp - inp2).sum())
    else:  # reject / route: refused prompts are dropped at routing; the others stop at the limit
        inp2 = inp
        out2 = np.where(has & ~over_prompt, np.maximum(1, np.minimum(out, lim - inp)), out)
    info["outputs_cut"] = int((out2 < out).sum())
    info["output_tokens_cut"] = int((out - out2).sum())
    if info["outputs_cut"] == 0 and info["prompts_truncated"] == 0:
        return workload, info
    return replace(workload, input_tokens=inp2, output_tokens=out2), info
