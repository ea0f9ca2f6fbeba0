"""Fit the SLINFER authors' measured per-iteration tables (fixtures/hardware/slinfer/latency_tables.csv) into
catalogue deployments, like the SageServe tables: contract latency form, L1 relative fit, seeded 80:20 held-out
split. Django-free.

The table is not in the perf_model.csv shape: prefill rows give one prompt of ``prompt_tokens`` (batch 1), so
T = prompt_tokens; decode rows give ``batch_size`` requests each with ``context_tokens`` of context, so the
contract's batch context is C = batch_size x context_tokens. Times are milliseconds per iteration.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from planner.catalogue.errors import ProfileError
from planner.catalogue.fit import ape_summary, decode_time, fit_decode, fit_prefill, prefill_time, value_span

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "fixtures" / "hardware" / "slinfer" / "latency_tables.csv"
# SLINFER model label -> catalogue model; node label -> catalogue device type (A100-80GB, 32-core Xeon with AMX)
MODELS = {"llama-3.2-3b": "llama3.2-3b", "llama-2-7b": "llama2-7b", "llama-3.1-8b": "llama3.1-8b",
          "llama-2-13b": "llama2-13b"}
NODES = {"gpu": "a100-80gb", "cpu": "xeon-6462c"}
# CPU KV cache per instance in the artefact (SLINFER_core/scheduler/config*.py): 16 GB for the 3B model, else 32 GB
CPU_KV_GB = {"llama3.2-3b": 16, "llama2-7b": 32, "llama3.1-8b": 32, "llama2-13b": 32}
COLUMNS = ("model", "device", "node_label", "phase", "prompt_tokens", "batch_size", "context_tokens", "iteration_ms")


def load_table(path: Path = TABLE) -> pd.DataFrame:
    frame = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ProfileError(f"the SLINFER table lacks column(s) {missing}", where=str(path.name))
    frame["line"] = np.arange(len(frame)) + 2
    frame["seconds"] = frame["iteration_ms"].astype(float) / 1000.0
    return frame


def _holdout(n: int, rng: np.random.Generator, share: float = 0.2) -> np.ndarray:
    mask = np.zeros(n, bool)
    mask[rng.choice(n, size=max(1, int(round(share * n))), replace=False)] = True
    return mask


def _cross_validated(x_pre, y_pre, b, c, y_dec, folds: int = 5, seed: int = 0) -> dict:
    """Pooled held-out absolute percentage errors over ``folds``-fold cross-validation (every row held out once)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, n in (("prompt_time", len(y_pre)), ("token_time", len(y_dec))):
        fold = rng.permutation(n) % folds
        pred = np.empty(n)
        for k in range(folds):
            test = fold == k
            if name == "prompt_time":
                coef = fit_prefill(x_pre[~test], y_pre[~test])
                pred[test] = prefill_time(coef, x_pre[test])
            else:
                coef = fit_decode(b[~test], c[~test], y_dec[~test])
                pred[test] = decode_time(coef, b[test], c[test])
        out[name] = ape_summary(pred, y_pre if name == "prompt_time" else y_dec)
    return out


