"""How much of a run the latency model had to extrapolate, computed after the run (not in the loop).

For every served request, against the deployment that served it:

* **beyond the context limit**: prompt > max model length (vLLM would refuse it) or prompt + output > it
  (vLLM would cut generation short); the simulator serves both in full;
* **outside the fitted prompt range**: the prompt is shorter or longer than any prompt the latency model was
  fitted on (``fitted_range.prompt_tokens``, planner/catalogue/fit.py), so its prefill time is extrapolated;
* **beyond the fitted context**: prompt + output beyond the longest fitted per-request context.

Shares are of served requests and of their prompt tokens. Limits and ranges come from the built-in catalogue
(a deployment by its name, the context limit also by its model's name or alias); a deployment the catalogue
does not know is listed under ``unknown`` rather than guessed.
"""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=1)
def _catalogue() -> tuple[dict, dict]:
    try:
        from planner.catalogue.builtin import builtin_view as load_builtin  # read-only, no copy
    except ImportError:  # pragma: no cover - the engine alone
        return {}, {}
    doc = load_builtin()
    deployments = {d["name"]: d for d in doc["deployments"]}
    models: dict = {}
    for m in doc["models"]:
        for name in [m["name"], *m.get("aliases", [])]:
            models[name] = m
    return deployments, models


def catalogue_limits(deployment: str, model: str) -> dict:
    """{"max_model_len": int | None, "fitted_range": dict} of a deployment from the built-in catalogue."""
    deployments, models = _catalogue()
    d = deployments.get(deployment) or {}
    limit = d.get("max_model_len") or (models.get(model) or models.get(d.get("model", "")) or {}).get("max_model_len")
    return {"max_model_len": limit, "fitted_range": d.get("fitted_range") or {}}


def _share(part: float, whole: float) -> float:
    return float(part / whole) if whole else 0.0


def validity_report(prompt, output, served_endpoint, endpoints: list[dict]) -> dict:
    """The extrapolation report of one run.

    ``prompt``/``output``: tokens per request; ``served_endpoint``: index into ``endpoints`` of the endpoint
    that served each request (-1: never served); ``endpoints``: per endpoint {"deployment", "max_model_len",
    "fitted_range"}."""
    prompt = np.asarray(prompt, np.int64)
    total = prompt + np.asarray(output, np.int64)
    k = len(endpoints)
    ep = np.asarray(served_endpoint, np.int64)
    served = ep >= 0
    idx = np.where(served, ep, k)  # k: the "never served" slot, whose limits flag nothing
    n, tokens = int(served.sum()), int(prompt[served].sum())
    limit = np.full(k + 1, np.iinfo(np.int64).max, np.int64)
    lo, hi, ctx_hi = (np.full(k + 1, v) for v in (0.0, np.inf, np.inf))
    unknown_limit, unknown_range = set(), set()
    for i, e in enumerate(endpoints):
        rng = e.get("fitted_range") or {}
        if e.get("max_model_len"):
            limit[i] = int(e["max_model_len"])
        else:
            unknown_limit.add(e["deployment"])
        if rng.get("prompt_tokens"):
            lo[i], hi[i] = rng["prompt_tokens"]
        else:
            unknown_range.add(e["deployment"])
        if rng.get("context_tokens"):
            ctx_hi[i] = rng["context_tokens"][1]
    flags = {
        "prompt_over_context": prompt > limit[idx],
        "total_over_context": total > limit[idx],
        "prompt_outside_fitted": (prompt < lo[idx]) | (prompt > hi[idx]),
        "context_beyond_fitted": total > ctx_hi[idx],
    }
    per_endpoint = {key: np.bincount(idx[f], minlength=k + 1) for key, f in flags.items()}
    per_endpoint["served_requests"] = np.bincount(idx, minlength=k + 1)
    per_deployment: dict[str, dict] = {}
    for i, e in enumerate(endpoints):
        rng = e.get("fitted_range") or {}
        row = per_deployment.setdefault(e["deployment"], {
            "max_model_len": e.get("max_model_len"), "fitted_prompt_tokens": rng.get("prompt_tokens"),
            "fitted_context_tokens": rng.get("context_tokens"), **{key: 0 for key in per_endpoint}})
        for key, counts in per_endpoint.items():
            row[key] += int(counts[i])
    out: dict = {"served_requests": n, "served_prompt_tokens": tokens}
    for key, f in flags.items():
        out[key] = {"requests": int(f.sum()), "share": _share(f.sum(), n),
                    "prompt_token_share": _share(prompt[f].sum(), tokens)}
    out["deployments"] = dict(sorted(per_deployment.items()))
    out["unknown"] = {"context_limit": sorted(unknown_limit), "fitted_range": sorted(unknown_range)}
    warnings = []
    c, p = out["prompt_over_context"], out["prompt_outside_fitted"]
    if c["requests"]:
        warnings.append(f"{c['requests']} served requests ({100 * c['share']:.2f} %) have a prompt beyond their "
                        f"deployment's context limit: a real server would refuse them")
    if out["total_over_context"]["requests"] > c["requests"]:
        extra = out["total_over_context"]["requests"] - c["requests"]
        warnings.append(f"{extra} more requests exceed the context limit with their output: a real server would stop "
                        f"them early")
    if p["requests"]:
        warnings.append(f"{p['requests']} requests ({100 * p['share']:.2f} %, {100 * p['prompt_token_share']:.2f} % of "
                        f"prompt tokens) are outside the prompt range the latency model was fitted on: their "
                        f"prefill time is extrapolated")
    if out["context_beyond_fitted"]["requests"]:
        warnings.append(f"{out['context_beyond_fitted']['requests']} requests run to a context beyond the fitted "
                        f"range: their decode steps are extrapolated")
    if unknown_range:
        warnings.append("no fitted range known for " + ", ".join(sorted(unknown_range))
                        + ": their extrapolation is not checked")
    out["warnings"] = warnings
    return out


def add_validity(result, fleet, workload) -> None:
    """Add ``summary["validity"]`` (``validity_report``) to a run's result, in place. ``fleet``: the fleet the run
    simulated (the autoscaler's ``prepare_fleet`` may add endpoints to the scenario's: siloed pools), whose
    endpoint order is the one ``result.requests["endpoint"]`` indexes."""
    endpoints = []
    for e in fleet.endpoints:
        row = {"deployment": e.deployment.name, **catalogue_limits(e.deployment.name, e.model)}
        if getattr(e.deployment, "max_model_len", 0):  # the limit the engine acted on, if the spec has one
            row["max_model_len"] = int(e.deployment.max_model_len)
        endpoints.append(row)
    report = validity_report(workload.input_tokens, workload.output_tokens, result.requests["endpoint"], endpoints)
    acted = (result.summary.get("context_limits") or {})
    if acted.get("limits") and acted.get("mode") != "ignore":  # the engine acted on the limits: say what it did
        done = {"reject": "refused (dropped, prompt_exceeds_max_model_len)", "route": "routed to a deployment that fits "
                "or refused", "truncate": "had their prompt truncated to fit"}[acted["mode"]]
        report["warnings"] = [w.replace("a real server would refuse them", done).replace(
            "a real server would stop them early", "their output was cut at the limit" if acted["mode"] != "truncate"
            else "their prompt was truncated") for w in report["warnings"]]
    result.summary["validity"] = report
