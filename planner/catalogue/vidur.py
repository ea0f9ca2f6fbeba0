"""Vidur per-operator profiles as an independent check of the fitted prefill (Django-free).

Vidur (microsoft/vidur, MIT) times each operator of ONE transformer layer by ``num_tokens`` and
``num_tensor_parallel_workers`` (``data/profiling/compute/<gpu>/meta-llama/<model>/mlp.csv``, ms).
Summing the medians of the per-layer linear operators (layer norms, QKV/output projections, rotary,
MLP up/act/down, residual add) times the layer count, plus the embedding, gives the time of a forward
pass WITHOUT the attention kernel and WITHOUT the tensor-parallel all-reduces: a lower bound on one
prefill iteration over ``num_tokens`` tokens.

    python -m planner.catalogue.vidur SHARED_DIR/profiles/vidur --out fixtures/hardware/vidur/llama2-70b_linear_ops.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

LINEAR_OPS = (
    "input_layernorm",
    "attn_pre_proj",
    "attn_rope",
    "attn_post_proj",
    "post_attention_layernorm",
    "mlp_up_proj",
    "mlp_act",
    "mlp_down_proj",
    "add",
)


def linear_ops_seconds(mlp_csv: Path, layers: int) -> pd.DataFrame:
    """Columns: tp, num_tokens, linear_ops_s (one forward pass of the linear operators, seconds)."""
    d = pd.read_csv(mlp_csv)
    per_layer = sum(d[f"time_stats.{op}.median"] for op in LINEAR_OPS)
    total_ms = layers * per_layer + d["time_stats.emb.median"]
    out = pd.DataFrame(
        {"tp": d["num_tensor_parallel_workers"], "num_tokens": d["num_tokens"], "linear_ops_s": total_ms / 1e3}
    )
    return out.groupby(["tp", "num_tokens"], as_index=False)["linear_ops_s"].median()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vidur_dir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    parts = []
    for gpu in ("a100", "h100"):
        f = args.vidur_dir / f"profiling__compute__{gpu}__meta-llama__Llama-2-70b-hf__mlp.csv"
        parts.append(linear_ops_seconds(f, layers=80).assign(gpu=f"{gpu}-80gb"))
    out = pd.concat(parts)[["gpu", "tp", "num_tokens", "linear_ops_s"]]
    out.to_csv(args.out, index=False, float_format="%.6g")
    print(f"{len(out)} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
