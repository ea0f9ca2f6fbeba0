"""Performance model: the contract's latency form, plus a small least-squares fitter for tests/tools.

prefill(T) = c0 + c1*T + c2*T^2       (one prefill iteration over T prompt tokens in the batch)
decode(B, C) = c0 + c_batch*B + c_ctx*C  (one decode iteration, B requests, C context tokens in total)

Optional richer prefill form (``fit_contract(..., form="rich")``): + c_sq*sum(P_i^2) + c_req*B, for B prompts
P_i. On SageServe's perf_model.csv it halves the held-out prompt_time error (see docs/simulator.md, Fidelity).

The hardware catalogue (planner/catalogue) owns the production fitter; ``fit_contract`` here is a plain
non-negative least-squares fit used by the engine's fidelity test and to build fixture specs.
"""

from __future__ import annotations

import numpy as np

from simulations.engine.scenario.config import DeploymentSpec


def prefill_time(spec: DeploymentSpec, tokens, sum_sq=None, prompts=None) -> np.ndarray:
    """Prefill iteration time for T = ``tokens`` (the richer terms need the batch's sum of squared prompt sizes
    and its prompt count; omitted, they count as a single prompt of T tokens)."""
    t = np.asarray(tokens, dtype=float)
    p = spec.prefill
    out = p.c0 + p.c1 * t + p.c2 * t * t
    if p.c_sq or p.c_req:
        sq = t * t if sum_sq is None else np.asarray(sum_sq, dtype=float)
        n = 1.0 if prompts is None else np.asarray(prompts, dtype=float)
        out = out + p.c_sq * sq + p.c_req * n
    return out


def decode_time(spec: DeploymentSpec, batch, context) -> np.ndarray:
    d = spec.decode
    return d.c0 + d.c_batch * np.asarray(batch, dtype=float) + d.c_ctx * np.asarray(context, dtype=float)


def decode_run_time(spec: DeploymentSpec, batch: int, context: int, n: int) -> float:
    """Total time of n decode iterations with a fixed batch whose context grows by ``batch`` per iteration."""
    d = spec.decode
    d0 = d.c0 + d.c_batch * batch + d.c_ctx * context
    return n * d0 + d.c_ctx * batch * n * (n - 1) / 2


def _nnls(features: np.ndarray, y: np.ndarray, relative: bool = True) -> np.ndarray:
    from scipy.optimize import nnls

    w = 1.0 / np.maximum(y, 1e-12) if relative else np.ones_like(y)
    coef, _ = nnls(features * w[:, None], y * w)
    return coef


def _l1(features: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least absolute relative error: min sum |X c - y| / y, c >= 0 (a linear programme)."""
    from scipy.optimize import linprog

    w = 1.0 / np.maximum(y, 1e-12)
    a = features * w[:, None]
    b = y * w
    n, k = a.shape
    # variables: c (k), u (n) with -u <= a c - b <= u
    cost = np.concatenate([np.zeros(k), np.ones(n)])
    a_ub = np.block([[a, -np.eye(n)], [-a, -np.eye(n)]])
    b_ub = np.concatenate([b, -b])
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=[(0, None)] * (k + n), method="highs")
    return res.x[:k] if res.success else _nnls(features, y)


def fit_contract(prompt_size, batch_size, token_size, prompt_time_s, token_time_s, *,
                 loss: str = "l1", form: str = "contract") -> tuple[dict, dict]:
    """Fit prefill/decode coefficients from perf-table rows (times in seconds, token_time per iteration).

    Prefill tokens T = prompt_size * batch_size; decode context C = batch * (prompt + token_size / 2)
    (the mean context over the generation). Relative (percentage) errors are minimised, non-negative;
    ``loss="l1"`` (default, robust to the tables' outliers) or ``"l2"``. ``form="rich"`` adds the prefill
    terms c_sq*sum(P_i^2) (= batch * prompt^2 for a table row) and c_req*batch.
    """
    if form not in ("contract", "rich"):
        raise ValueError(f"form must be 'contract' or 'rich', got {form!r}")
    solve = _l1 if loss == "l1" else _nnls
    # one point per measured configuration (median of its repetitions), so a configuration measured
    # 15 times does not outweigh the others
    import pandas as pd

    frame = pd.DataFrame({"p": np.asarray(prompt_size, float), "b": np.asarray(batch_size, float),
                          "k": np.asarray(token_size, float), "pt": np.asarray(prompt_time_s, float),
                          "tt": np.asarray(token_time_s, float)})
    frame = frame.groupby(["p", "b", "k"], as_index=False).median()
    p, b, k = frame["p"].to_numpy(), frame["b"].to_numpy(), frame["k"].to_numpy()
    prompt_time_s, token_time_s = frame["pt"].to_numpy(), frame["tt"].to_numpy()
    tt = p * b
    cols = [np.ones_like(tt), tt, tt * tt] + ([b * p * p, b] if form == "rich" else [])
    pre = solve(np.column_stack(cols), np.asarray(prompt_time_s, float))
    ctx = b * (p + k / 2)
    dec = solve(np.column_stack([np.ones_like(b), b, ctx]), np.asarray(token_time_s, float))
    prefill = {"c0": float(pre[0]), "c1": float(pre[1]), "c2": float(pre[2])}
    if form == "rich":
        prefill.update(c_sq=float(pre[3]), c_req=float(pre[4]))
    return prefill, {"c0": float(dec[0]), "c_batch": float(dec[1]), "c_ctx": float(dec[2])}
