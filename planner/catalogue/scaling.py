"""Scaling rules that derive a deployment's latency model from another one (Django-free).

Two rules, both written down in docs/hardware.md and stored in each derived entry's ``estimate_rule``:

* ``measured_ratio``: multiply the prefill coefficients by r_p and the decode coefficients by r_d,
  where r_p, r_d are the median ratios of measured prompt_time / token_time between two GPUs for a
  reference model at the same tensor-parallel degree (used for Llama-3.x on H100 from Llama-2-70B's
  A100 -> H100 ratios: the shared tables measure Llama-3.x on A100 only).
* ``spec_ratio``: for a GPU nobody measured (H200, MI300X): prefill is compute-bound, so its
  coefficients scale by (F_ref / F_new) ** a_p with F the dense BF16 TFLOPS; decode is memory-bound,
  so its coefficients scale by (BW_ref / BW_new) ** a_d with BW the HBM bandwidth. The damping
  exponents a_p, a_d are calibrated so that the rule reproduces the MEASURED A100 -> H100 speed-up of
  Llama-2-70B TP8 (datasheet ratios alone promise far more than the measurements show).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def scale_coefficients(coef: dict, factor: float) -> dict:
    return {k: float(v) * float(factor) for k, v in coef.items()}


def measured_ratios(ref: pd.DataFrame, new: pd.DataFrame) -> dict:
    """Median ratio new/ref of per-configuration median prompt_time_s and token_time_s over the
    configurations both groups measured (normalised frames)."""
    keys = ["prompt_size", "batch_size", "token_size"]
    a = ref.groupby(keys)[["prompt_time_s", "token_time_s"]].median()
    b = new.groupby(keys)[["prompt_time_s", "token_time_s"]].median()
    both = a.join(b, lsuffix="_ref", rsuffix="_new", how="inner")
    if both.empty:
        raise ValueError("the two groups share no measured configuration")
    r_p = float(np.median(both["prompt_time_s_new"] / both["prompt_time_s_ref"]))
    r_d = float(np.median(both["token_time_s_new"] / both["token_time_s_ref"]))
    return {"prefill": r_p, "decode": r_d, "configurations": int(len(both))}


def calibrate_exponents(spec_ref: dict, spec_new: dict, measured: dict) -> dict:
    """Exponents a_p, a_d such that (F_ref/F_new)**a_p == measured prefill ratio (same for decode)."""
    a_p = math.log(measured["prefill"]) / math.log(spec_ref["bf16_tflops"] / spec_new["bf16_tflops"])
    a_d = math.log(measured["decode"]) / math.log(spec_ref["memory_bandwidth_tbs"] / spec_new["memory_bandwidth_tbs"])
    return {"prefill": a_p, "decode": a_d}


def spec_ratio_factors(spec_ref: dict, spec_new: dict, exponents: dict) -> dict:
    """Multipliers for prefill and decode coefficients when moving from spec_ref's GPU to spec_new's."""
    return {
        "prefill": (spec_ref["bf16_tflops"] / spec_new["bf16_tflops"]) ** exponents["prefill"],
        "decode": (spec_ref["memory_bandwidth_tbs"] / spec_new["memory_bandwidth_tbs"]) ** exponents["decode"],
    }
