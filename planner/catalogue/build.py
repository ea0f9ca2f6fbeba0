"""Build the built-in catalogue (planner/catalogue/data/builtin.json) from the shared measurements.

    python -m planner.catalogue.build [--profiles fixtures/hardware/sageserve] [--out PATH]

Deterministic (fixed seed). Which deployments are fitted, derived or estimated, and how, is recorded
in each entry (``basis``, ``source``, ``estimate_rule``) and summarised in docs/hardware.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from planner.catalogue import slinfer
from planner.catalogue.fit import fit_group
from planner.catalogue.perfcsv import load_perf_table
from planner.catalogue.scaling import (
    calibrate_exponents,
    measured_ratios,
    scale_coefficients,
    spec_ratio_factors,
)
from planner.catalogue.spec import complete_catalogue

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PROFILES = ROOT / "fixtures" / "hardware" / "sageserve"
DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "builtin.json"
SEED = 0
TODAY = "2026-11-21"

PAPER = "SageServe paper (Jaiswal et al., arXiv:2502.14617, 2025), section 7.2.1"
ASSUMED_SPOT = 0.40  # spot at 40 % of on-demand (assumption; spot discounts vary, typically 60-90 %)
ASSUMED_RESERVED = 0.63  # 1-year reservation at ~37 % off on-demand (assumption)


def _prices(cloud: str, region: str, on_demand: float, source: str, as_of: str, assumed: bool) -> list[dict]:
    return [
        {
            "cloud": cloud,
            "region": region,
            "kind": "on_demand",
            "usd_per_gpu_hour": round(on_demand, 4),
            "source": source,
            "as_of": as_of,
            "assumed": assumed,
        },
        {
            "cloud": cloud,
            "region": region,
            "kind": "spot",
            "usd_per_gpu_hour": round(on_demand * ASSUMED_SPOT, 4),
            "source": f"assumption: {ASSUMED_SPOT:.0%} of the on-demand price ({source})",
            "as_of": TODAY,
            "assumed": True,
        },
        {
            "cloud": cloud,
            "region": region,
            "kind": "reserved",
            "usd_per_gpu_hour": round(on_demand * ASSUMED_RESERVED, 4),
            "source": f"assumption: {ASSUMED_RESERVED:.0%} of the on-demand price, ~1-year reservation ({source})",
            "as_of": TODAY,
            "assumed": True,
        },
    ]


H100_AZURE = 98.32 / 8
# A40 / A100 time ratios of Vidur's Llama-2-7B linear operators (planner.catalogue.vidur.linear_ops_seconds on
# profiling__compute__{a40,a100}__meta-llama__Llama-2-7b-hf__mlp.csv, TP1): median over num_tokens 128-4,096
# (prefill) and 1-256 (decode batch sizes). Computed 2026-11-24 for PreServe's testbed.
A40_RATIO = {"prefill": 1.987, "decode": 2.473}

GPU_TYPES = [
    {
        "name": "a100-80gb",
        "display_name": "NVIDIA A100 80GB SXM",
        "vendor": "NVIDIA",
        "memory_gb": 80,
        "bf16_tflops": 312,
        "memory_bandwidth_tbs": 2.039,
        "gpus_per_vm": 8,
        "device_kind": "gpu",
        "idle_w": 50,
        "busy_w": 400,
        "power_source": "busy = NVIDIA A100 80GB SXM TDP 400 W (datasheet, as recalled; an upper bound: serving rarely holds TDP); idle 50 W assumed (typical nvidia-smi idle reading of an A100, not measured here)",
        "power_assumed": True,
        "source": "NVIDIA A100 datasheet (dense BF16 312 TFLOPS, 2,039 GB/s); figures as recalled, not re-checked "
        "online on " + TODAY,
        "prices": _prices(
            "azure",
            "eastus",
            32.77 / 8,
            "Azure ND96amsr A100 v4 (8 x A100 80GB) pay-as-you-go, East US, $32.77/h per VM as listed "
            "in 2024; not re-verified (no internet here)",
            "2024-06-01",
            True,
        )
        + _prices(
            "aws",
            "us-east-1",
            40.9656 / 8,
            "AWS p4de.24xlarge (8 x A100 80GB) on-demand, $40.97/h as listed in 2023; not re-verified",
            "2023-07-01",
            True,
        ),
    },
    {
        "name": "h100-80gb",
        "display_name": "NVIDIA H100 80GB SXM",
        "vendor": "NVIDIA",
        "memory_gb": 80,
        "bf16_tflops": 989,
        "memory_bandwidth_tbs": 3.35,
        "gpus_per_vm": 8,
        "device_kind": "gpu",
        "idle_w": 70,
        "busy_w": 700,
        "power_source": "busy = NVIDIA H100 SXM TDP 700 W (datasheet, as recalled; an upper bound); idle 70 W assumed",
        "power_assumed": True,
        "source": "NVIDIA H100 SXM datasheet (dense BF16 989 TFLOPS, 3.35 TB/s); figures as recalled",
        "prices": _prices(
            "azure",
            "eastus",
            H100_AZURE,
            PAPER + ": 'H100 cluster cost on Azure $98.32/hour' for an 8 x H100 VM",
            "2025-02-20",
            False,
        )
        + _prices(
            "aws",
            "us-east-1",
            98.32 / 8,
            "AWS p5.48xlarge (8 x H100) on-demand at launch, $98.32/h; AWS cut p5 prices in 2025, "
            "not reflected; not re-verified",
            "2023-07-26",
            True,
        ),
    },
    {
        "name": "h100-80gb-pcap",
        "display_name": "NVIDIA H100 80GB, power-capped (splitwise profile)",
        "vendor": "NVIDIA",
        "memory_gb": 80,
        "bf16_tflops": 989,
        "memory_bandwidth_tbs": 3.35,
        "gpus_per_vm": 8,
        "device_kind": "gpu",
        "idle_w": 70,
        "busy_w": 700,
        "power_source": "assumed equal to the H100 (the cap of the splitwise profile is not published with it)",
        "power_assumed": True,
        "source": "the hardware label of the power-capped H100 rows of perf_model.csv (splitwise-sim)",
        "prices": _prices(
            "azure", "eastus", H100_AZURE, "assumed equal to the H100 price (" + PAPER + ")", TODAY, True
        ),
    },
    {
        "name": "h200-141gb",
        "display_name": "NVIDIA H200 141GB SXM",
        "vendor": "NVIDIA",
        "memory_gb": 141,
        "bf16_tflops": 989,
        "memory_bandwidth_tbs": 4.8,
        "gpus_per_vm": 8,
        "device_kind": "gpu",
        "idle_w": 70,
        "busy_w": 700,
        "power_source": "busy = NVIDIA H200 SXM TDP 700 W (datasheet, as recalled; an upper bound); idle 70 W assumed",
        "power_assumed": True,
        "source": "NVIDIA H200 datasheet (141 GB HBM3e, 4.8 TB/s, H100-class compute); figures as recalled",
        "prices": _prices(
            "azure",
            "eastus",
            H100_AZURE * 1.15,
            "assumption: 1.15 x the H100 per-GPU price (no verified public figure at hand)",
            TODAY,
            True,
        ),
    },
    {
        "name": "mi300x-192gb",
        "display_name": "AMD Instinct MI300X 192GB",
        "vendor": "AMD",
        "memory_gb": 192,
        "bf16_tflops": 1307,
        "memory_bandwidth_tbs": 5.3,
        "gpus_per_vm": 8,
        "device_kind": "gpu",
        "idle_w": 90,
        "busy_w": 750,
        "power_source": "busy = AMD MI300X TBP 750 W (datasheet, as recalled; an upper bound); idle 90 W assumed",
        "power_assumed": True,
        "source": "AMD MI300X datasheet (192 GB HBM3, 5.3 TB/s, dense BF16 1,307 TFLOPS); figures as recalled",
        "prices": _prices(
            "azure",
            "eastus",
            H100_AZURE,
            "assumption: equal to the H100 per-GPU price (no verified public figure at hand)",
            TODAY,
            True,
        ),
    },
    {
        "name": "a40",
        "display_name": "NVIDIA A40 48GB (PCIe)",
        "vendor": "NVIDIA",
        "memory_gb": 48,
        "bf16_tflops": 149.7,
        "memory_bandwidth_tbs": 0.696,
        "gpus_per_vm": 8,
        "device_kind": "gpu",
        "idle_w": 30,
        "busy_w": 300,
        "power_source": "busy = NVIDIA A40 board power 300 W (datasheet, as recalled); idle 30 W assumed",
        "power_assumed": True,
        "source": "NVIDIA A40 datasheet (dense BF16 149.7 TFLOPS, 696 GB/s); figures as recalled, not re-checked "
        "online on " + TODAY + "; added for PreServe, whose testbed is 8 x A40",
        "prices": _prices(
            "azure",
            "eastus",
            1.28,
            "ASSUMED: no Azure A40 list price was available offline; $1.28/GPU-h is an illustrative figure "
            "(between the A10 and the A100 per-GPU prices), not a quote",
            TODAY,
            True,
        ),
    },
]

CPU_TYPES = [
    {
        "name": "xeon-6462c",
        "display_name": "Intel Xeon Gold 6462C, 32 cores with AMX (one socket)",
        "vendor": "Intel",
        "device_kind": "cpu",
        "memory_gb": 512,
        "gpus_per_vm": 1,
        "idle_w": 80,
        "busy_w": 250,
        "power_source": "assumed: about the TDP of a 32-core Sapphire Rapids Xeon Gold (not verified: no datasheet "
        "at hand) while busy, 80 W idle; DRAM and the rest of the host are not counted",
        "power_assumed": True,
        "source": "the SLINFER authors' CPU node (node_label cpu: Xeon 6462C, 32 cores with AMX); memory_gb is "
        "host DRAM, assumed; a deployment's KV capacity is SLINFER's fixed per-instance KV pool, not derived from it",
        "prices": _prices(
            "azure",
            "eastus",
            3.072,
            "assumption: Azure D64s v5 (64 vCPU = 32 cores) pay-as-you-go, $3.072/h as recalled; not re-verified",
            TODAY,
            True,
        )
        + _prices(
            "aws",
            "us-east-1",
            3.2256,
            "assumption: AWS m7i.16xlarge (64 vCPU Sapphire Rapids = 32 cores) on-demand $3.2256/h as recalled; "
            "not re-verified",
            TODAY,
            True,
        ),
    },
]

MODELS = [
    {
        "name": "llama2-70b",
        "display_name": "Llama-2-70B",
        "parameters_billion": 68.98,
        "layers": 80,
        "kv_heads": 8,
        "head_dim": 128,
        "dtype_bytes": 2,
        "aliases": ["llama-2-70b", "Llama-2-70b-hf", "meta-llama/Llama-2-70b-hf"],
        "max_model_len": 4096,
        "max_model_len_source": "Llama 2 paper (Touvron et al. 2023, section 2.2: context length 4k) and meta-llama/Llama-2-70b-hf config.json max_position_embeddings 4096",
        "source": "Llama 2 paper / HF config: 80 layers, GQA with 8 KV heads of 128; BF16 weights (paper: ~140 GB)",
    },
    {
        "name": "bloom-176b",
        "display_name": "BLOOM-176B",
        "parameters_billion": 176.25,
        "layers": 70,
        "kv_heads": 112,
        "head_dim": 128,
        "dtype_bytes": 2,
        "aliases": ["bloom", "bigscience/bloom"],
        "max_model_len": 2048,
        "max_model_len_source": "BLOOM paper (BigScience 2022, section 3.5: sequence length 2048 tokens) and bigscience/bloom config (seq_length 2048)",
        "source": "BLOOM paper / HF config: 70 layers, 112 heads of 128 (multi-head attention); BF16 weights",
    },
    {
        "name": "llama3.1-8b",
        "display_name": "Llama-3.1-8B",
        "parameters_billion": 8.03,
        "layers": 32,
        "kv_heads": 8,
        "head_dim": 128,
        "dtype_bytes": 2,
        "aliases": ["Llama-3.1-8B", "llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"],
        "max_model_len": 131072,
        "max_model_len_source": "meta-llama/Llama-3.1-8B-Instruct config.json max_position_embeddings 131072 (Llama 3 herd paper: 128K context)",
        "source": "HF config: 32 layers, GQA with 8 KV heads of 128; BF16 weights",
    },
    {
        "name": "llama3.2-3b",
        "display_name": "Llama-3.2-3B",
        "parameters_billion": 3.21,
        "layers": 28,
        "kv_heads": 8,
        "head_dim": 128,
        "dtype_bytes": 2,
        "aliases": ["Llama-3.2-3B", "llama-3.2-3b", "meta-llama/Llama-3.2-3B-Instruct"],
        "max_model_len": 131072,
        "max_model_len_source": "meta-llama/Llama-3.2-3B-Instruct config.json max_position_embeddings 131072 (model card: 128K context)",
        "source": "HF config: 28 layers, GQA with 8 KV heads of 128; BF16 weights",
    },
]

MODELS += [
    {
        "name": "llama2-7b",
        "display_name": "Llama-2-7B",
        "parameters_billion": 6.74,
        "layers": 32,
        "kv_heads": 32,
        "head_dim": 128,
        "dtype_bytes": 2,
        "aliases": ["llama-2-7b", "Llama-2-7b-hf", "meta-llama/Llama-2-7b-hf"],
        "max_model_len": 4096,
        "max_model_len_source": "Llama 2 paper (section 2.2: context length 4k) and meta-llama/Llama-2-7b-hf config.json max_position_embeddings 4096",
        "source": "HF config: 32 layers, 32 heads of 128 (multi-head attention); BF16 weights. SLINFER's config: "
        "12.6 GB weights, 512 KB KV per token (matches)",
    },
    {
        "name": "llama2-13b",
        "display_name": "Llama-2-13B",
        "parameters_billion": 13.02,
        "layers": 40,
        "kv_heads": 40,
        "head_dim": 128,
        "dtype_bytes": 2,
        "aliases": ["llama-2-13b", "Llama-2-13b-hf", "meta-llama/Llama-2-13b-hf"],
        "max_model_len": 4096,
        "max_model_len_source": "Llama 2 paper (section 2.2: context length 4k) and meta-llama/Llama-2-13b-hf config.json max_position_embeddings 4096",
        "source": "HF config: 40 layers, 40 heads of 128 (multi-head attention); BF16 weights. SLINFER's config: "
        "24.3 GB weights, 800 KB KV per token (matches)",
    },
]

# (file, model label in file, hardware, tp in file) -> (catalogue model, tp)
FITTED = [
    *[
        ("perf_model.csv", "llama2-70b", hw, tp, "llama2-70b", tp)
        for hw in ("a100-80gb", "h100-80gb")
        for tp in (2, 4, 8)
    ],
    *[("perf_model.csv", "bloom-176b", hw, 8, "bloom-176b", 8) for hw in ("a100-80gb", "h100-80gb")],
    ("Llama-3.1-8B-tp-2.csv", "Llama-3.1-8B", "a100-80gb", 2, "llama3.1-8b", 2),
    ("Llama-3.1-8B-tp-4.csv", "Llama-3.1-8B", "a100-80gb", 4, "llama3.1-8b", 4),
    ("Llama-3.2-3B-tp-2.csv", "Llama-3.2-3B", "a100-80gb", 2, "llama3.2-3b", 2),
    # perf_model_4_models.csv labels Llama-3.x with TWICE the tensor-parallel degree of the named files
    # (its C tp4 / C tp8 / D tp4 rows are identical to Llama-3.1-8B tp2 / tp4 / Llama-3.2-3B tp2), so
    # its D "tp8" rows are read as Llama-3.2-3B TP4, the one combination without a named file.
    ("perf_model_4_models.csv", "D", "a100-80gb", 8, "llama3.2-3b", 4),
]


def _fit_entry(profiles: Path, spec) -> tuple[dict, object]:
    fname, label, hw, tp_file, model, tp = spec
    table = load_perf_table(profiles / fname)
    frame = table.rows[(table.rows.model == label) & (table.rows.hardware == hw) & (table.rows.tp == tp_file)]
    if frame.empty:
        raise SystemExit(f"no rows for {spec}")
    res = fit_group(frame, split="rows", seed=SEED)
    by_configs = fit_group(frame, split="configs", seed=SEED)
    l2 = fit_group(frame, split="rows", seed=SEED, loss="l2")
    report = dict(res.report)
    report["units"] = table.units[(label, hw, tp_file)].as_dict()
    report["also"] = {
        "split_configs_heldout": by_configs.report["heldout"],
        "loss_l2_heldout": l2.report["heldout"],
    }
    relabel = f" (file label tensor_parallel={tp_file}, read as TP{tp}; see build.py)" if tp_file != tp else ""
    entry = {
        "model": model,
        "gpu": hw,
        "tp": tp,
        "basis": "fitted",
        "estimated": False,
        "source": f"fitted from fixtures/hardware/sageserve/{fname}, model={label}, hardware={hw}, "
        f"tensor_parallel={tp_file}{relabel}; {len(frame)} rows, 80:20 row split, seed {SEED}",
        "prefill": res.prefill,
        "decode": res.decode,
        "fit_report": report,
        "points": res.points,
    }
    return entry, frame


def _derived_h100(deployments: list[dict], by_key: dict, frames: dict, notes: dict) -> None:
    """Llama-3.x on H100 from their A100 fit x Llama-2-70B's measured H100/A100 ratio at the same TP."""
    for model in ("llama3.1-8b", "llama3.2-3b"):
        for tp in (2, 4):
            ratio = measured_ratios(frames[("llama2-70b", "a100-80gb", tp)], frames[("llama2-70b", "h100-80gb", tp)])
            notes[f"llama2-70b a100->h100 tp{tp}"] = ratio
            base = by_key[(model, "a100-80gb", tp)]
            rule = (
                f"measured_ratio: the {model}/a100-80gb/tp{tp} fit with prefill x {ratio['prefill']:.3f} and "
                f"decode x {ratio['decode']:.3f}, the median H100/A100 ratios of Llama-2-70B TP{tp} "
                f"prompt_time/token_time over {ratio['configurations']} measured configurations"
            )
            deployments.append(
                {
                    "model": model,
                    "gpu": "h100-80gb",
                    "tp": tp,
                    "basis": "derived",
                    "estimated": True,
                    "estimate_rule": rule,
                    "source": "derived (no H100 measurement of this model is public)",
                    "fitted_range": base["fit_report"]["range"],  # scaled coefficients: the base's measured range
                    "prefill": scale_coefficients(base["prefill"], ratio["prefill"]),
                    "decode": scale_coefficients(base["decode"], ratio["decode"]),
                }
            )


