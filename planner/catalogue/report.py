"""Print the fit-error table of the built-in fitted deployments (the figures in docs/hardware.md).

    python -m planner.catalogue.report [--seeds 10] [--json]

For every fitted group: held-out median / p90 absolute percentage error of prompt_time and token_time
with the shipped settings (L1, 80:20 row split, seed 0), the same over seeds 0..N-1 (median of the
per-seed figures), the whole-configuration split, and the least-squares fit.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from planner.catalogue.build import DEFAULT_PROFILES, FITTED
from planner.catalogue.fit import fit_group
from planner.catalogue.perfcsv import load_perf_table


def rows(seeds: int = 10) -> list[dict]:
    out = []
    cache: dict = {}
    for fname, label, hw, tp_file, model, tp in FITTED:
        if fname not in cache:
            cache[fname] = load_perf_table(DEFAULT_PROFILES / fname).rows
        t = cache[fname]
        frame = t[(t.model == label) & (t.hardware == hw) & (t.tp == tp_file)]

        def figures(frame=frame, **kw):
            h = fit_group(frame, **kw).report["heldout"]
            return [
                h["prompt_time"]["median_ape"],
                h["prompt_time"]["p90_ape"],
                h["token_time"]["median_ape"],
                h["token_time"]["p90_ape"],
            ]

        per_seed = np.array([figures(seed=s) for s in range(seeds)])
        out.append(
            {
                "deployment": f"{model}/{hw}/tp{tp}",
                "seed0": figures(seed=0),
                "seeds_median": list(np.median(per_seed, axis=0)),
                "configs_split": figures(split="configs", seed=0),
                "l2": figures(loss="l2", seed=0),
            }
        )
    return out


def _pct(v) -> str:
    return f"{100 * v:.1f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = rows(args.seeds)
    if args.json:
        print(json.dumps(data))
        return 0
    print(
        "| deployment | prompt med / p90 (seed 0) | token med / p90 (seed 0) | prompt med / p90 "
        f"(median of {args.seeds} seeds) | token med / p90 ({args.seeds} seeds) | prompt med / p90, "
        "configs split | prompt med / p90, L2 |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in data:
        s0, sm, cs, l2 = r["seed0"], r["seeds_median"], r["configs_split"], r["l2"]
        print(
            f"| {r['deployment']} | {_pct(s0[0])} / {_pct(s0[1])} | {_pct(s0[2])} / {_pct(s0[3])} | "
            f"{_pct(sm[0])} / {_pct(sm[1])} | {_pct(sm[2])} / {_pct(sm[3])} | {_pct(cs[0])} / {_pct(cs[1])} | "
            f"{_pct(l2[0])} / {_pct(l2[1])} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
