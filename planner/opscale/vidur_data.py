"""Compact extracts of Vidur's public profiles for the operator-level planner (Django-free).

Vidur (microsoft/vidur, MIT) times each operator of ONE transformer layer on one GPU. This module turns
the raw CSVs (a local copy of the repository's data/profiling/compute folder) into three small
files under fixtures/opscale/ that the planner reads at run time (medians only, milliseconds):

    python -m planner.opscale.vidur_data PROFILES_FOLDER --out fixtures/opscale

* ``linear_ops.csv``: gpu, model, tp, num_tokens, then one column per operator (emb, input_layernorm,
  attn_pre_proj, attn_rope, attn_post_proj, post_attention_layernorm, mlp_up_proj, mlp_act,
  mlp_down_proj, add), the median over repeated rows.
* ``attention_a100.csv``: is_prefill, batch_size, prefill_chunk_size, kv_cache_size, attn_ms (Llama-2-70B
  dimensions: 64 query heads, 8 KV heads, head dim 128, TP 2, FlashAttention; decode by batch and KV length,
  prefill by chunk and earlier KV length).
* ``network_a100_dgx.csv``: collective (all_reduce | send_recv), num_workers, devices_per_node, size, ms.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

OPS = (
    "emb",
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
# (gpu, model key, file model part)
COMPUTE_FILES = (
    ("a100", "llama-2-7b", "Llama-2-7b-hf"),
    ("a100", "llama-2-70b", "Llama-2-70b-hf"),
    ("a100", "llama-3-8b", "Meta-Llama-3-8B"),
    ("a100", "llama-3-70b", "Meta-Llama-3-70B"),
    ("a40", "llama-2-7b", "Llama-2-7b-hf"),
    ("h100", "llama-2-7b", "Llama-2-7b-hf"),
    ("h100", "llama-2-70b", "Llama-2-70b-hf"),
)


def linear_ops(vidur_dir: Path) -> pd.DataFrame:
    parts = []
    for gpu, model, part in COMPUTE_FILES:
        d = pd.read_csv(vidur_dir / f"profiling__compute__{gpu}__meta-llama__{part}__mlp.csv")
        frame = pd.DataFrame({"tp": d["num_tensor_parallel_workers"], "num_tokens": d["num_tokens"]})
        for op in OPS:
            frame[op] = d[f"time_stats.{op}.median"]
        frame = frame.groupby(["tp", "num_tokens"], as_index=False).median()
        parts.append(frame.assign(gpu=gpu, model=model))
    out = pd.concat(parts, ignore_index=True)
    return out[["gpu", "model", "tp", "num_tokens", *OPS]]


def attention(vidur_dir: Path) -> pd.DataFrame:
    d = pd.read_csv(vidur_dir / "profiling__a100__attention__e2d00e9.csv")
    ms = d["time_stats.attn_prefill.median"].where(d["is_prefill"], d["time_stats.attn_decode.median"])
    out = pd.DataFrame(
        {
            "is_prefill": d["is_prefill"].astype(int),
            "batch_size": d["batch_size"],
            "prefill_chunk_size": d["prefill_chunk_size"],
            "kv_cache_size": d["kv_cache_size"],
            "attn_ms": ms,
        }
    ).dropna()
    keys = ["is_prefill", "batch_size", "prefill_chunk_size", "kv_cache_size"]
    return out.groupby(keys, as_index=False).median()


def network(vidur_dir: Path) -> pd.DataFrame:
    parts = []
    for name in ("all_reduce", "send_recv"):
        d = pd.read_csv(vidur_dir / f"profiling__network__a100_dgx__{name}.csv")
        frame = pd.DataFrame(
            {
                "collective": name,
                "num_workers": d["num_workers"],
                "devices_per_node": d["devices_per_node"],
                "size": d["size"],
                "ms": d[f"time_stats.{name}.median"],
            }
        )
        parts.append(frame.groupby(["collective", "num_workers", "devices_per_node", "size"], as_index=False).median())
    return pd.concat(parts, ignore_index=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vidur_dir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, frame in (
        ("linear_ops.csv", linear_ops(args.vidur_dir)),
        ("attention_a100.csv", attention(args.vidur_dir)),
        ("network_a100_dgx.csv", network(args.vidur_dir)),
    ):
        frame.to_csv(args.out / name, index=False, float_format="%.6g")
        print(f"{len(frame)} rows -> {args.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
