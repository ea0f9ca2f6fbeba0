"""The SLINFER paper's figures that docs/reproduction_slinfer.md puts beside ours, the reproduction's targets, and
the lookups of the results file (docs/results/slinfer.json) that the page's writers share."""

from __future__ import annotations

SIZES = ("3B", "7B", "13B")
MODELS = ("32", "64", "128")
SYSTEMS = ("sllm", "sllm+c", "sllm+c+s", "slinfer")
# The paper, Table III (aggregated PD; 7B by the 32-model GPU figures of IX-B): (avg GPUs, SLO %)
PAPER_T3 = {("sllm+c+s", "32"): (2.0, 99), ("sllm+c+s", "64"): (3.6, 93), ("sllm+c+s", "128"): (4.0, 65),
            ("slinfer", "32"): (0.9, 99), ("slinfer", "64"): (2.5, 99), ("slinfer", "128"): (4.0, 86)}
T3_TOL = {"slinfer": 4, "sllm+c+s": 6}  # targets: SLO within these points, GPUs within 0.4
GPU_TOL = 0.4
# The paper, IX-B: SLO-met improvement of SLINFER at 128 models over the three sizes (86-154 %, 47-62 %, 18-70 %)
PAPER_GAIN = {"sllm": ("1.86", "2.54"), "sllm+c": ("1.47", "1.62"), "sllm+c+s": ("1.18", "1.70")}
GAIN_TARGET = {"sllm": (1.7, 2.7), "sllm+c+s": (1.1, 1.8)}  # the reproduction's targets (none for sllm+c)
# The paper, IX-15 (Fig. 31): share of an instance's lifetime spent resizing at watermark 0 and 25 %
PAPER_WATERMARK = {"0": 0.113, "0.25": 0.014}
# The paper's text on Fig. 22 (IX-B): (size, models, system, metric) -> value
PAPER_FIG22 = {("3B", "32", "slinfer", "avg_cpu_nodes"): "3.0", ("3B", "32", "slinfer", "avg_gpu_nodes"): "0",
               ("3B", "32", "sllm", "avg_gpu_nodes"): "3.2", ("7B", "32", "sllm+c", "avg_gpu_nodes"): "1.5",
               ("7B", "32", "sllm+c+s", "avg_gpu_nodes"): "2.0", ("7B", "32", "slinfer", "avg_gpu_nodes"): "0.9"}
# The paper, IX-A: the baselines' concurrency limits for 3B / 7B / 13B on CPU and GPU
PAPER_LIMITS = {"sllm_limit": {"cpu": (59, 15, 6), "gpu": (160, 32, 16)},
                "sllm_cs_limit": {"cpu": (23, 4, 6), "gpu": (71, 12, 4)}}


def pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def met_ratio(a: dict, b: dict) -> float | None:
    """SLO-met(a) / SLO-met(b) of two runs of the same workload (same requests), computed from their SLO
    attainments (SLO-met / requests), the figures the results file holds as fractions."""
    return None if not b["slo_attainment"] else a["slo_attainment"] / b["slo_attainment"]


def ratio(res: dict, size: str, n: str, base: str, run: dict | None = None) -> float | None:
    """SLO-met of SLINFER (or of ``run``) over SLO-met of ``base``, same size and model count."""
    m = res.get("main", {}).get(size, {}).get(n, {})
    s = run or m.get("slinfer")
    b = m.get(base)
    return None if not s or not b else met_ratio(s, b)


def t3_ok(system: str, n: str, r: dict) -> bool:
    g, s = PAPER_T3[(system, n)]
    return abs(r["avg_gpu_nodes"] - g) <= GPU_TOL and abs(100 * r["slo_attainment"] - s) <= T3_TOL[system]


def gains(res: dict, base: str) -> list[tuple[str, float]]:
    return [(size, g) for size in SIZES if (g := ratio(res, size, "128", base)) is not None]