def fit_one(frame: pd.DataFrame, *, seed: int = 0) -> dict:
    """Fit one (model, node) group; returns prefill, decode, fit_report and points as the catalogue stores them."""
    pre = frame[frame["phase"] == "prefill"].reset_index(drop=True)
    dec = frame[frame["phase"] == "decode"].reset_index(drop=True)
    if len(pre) < 4 or len(dec) < 4:
        raise ProfileError("too few rows to fit and hold out", where=f"{frame['model'].iat[0]}/{frame['node_label'].iat[0]}")
    rng = np.random.default_rng(seed)
    held_p, held_d = _holdout(len(pre), rng), _holdout(len(dec), rng)
    t, y_p = pre["prompt_tokens"].to_numpy(float), pre["seconds"].to_numpy(float)
    b = dec["batch_size"].to_numpy(float)
    c = b * dec["context_tokens"].to_numpy(float)
    y_d = dec["seconds"].to_numpy(float)
    prefill = fit_prefill(t[~held_p], y_p[~held_p])
    decode = fit_decode(b[~held_d], c[~held_d], y_d[~held_d])
    pp, dp = prefill_time(prefill, t), decode_time(decode, b, c)

    def errors(mp, md) -> dict:
        return {"prompt_time": ape_summary(pp[mp], y_p[mp]), "token_time": ape_summary(dp[md], y_d[md])}

    report = {
        "loss": "l1", "split": "rows", "holdout": 0.2, "seed": seed, "rows": int(len(frame)),
        "train_rows": {"prompt_time": int((~held_p).sum()), "token_time": int((~held_d).sum())},
        "train": errors(~held_p, ~held_d),
        "heldout": errors(held_p, held_d),
        "heldout_all_rows": errors(held_p, held_d),
        "flag_counts": {}, "flag_help": {}, "flagged_rows": [],
        "units": {"time_unit": "ms", "token_time": "per_iteration",
                  "reason": "SLINFER tables give milliseconds per iteration; prefill rows are batch 1, decode rows "
                            "give per-request context (C = batch x context)"},
        "also": {"cross_validated_5_fold": _cross_validated(t, y_p, b, c, y_d, seed=seed)},
        "range": {  # the training rows' span (planner/catalogue/fit.py fitted_range); prefill rows are batch 1
            "batch_size": value_span(np.concatenate([np.ones(int((~held_p).sum())), b[~held_d]])),
            "prompt_tokens": value_span(t[~held_p]), "batch_prompt_tokens": value_span(t[~held_p]),
            "context_tokens": value_span(dec["context_tokens"].to_numpy(float)[~held_d]),
            "batch_context_tokens": value_span(c[~held_d]),
            "rows": {"prompt_time": int((~held_p).sum()), "token_time": int((~held_d).sum())},
        },
    }
    points = [
        {"prompt_size": int(p), "batch_size": 1, "token_size": 0, "batch_tokens": int(p), "context_tokens": 0.0,
         "prompt_time_s": float(y), "prompt_time_fit_s": float(f), "token_time_s": None, "token_time_fit_s": None,
         "repeats": 1, "heldout_repeats": int(h), "flags": []}
        for p, y, f, h in zip(t, y_p, pp, held_p, strict=True)
    ] + [
        {"prompt_size": int(ctx), "batch_size": int(bb), "token_size": 1, "batch_tokens": None,
         "context_tokens": float(cc), "prompt_time_s": None, "prompt_time_fit_s": None, "token_time_s": float(y),
         "token_time_fit_s": float(f), "repeats": 1, "heldout_repeats": int(h), "flags": []}
        for ctx, bb, cc, y, f, h in zip(dec["context_tokens"], b, c, y_d, dp, held_d, strict=True)
    ]
    return {"prefill": prefill, "decode": decode, "fit_report": report, "points": points,
            "max_batch_size": int(dec["batch_size"].max())}


def deployments(path: Path = TABLE, *, models: dict, seed: int = 0) -> list[dict]:
    """Catalogue deployment entries for every (model, node) of the table on the A100 and the 32-core Xeon."""
    table = load_table(path)
    out = []
    for (label, node), group in table.groupby(["model", "node_label"], sort=True):
        if label not in MODELS or node not in NODES:
            continue  # the 16- / 8-core cloud CPUs are not built in
        model, device = MODELS[label], NODES[node]
        fitted = fit_one(group, seed=seed)
        entry = {
            "model": model, "gpu": device, "tp": 1, "basis": "fitted", "estimated": False,
            "source": f"fitted from fixtures/hardware/slinfer/latency_tables.csv (SLINFER artefact, "
                      f"BarrinXu/SLINFER power_estimator.py), model={label}, node_label={node}; "
                      f"{len(group)} rows, 80:20 row split per phase, seed {seed}",
            "max_batch_size": fitted["max_batch_size"],
            "prefill": fitted["prefill"], "decode": fitted["decode"],
            "fit_report": fitted["fit_report"], "points": fitted["points"],
        }
        if device == "xeon-6462c":
            kv_bytes = models[model]["kv_bytes_per_token"]
            entry["kv_capacity_tokens"] = int(CPU_KV_GB[model] * 2**30 // kv_bytes)
            entry["source"] += (f"; KV capacity = SLINFER's fixed CPU KV pool of {CPU_KV_GB[model]} GiB per "
                                f"instance / {kv_bytes} bytes per token")
        out.append(entry)
    return out