def _estimated_from_h100(deployments: list[dict], gpu_spec: dict, measured: dict, notes: dict) -> None:
    """H200 and MI300X from every H100 entry with datasheet ratios damped by exponents calibrated on
    Llama-2-70B TP8 A100 -> H100."""
    exps = calibrate_exponents(gpu_spec["a100-80gb"], gpu_spec["h100-80gb"], measured)
    notes["calibration llama2-70b a100->h100 tp8"] = {**measured, "exponents": exps}
    h100 = [d for d in deployments if d["gpu"] == "h100-80gb"]
    for new in ("h200-141gb", "mi300x-192gb"):
        f = spec_ratio_factors(gpu_spec["h100-80gb"], gpu_spec[new], exps)
        notes[f"h100->{new}"] = f
        for base in h100:
            rule = (
                f"spec_ratio from {base['model']}/h100-80gb/tp{base['tp']}: prefill x (989/"
                f"{gpu_spec[new]['bf16_tflops']:g} TFLOPS)^{exps['prefill']:.3f} = {f['prefill']:.3f}, decode x "
                f"(3.35/{gpu_spec[new]['memory_bandwidth_tbs']:g} TB/s)^{exps['decode']:.3f} = {f['decode']:.3f}; "
                f"exponents calibrated on the measured Llama-2-70B TP8 A100->H100 speed-up"
                + ("; the H100 base is itself derived" if base["basis"] == "derived" else "")
            )
            deployments.append(
                {
                    "model": base["model"],
                    "gpu": new,
                    "tp": base["tp"],
                    "basis": "estimated",
                    "estimated": True,
                    "estimate_rule": rule,
                    "source": "estimated (no measurement on this GPU)",
                    "fitted_range": base.get("fitted_range") or base["fit_report"]["range"],
                    "prefill": scale_coefficients(base["prefill"], f["prefill"]),
                    "decode": scale_coefficients(base["decode"], f["decode"]),
                }
            )


