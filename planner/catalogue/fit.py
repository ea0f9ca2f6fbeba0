"""Fit the engine's latency model to one measured (model, hardware, tp) group.

Engine model (contract, all seconds):

* one prefill iteration over T prompt tokens in the batch: ``c0 + c1*T + c2*T^2``;
* one decode iteration with B requests and C context tokens over the batch:
  ``c0 + c_batch*B + c_ctx*C``.

A measured row (prompt_size P, batch_size B, token_size n) maps to T = B*P for ``prompt_time``; its
per-iteration ``token_time`` is the mean over the n decode iterations, and because the decode model is
linear in C that mean equals the model at the mean context C = B*(P + (n+1)/2).

Coefficients are non-negative and minimise the RELATIVE error (the target is a percentage error): by
default the least absolute relative deviation (``loss="l1"``, aimed at the median error), or least
squares (``loss="l2"``); fitted on a seeded training split, the error is reported on held-out rows.
Rows are flagged before fitting (see ``flag_rows``); flagged-excluded rows are never trained on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only; scipy loads where a fit runs (the engine path reads the catalogue only)
    import pandas as pd

from planner.catalogue.errors import ProfileError

MONOTONE_TOL = 0.10  # a config doing more work may be up to 10 % faster than one doing less (noise)
NOISY_CV = 0.10  # coefficient of variation of the repeats above which a configuration is "noisy"
OUTLIER_DEV = 0.25  # a repeat further than 25 % from its configuration's median is an outlier
E2E_HIGH = 1.15  # e2e more than 15 % above prompt + n * token: the row is inconsistent (excluded)
E2E_LOW = 0.85  # e2e more than 15 % below: generation stopped early (informational; e2e is not fitted)

EXCLUDING = {
    "prompt_time": ("prompt_time:outlier", "prompt_time:non_monotonic", "e2e:inconsistent"),
    "token_time": ("token_time:outlier", "token_time:non_monotonic", "e2e:inconsistent"),
}
FLAG_HELP = {
    "prompt_time:noisy": "repeats of this configuration vary by more than 10 % (CV); kept",
    "token_time:noisy": "repeats of this configuration vary by more than 10 % (CV); kept",
    "prompt_time:outlier": "more than 25 % from the median of its repeats; not fitted",
    "token_time:outlier": "more than 25 % from the median of its repeats; not fitted",
    "prompt_time:non_monotonic": "faster than a configuration with fewer batch prompt tokens; not fitted",
    "token_time:non_monotonic": "faster than a configuration with fewer requests and less context; not fitted",
    "e2e:inconsistent": "e2e_time far above prompt_time + token_size * token_time; row not fitted",
    "e2e:short": "e2e_time well below prompt_time + token_size * token_time (generation stopped early); kept",
}


def prefill_tokens(frame: pd.DataFrame) -> np.ndarray:
    return (frame["batch_size"] * frame["prompt_size"]).to_numpy(float)


def decode_context(frame: pd.DataFrame) -> np.ndarray:
    return (frame["batch_size"] * (frame["prompt_size"] + (frame["token_size"] + 1) / 2.0)).to_numpy(float)


def prefill_time(coef: dict, tokens, sum_sq=None, prompts=None) -> np.ndarray:
    """One prefill iteration over ``tokens`` batch tokens. The optional richer terms ``c_sq`` (per sum of squared
    prompt sizes) and ``c_req`` (per prompt) need the batch's ``sum_sq`` and ``prompts``; omitted, the batch is
    one prompt of ``tokens`` tokens (the engine's simulations/engine/instance/perf.py uses the same convention)."""
    t = np.asarray(tokens, float)
    out = coef["c0"] + coef["c1"] * t + coef.get("c2", 0.0) * t * t
    c_sq, c_req = coef.get("c_sq", 0.0), coef.get("c_req", 0.0)
    if c_sq or c_req:
        sq = t * t if sum_sq is None else np.asarray(sum_sq, float)
        n = 1.0 if prompts is None else np.asarray(prompts, float)
        out = out + c_sq * sq + c_req * n
    return out


def prefill_sum_sq(frame: pd.DataFrame) -> np.ndarray:
    """Sum of squared prompt sizes of a table row's batch (batch_size prompts of prompt_size tokens)."""
    return (frame["batch_size"] * frame["prompt_size"] ** 2).to_numpy(float)


def decode_time(coef: dict, batch, context) -> np.ndarray:
    return coef["c0"] + coef["c_batch"] * np.asarray(batch, float) + coef["c_ctx"] * np.asarray(context, float)


def _greedy_blame(pairs: list[tuple[int, int]]) -> set[int]:
    """Smallest-ish set of nodes whose removal leaves no violating pair: drop the node in most pairs."""
    pairs = list(pairs)
    blamed: set[int] = set()
    while pairs:
        counts: dict[int, int] = {}
        for a, b in pairs:
            counts[a] = counts.get(a, 0) + 1
            counts[b] = counts.get(b, 0) + 1
        # ties go to the first element of a pair: the configuration doing MORE work yet running faster
        worst = max(counts, key=lambda k: (counts[k], any(p[0] == k for p in pairs)))
        blamed.add(worst)
        pairs = [p for p in pairs if worst not in p]
    return blamed


def flag_rows(frame: pd.DataFrame) -> list[list[str]]:
    """Flags per row of one normalised group (see FLAG_HELP)."""
    flags: list[set[str]] = [set() for _ in range(len(frame))]
    keys = ["prompt_size", "batch_size", "token_size"]
    cfg = frame.groupby(keys, sort=True).agg(
        pt=("prompt_time_s", "median"),
        tt=("token_time_s", "median"),
        pt_cv=("prompt_time_s", lambda s: s.std(ddof=0) / s.mean()),
        tt_cv=("token_time_s", lambda s: s.std(ddof=0) / s.mean()),
    )
    cfg = cfg.reset_index()
    cfg["T"] = cfg["batch_size"] * cfg["prompt_size"]
    cfg["C"] = decode_context(cfg)
    index_of = {tuple(r): i for i, r in enumerate(cfg[keys].itertuples(index=False, name=None))}
    row_cfg = np.array([index_of[tuple(r)] for r in frame[keys].itertuples(index=False, name=None)])

    pt, tt, T, B, C = (cfg[c].to_numpy(float) for c in ("pt", "tt", "T", "batch_size", "C"))
    n = len(cfg)
    pre_pairs, dec_pairs = [], []
    for i in range(n):
        for j in range(n):
            if T[i] > T[j] and pt[i] < (1 - MONOTONE_TOL) * pt[j]:
                pre_pairs.append((i, j))
            more = B[i] >= B[j] and C[i] >= C[j] and (B[i] > B[j] or C[i] > C[j])
            if more and tt[i] < (1 - MONOTONE_TOL) * tt[j]:
                dec_pairs.append((i, j))
    bad_pre, bad_dec = _greedy_blame(pre_pairs), _greedy_blame(dec_pairs)

    pt_row, tt_row = frame["prompt_time_s"].to_numpy(float), frame["token_time_s"].to_numpy(float)
    expected = pt_row + frame["token_size"].to_numpy(float) * tt_row
    e2e = frame["e2e_s"].to_numpy(float)
    for r in range(len(frame)):
        c = row_cfg[r]
        if cfg["pt_cv"].iat[c] > NOISY_CV:
            flags[r].add("prompt_time:noisy")
        if cfg["tt_cv"].iat[c] > NOISY_CV:
            flags[r].add("token_time:noisy")
        if abs(pt_row[r] - pt[c]) > OUTLIER_DEV * pt[c]:
            flags[r].add("prompt_time:outlier")
        if abs(tt_row[r] - tt[c]) > OUTLIER_DEV * tt[c]:
            flags[r].add("token_time:outlier")
        if c in bad_pre:
            flags[r].add("prompt_time:non_monotonic")
        if c in bad_dec:
            flags[r].add("token_time:non_monotonic")
        if np.isfinite(e2e[r]):
            ratio = e2e[r] / expected[r]
            if ratio > E2E_HIGH:
                flags[r].add("e2e:inconsistent")
            elif ratio < E2E_LOW:
                flags[r].add("e2e:short")
    return [sorted(f) for f in flags]


LOSSES = ("l1", "l2")


def _fit_relative(features: np.ndarray, y: np.ndarray, loss: str) -> np.ndarray:
    """Non-negative coefficients minimising the relative error ``|features @ c / y - 1|``.

    ``l1``: least absolute relative deviation (a linear programme; it targets the MEDIAN percentage
    error, which is what the catalogue reports); ``l2``: least squares on relative residuals (NNLS).
    """
    from scipy.optimize import linprog, nnls  # lazy: importing the catalogue must not load scipy

    scale = np.abs(features).max(axis=0)
    scale[scale == 0] = 1.0
    a = features / scale / y[:, None]
    n, k = a.shape
    if loss == "l2":
        coef, _ = nnls(a, np.ones(n), maxiter=50 * k)
        return coef / scale
    if loss != "l1":
        raise ValueError(f"loss must be one of {LOSSES}, not {loss!r}")
    # min sum(e+ + e-)  s.t.  a c - e+ + e- = 1,  c, e+, e- >= 0
    objective = np.r_[np.zeros(k), np.ones(2 * n)]
    equality = np.hstack([a, -np.eye(n), np.eye(n)])
    res = linprog(objective, A_eq=equality, b_eq=np.ones(n), bounds=[(0, None)] * (k + 2 * n), method="highs")
    if not res.success:  # pragma: no cover - the LP is always feasible (e absorbs everything)
        coef, _ = nnls(a, np.ones(n), maxiter=50 * k)
        return coef / scale
    return res.x[:k] / scale


PREFILL_FORMS = ("contract", "rich")


def fit_prefill(tokens, seconds, *, loss: str = "l1", sum_sq=None, prompts=None) -> dict:
    """c0 + c1*T + c2*T^2 (the contract form); with ``sum_sq`` and ``prompts`` also c_sq*sum(P_i^2) + c_req*B
    (the richer form: batched short prompts cost more than one long prompt of the same total)."""
    t = np.asarray(tokens, float)
    cols = [np.ones_like(t), t, t * t]
    if sum_sq is not None:
        cols += [np.asarray(sum_sq, float), np.asarray(prompts, float)]
    c = _fit_relative(np.column_stack(cols), np.asarray(seconds, float), loss)
    out = {"c0": float(c[0]), "c1": float(c[1]), "c2": float(c[2])}
    if sum_sq is not None:
        out.update(c_sq=float(c[3]), c_req=float(c[4]))
    return out


def fit_decode(batch, context, seconds, *, loss: str = "l1") -> dict:
    b, ctx = np.asarray(batch, float), np.asarray(context, float)
    c = _fit_relative(np.column_stack([np.ones_like(b), b, ctx]), np.asarray(seconds, float), loss)
    return {"c0": float(c[0]), "c_batch": float(c[1]), "c_ctx": float(c[2])}


def ape_summary(pred, meas) -> dict:
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    if len(meas) == 0:
        return {"n": 0, "median_ape": None, "p90_ape": None, "max_ape": None}
    ape = np.abs(pred - meas) / meas
    return {
        "n": int(len(ape)),
        "median_ape": float(np.median(ape)),
        "p90_ape": float(np.percentile(ape, 90)),
        "max_ape": float(ape.max()),
    }


@dataclass
class FitResult:
    prefill: dict
    decode: dict
    report: dict
    points: list[dict] = field(default_factory=list)  # per configuration, for the fit-vs-measurement plot
    range: dict = field(default_factory=dict)  # the measured range it was fitted on (see ``fitted_range``)


def value_span(values) -> list[float] | None:
    v = np.asarray(values, float)
    return [float(v.min()), float(v.max())] if v.size else None


def fitted_range(frame: pd.DataFrame, train_prefill, train_decode) -> dict:
    """The measured range a fit was trained on, as [min, max] per quantity (None when no row was used).

    ``batch_size`` and ``prompt_tokens`` (one request's prompt) cover the prefill and decode training rows;
    ``batch_prompt_tokens`` (T = B*P) the prefill rows; ``context_tokens`` (one request's context at the end
    of its generation, P + n) and ``batch_context_tokens`` (the mean decode context C over the batch) the
    decode rows. A run compares its requests against ``prompt_tokens`` and ``context_tokens``."""
    mp, md = np.asarray(train_prefill, bool), np.asarray(train_decode, bool)
    both = mp | md
    P, B, n = (frame[c].to_numpy(float) for c in ("prompt_size", "batch_size", "token_size"))
    return {
        "batch_size": value_span(B[both]),
        "prompt_tokens": value_span(P[both]),
        "batch_prompt_tokens": value_span((B * P)[mp]),
        "context_tokens": value_span((P + n)[md]),
        "batch_context_tokens": value_span(decode_context(frame)[md]),
        "rows": {"prompt_time": int(mp.sum()), "token_time": int(md.sum())},
    }


def split_mask(frame: pd.DataFrame, *, split: str, holdout: float, seed: int) -> np.ndarray:
    """Boolean mask of held-out rows. ``rows``: a random share of rows (repeats of a configuration can
    land on both sides, like the paper's 80:20 split); ``configs``: a random share of whole
    configurations (an interpolation test)."""
    rng = np.random.default_rng(seed)
    n = len(frame)
    if split == "rows":
        k = max(1, int(round(holdout * n)))
        mask = np.zeros(n, bool)
        mask[rng.choice(n, size=k, replace=False)] = True
        return mask
    if split == "configs":
        keys = list(frame[["prompt_size", "batch_size", "token_size"]].itertuples(index=False, name=None))
        distinct = sorted(set(keys))
        k = max(1, int(round(holdout * len(distinct))))
        chosen = {distinct[i] for i in rng.choice(len(distinct), size=k, replace=False)}
        return np.array([key in chosen for key in keys])
    raise ValueError(f"split must be 'rows' or 'configs', not {split!r}")


def _points(frame: pd.DataFrame, pp: np.ndarray, dp: np.ndarray, held: np.ndarray, flags: list) -> list[dict]:
    """One point per measured configuration (prompt, batch, output size): medians, the fit, repeats, flags."""
    points = []
    cfg = frame.assign(_pp=pp, _dp=dp, _held=held, _flags=[";".join(f) for f in flags])
    for key, g in cfg.groupby(["prompt_size", "batch_size", "token_size"], sort=True):
        points.append(
            {
                "prompt_size": int(key[0]),
                "batch_size": int(key[1]),
                "token_size": int(key[2]),
                "batch_tokens": int(key[0] * key[1]),
                "context_tokens": float(decode_context(g.iloc[:1])[0]),
                "prompt_time_s": float(g["prompt_time_s"].median()),
                "prompt_time_fit_s": float(g["_pp"].iat[0]),
                "token_time_s": float(g["token_time_s"].median()),
                "token_time_fit_s": float(g["_dp"].iat[0]),
                "repeats": int(len(g)),
                "heldout_repeats": int(g["_held"].sum()),
                "flags": sorted({f for s in g["_flags"] for f in s.split(";") if f}),
            }
        )
    return points


def fit_group(
    frame: pd.DataFrame,
    *,
    split: str = "rows",
    holdout: float = 0.2,
    seed: int = 0,
    loss: str = "l1",
    prefill_form: str = "contract",
) -> FitResult:
    """Flag, split, fit and evaluate one normalised (model, hardware, tp) group. ``prefill_form``: "contract"
    (c0 + c1*T + c2*T^2) or "rich" (+ c_sq*sum(P_i^2) + c_req*B)."""
    if prefill_form not in PREFILL_FORMS:
        raise ValueError(f"prefill_form must be one of {PREFILL_FORMS}, not {prefill_form!r}")
    frame = frame.reset_index(drop=True)
    flags = flag_rows(frame)
    held = split_mask(frame, split=split, holdout=holdout, seed=seed)
    T, B, C = prefill_tokens(frame), frame["batch_size"].to_numpy(float), decode_context(frame)
    pt, tt = frame["prompt_time_s"].to_numpy(float), frame["token_time_s"].to_numpy(float)
    ok = {
        target: np.array([not any(f in EXCLUDING[target] for f in fl) for fl in flags])
        for target in ("prompt_time", "token_time")
    }
    train_p, train_d = ok["prompt_time"] & ~held, ok["token_time"] & ~held
    if train_p.sum() < 3 or train_d.sum() < 3:
        raise ProfileError(
            f"too few usable rows to fit ({int(train_p.sum())} prefill, {int(train_d.sum())} decode; need 3 each)",
            where="model {} / hardware {} / tensor_parallel {}".format(
                frame["model"].iat[0], frame["hardware"].iat[0], frame["tp"].iat[0]
            ),
            hint="measure at least 3 distinct configurations of prompt_size and batch_size",
        )
    SQ = prefill_sum_sq(frame)
    if prefill_form == "rich":
        prefill = fit_prefill(T[train_p], pt[train_p], loss=loss, sum_sq=SQ[train_p], prompts=B[train_p])
    else:
        prefill = fit_prefill(T[train_p], pt[train_p], loss=loss)
    decode = fit_decode(B[train_d], C[train_d], tt[train_d], loss=loss)
    pp, dp = prefill_time(prefill, T, SQ, B), decode_time(decode, B, C)

    def errors(mask_p, mask_d) -> dict:
        return {"prompt_time": ape_summary(pp[mask_p], pt[mask_p]), "token_time": ape_summary(dp[mask_d], tt[mask_d])}

    flag_counts: dict[str, int] = {}
    for fl in flags:
        for f in fl:
            flag_counts[f] = flag_counts.get(f, 0) + 1
    flagged_rows = [
        {
            "line": int(frame["line"].iat[i]),
            "prompt_size": int(frame["prompt_size"].iat[i]),
            "batch_size": int(frame["batch_size"].iat[i]),
            "token_size": int(frame["token_size"].iat[i]),
            "flags": flags[i],
        }
        for i in range(len(frame))
        if flags[i]
    ]
    report = {
        "loss": loss,
        **({"prefill_form": prefill_form} if prefill_form != "contract" else {}),
        "split": split,
        "holdout": holdout,
        "seed": seed,
        "rows": int(len(frame)),
        "train_rows": {"prompt_time": int(train_p.sum()), "token_time": int(train_d.sum())},
        "train": errors(train_p, train_d),
        "heldout": errors(ok["prompt_time"] & held, ok["token_time"] & held),
        "heldout_all_rows": errors(held, held),
        "flag_counts": dict(sorted(flag_counts.items())),
        "flag_help": {k: FLAG_HELP[k] for k in sorted(flag_counts)},
        "flagged_rows": flagged_rows,
        "range": fitted_range(frame, train_p, train_d),
    }
    points = _points(frame, pp, dp, held, flags)
    return FitResult(prefill=prefill, decode=decode, report=report, points=points, range=report["range"])
