"""SLINFER-style shared-node (serverless) executor, next to the fleet loop. Django-free.

``simulate(frame, cfg)`` runs a workload (columns arrival_s, input_tokens, output_tokens, model; e.g. from
simulations.engine.workload.generator.slinfer.read) through one system (slinfer, sllm, sllm+c, sllm+c+s) on CPU and GPU
nodes and returns the metrics dict of metrics.summarize.
"""

from __future__ import annotations

from simulations.engine.serverless.config import SYSTEMS, ServerlessConfig, validate
from simulations.engine.serverless.perf import ttft_slo
from simulations.engine.serverless.state import OutOfMemory, Request


def requests_from(frame) -> list[Request]:
    order = frame.sort_values("arrival_s", kind="stable")
    return [Request(i, str(m), float(a), int(li), max(1, int(lo)), ttft_slo(int(li)))
            for i, (a, li, lo, m) in enumerate(zip(order["arrival_s"], order["input_tokens"],
                                                    order["output_tokens"], order["model"].astype(str), strict=True))]


def mean_outputs(frame) -> dict[str, float]:
    """Ō per model: the mean output length of the model's requests (the paper's "historical logs")."""
    return {str(k): float(v) for k, v in frame.groupby("model", observed=True)["output_tokens"].mean().items()}


def simulate(frame, cfg: ServerlessConfig) -> dict:
    from simulations.engine.serverless.executor import Executor  # noqa: PLC0415

    bad = validate(cfg)
    if bad:
        raise ValueError(f"{bad[0][0]}: {bad[0][1]}")
    return Executor(cfg, mean_outputs(frame)).run(requests_from(frame))


__all__ = ["SYSTEMS", "OutOfMemory", "ServerlessConfig", "simulate", "ttft_slo"]