def _bloom_check(by_key: dict, frames: dict, measured: dict) -> dict:
    """Check of the derivation rule on a pair we can measure: Bloom-176B TP8 H100 predicted from its A100 fit
    with Llama-2-70B TP8's ratios, against Bloom's measured H100 rows."""
    from planner.catalogue.fit import ape_summary, decode_context, decode_time, prefill_time, prefill_tokens

    bloom_a100 = by_key[("bloom-176b", "a100-80gb", 8)]
    bloom_h100 = frames[("bloom-176b", "h100-80gb", 8)]
    pre = scale_coefficients(bloom_a100["prefill"], measured["prefill"])
    dec = scale_coefficients(bloom_a100["decode"], measured["decode"])
    return {
        "prompt_time": ape_summary(prefill_time(pre, prefill_tokens(bloom_h100)), bloom_h100["prompt_time_s"]),
        "token_time": ape_summary(
            decode_time(dec, bloom_h100["batch_size"], decode_context(bloom_h100)), bloom_h100["token_time_s"]
        ),
    }


def _a40_llama2_7b(deployments: list[dict]) -> dict:
    """PreServe's testbed: LLaMA-2-7B on one A40 from the SLINFER A100 fit x the A40/A100 time ratios of
    Vidur's Llama-2-7B linear-operator profiles (no A40 latency table is public here)."""
    base = next(d for d in deployments if d["model"] == "llama2-7b" and d["gpu"] == "a100-80gb")
    return {
        "model": "llama2-7b",
        "gpu": "a40",
        "tp": 1,
        "basis": "derived",
        "estimated": True,
        "estimate_rule": (
            f"derived: the llama2-7b/a100-80gb/tp1 fit (SLINFER authors' measured table) with prefill x "
            f"{A40_RATIO['prefill']} and decode x {A40_RATIO['decode']}, the median A40/A100 time ratios of "
            "Vidur's Llama-2-7B linear-operator profiles (microsoft/vidur mlp.csv, TP1: 241 token counts in "
            "128-4,096 for prefill, p10-p90 1.88-2.26; 35 in 1-256 for decode, p10-p90 2.12-2.91). "
            "Uncertainty: attention has no A40 profile and takes the same ratio, so decode is uncertain by "
            "about +/-15 % (A40/A100 memory bandwidth alone would give 2.93x); KV from 48 GB x 0.9 "
            "(the PreServe paper says 40 GB per A40)"
        ),
        "source": "derived (no measurement of LLaMA-2-7B on an A40 is available offline)",
        "fitted_range": base["fit_report"]["range"],
        "max_batch_size": base.get("max_batch_size"),
        "prefill": scale_coefficients(base["prefill"], A40_RATIO["prefill"]),
        "decode": scale_coefficients(base["decode"], A40_RATIO["decode"]),
    }


