"""Context limits (max model length) against request sizes, Django-free.

vLLM refuses a request whose prompt alone exceeds the served max model length, and stops generating when
prompt + output reaches it; ``ContextCounter`` counts both cases per catalogue model over a stream of
(prompt, output) token arrays, for a trace's characterisation (planner/ingest/characterise.py).
"""

from __future__ import annotations

import numpy as np


class ContextCounter:
    """Requests (and their prompt tokens) beyond each model's context limit, accumulated batch by batch.

    ``limits``: {model name: max_model_len in tokens}; models without a known limit are left out."""

    def __init__(self, limits: dict[str, int] | None):
        self.limits = {str(k): int(v) for k, v in (limits or {}).items() if v}
        self.requests = 0
        self.prompt_tokens = 0
        self._n = {m: [0, 0, 0] for m in self.limits}  # prompt over, prompt + output over, prompt tokens over

    def add(self, prompt: np.ndarray, output: np.ndarray) -> None:
        prompt = np.asarray(prompt, np.int64)
        total = prompt + np.asarray(output, np.int64)
        self.requests += len(prompt)
        self.prompt_tokens += int(prompt.sum(dtype=np.int64))
        for model, limit in self.limits.items():
            over = prompt > limit
            counts = self._n[model]
            counts[0] += int(over.sum())
            counts[1] += int((total > limit).sum())
            counts[2] += int(prompt[over].sum(dtype=np.int64))

    def summary(self) -> list[dict]:
        """One row per model, longest limit first: counts and shares of requests whose prompt exceeds the
        limit (refused by vLLM), whose prompt + output does (generation cut short), and their prompt tokens."""
        n, tokens = self.requests, self.prompt_tokens
        rows = []
        for model, limit in sorted(self.limits.items(), key=lambda kv: (-kv[1], kv[0])):
            over, total_over, over_tokens = self._n[model]
            rows.append({
                "model": model,
                "max_model_len": limit,
                "prompt_over": over,
                "prompt_over_share": over / n if n else 0.0,
                "total_over": total_over,
                "total_over_share": total_over / n if n else 0.0,
                "prompt_tokens_over_share": over_tokens / tokens if tokens else 0.0,
            })
            rows[-1].update({f"{k[:-6]}_percent": round(100 * rows[-1][k], 4) for k in
                             ("prompt_over_share", "total_over_share", "prompt_tokens_over_share")})
        return rows
