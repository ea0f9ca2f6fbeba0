"""The physics model's efficiencies from a measured profile table (perf_model.csv format; Django-free).

    python -m planner.catalogue.physics_table fixtures/hardware/sageserve/perf_model.csv --gpu h100-80gb

Every (model, tp) group of the GPU type whose model has an architecture is used at once: one set of efficiencies
(eta_mem, eta_flop, layer_s, allreduce_s) for the GPU type. A table row's prefill is one prefill step of B prompts
of P tokens (T = B P, sum P^2 = B P^2); its decode is the mean iteration at context C = B (P + (n+1)/2). Rows the
catalogue's fit flags as excluded are left out; a seeded 80:20 split of the rows gives the held-out median and p90
absolute percentage errors, the same figures as the fitted contract deployments report (docs/hardware.md).
Teacher-forced (no queueing): the table's steps are given, only their times are predicted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace

import numpy as np
from scipy.optimize import least_squares

from planner.catalogue.errors import ProfileError
from planner.catalogue.fit import decode_context, flag_rows, split_mask
from planner.catalogue.perfcsv import load_perf_table
from planner.catalogue.physics import Efficiency, architecture, architectures, coefficients, datasheet

FREE = ("eta_mem", "eta_flop", "layer_s", "allreduce_s")
EXCLUDING = ("non_monotonic", "outlier", "inconsistent")


def _times(arch, gpu, tp, eff, frame) -> tuple[np.ndarray, np.ndarray]:
    pre, dec = coefficients(arch, gpu, tp, eff)
    b = frame["batch_size"].to_numpy(float)
    p = frame["prompt_size"].to_numpy(float)
    prefill = pre["c0"] + pre["c1"] * b * p + pre["c_sq"] * b * p * p + pre["c_req"] * b
    decode = dec["c0"] + dec["c_batch"] * b + dec["c_ctx"] * decode_context(frame)
    return prefill, decode


def _groups(table, gpu_name: str) -> list:
    known = architectures()
    out = []
    for (model, hw, tp), frame in table.groups():
        if hw != gpu_name or model not in known:
            continue
        flags = flag_rows(frame)
        keep_p = np.array([not any(f.startswith("prompt_time") and f.endswith(EXCLUDING) for f in fl) for fl in flags])
        keep_d = np.array([not any((f.startswith("token_time") or f.startswith("e2e")) and f.endswith(EXCLUDING)
                                   for f in fl) for fl in flags])
        train = split_mask(frame, split="rows", holdout=0.2, seed=0)
        out.append({"model": model, "tp": tp, "arch": architecture(model), "frame": frame,
                    "keep_p": keep_p, "keep_d": keep_d, "train": train})
    if not out:
        raise ProfileError(f"no group of GPU type {gpu_name!r} with a known architecture", where="table")
    return out


def fit_table(path: str, gpu_name: str) -> dict:
    table = load_perf_table(path)
    groups = _groups(table, gpu_name)
    gpu = datasheet(gpu_name)
    base = Efficiency(client_s=0.0, step_s=0.0)

    def eff_of(x):
        return replace(base, **{k: float(math.exp(v)) for k, v in zip(FREE, x, strict=True)})

    def residuals(x, part: str):
        eff = eff_of(x)
        res = []
        for g in groups:
            pre, dec = _times(g["arch"], gpu, g["tp"], eff, g["frame"])
            sel = g["train"] if part == "train" else ~g["train"]
            mp, md = sel & g["keep_p"], sel & g["keep_d"]
            res.append(np.log(pre[mp] / g["frame"]["prompt_time_s"].to_numpy(float)[mp]))
            res.append(np.log(dec[md] / g["frame"]["token_time_s"].to_numpy(float)[md]))
        return np.concatenate(res)

    x0 = np.log([getattr(Efficiency(), k) for k in FREE])
    sol = least_squares(lambda x: residuals(x, "train"), x0, loss="soft_l1", f_scale=0.1)
    eff = eff_of(sol.x)
    report = {"gpu": gpu_name, "efficiency": eff.to_dict(), "groups": []}
    for g in groups:
        pre, dec = _times(g["arch"], gpu, g["tp"], eff, g["frame"])
        held = ~g["train"]
        f = g["frame"]
        e_p = np.abs(pre / f["prompt_time_s"].to_numpy(float) - 1)[held & g["keep_p"]] * 100
        e_d = np.abs(dec / f["token_time_s"].to_numpy(float) - 1)[held & g["keep_d"]] * 100
        report["groups"].append({
            "model": g["model"], "tp": g["tp"],
            "prompt_time": {"n": int(e_p.size), "median_ape": float(np.median(e_p)), "p90_ape": float(np.percentile(e_p, 90))},
            "token_time": {"n": int(e_d.size), "median_ape": float(np.median(e_d)), "p90_ape": float(np.percentile(e_d, 90))},
        })
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m planner.catalogue.physics_table", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table")
    ap.add_argument("--gpu", required=True)
    args = ap.parse_args(argv)
    print(json.dumps(fit_table(args.table, args.gpu), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