def build(profiles: Path = DEFAULT_PROFILES) -> dict:
    deployments: list[dict] = []
    frames = {}
    for spec in FITTED:
        entry, frame = _fit_entry(profiles, spec)
        deployments.append(entry)
        frames[(entry["model"], entry["gpu"], entry["tp"])] = frame
    by_key = {(d["model"], d["gpu"], d["tp"]): d for d in deployments}
    gpu_spec = {g["name"]: g for g in GPU_TYPES}
    scaling_notes: dict = {}
    _derived_h100(deployments, by_key, frames, scaling_notes)
    measured = measured_ratios(frames[("llama2-70b", "a100-80gb", 8)], frames[("llama2-70b", "h100-80gb", 8)])
    _estimated_from_h100(deployments, gpu_spec, measured, scaling_notes)
    scaling_notes["check: bloom-176b h100 tp8 from a100 x llama2-70b ratios, all measured rows"] = _bloom_check(
        by_key, frames, measured)

    # SLINFER's measured tables: the four models on A100-80GB and on the 32-core Xeon with AMX, TP1
    from planner.catalogue.spec import complete_model

    models = {m["name"]: complete_model(m, m["name"]) for m in MODELS}
    deployments.extend(slinfer.deployments(models=models, seed=SEED))
    deployments.append(_a40_llama2_7b(deployments))

    doc = {"gpu_types": GPU_TYPES + CPU_TYPES, "models": MODELS, "deployments": deployments}
    completed = complete_catalogue(doc)
    completed["version"] = 1
    completed["generated"] = TODAY
    completed["scaling"] = scaling_notes
    completed["notes"] = (
        "Built by python -m planner.catalogue.build from fixtures/hardware/sageserve (SageServe's public "
        "measurements, MIT) and fixtures/hardware/slinfer (the SLINFER authors' measured tables). Times in seconds; "
        "prices in USD per GPU-hour (per CPU socket for CPU device types); power in watts per device."
    )
    return completed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=Path, default=DEFAULT_PROFILES)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    doc = build(args.profiles)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    summary = {
        "deployments": len(doc["deployments"]),
        "fitted": sum(d["basis"] == "fitted" for d in doc["deployments"]),
        "out": str(args.out),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
