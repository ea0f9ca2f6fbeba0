"""The request stream, held as numpy arrays (one row per request, sorted by arrival).

Readers for the normalised trace contract (Parquet) and for raw CSV / JSONL, plus a small
deterministic synthetic generator (diurnal, multi-region, multi-model, three tiers).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: pandas loads lazily, where a frame is built or read
    import pandas as pd

from simulations.engine.scenario.config import TIER_INDEX, TIERS, ScenarioError


@dataclass
class Workload:
    arrival_s: np.ndarray  # float64, sorted
    input_tokens: np.ndarray  # int64
    output_tokens: np.ndarray  # int64 (>= 1 after normalisation)
    tier: np.ndarray  # int8 index into TIERS
    model: np.ndarray  # int32 index into model_names
    region: np.ndarray  # int32 index into region_names (origin)
    model_names: list[str]
    region_names: list[str]
    deadline_s: np.ndarray | None = None  # absolute, NaN = none
    # optional request attributes, one value per request; None when the trace has none
    predicted_output_tokens: np.ndarray | None = None  # int64, filled by a predictor from the request alone
    ttft_slo_s: np.ndarray | None = None  # float64 per-request TTFT target (NaN = the tier's)
    tpot_slo_s: np.ndarray | None = None  # float64 per-request ITL/TPOT target (NaN = the tier's)
    class_id: np.ndarray | None = None  # int32 class or service id
    # prompt prefix ids for prefix caching (kvcache.py), CSR: request i's ids are prefix_ids[prefix_off[i]:
    # prefix_off[i + 1]], each a chained hash of up to 512 prompt tokens (a Mooncake trace's ``hash_ids``)
    prefix_off: np.ndarray | None = None  # int64, n + 1
    prefix_ids: np.ndarray | None = None  # int64
    prefix_chunk_tokens: int = 512  # prompt tokens one prefix id stands for (16 x 1..63: one block to 63 blocks)

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    @property
    def duration_s(self) -> float:
        return float(self.arrival_s[-1]) if len(self) else 0.0

    @classmethod
    def from_frame(cls, df: pd.DataFrame, *, rate_scale: float = 1.0, default_model: str | None = None,
                   default_region: str | None = None) -> Workload:
        """Build from a frame with the normalised-trace columns (missing optional ones get defaults): the frame's
        columns as arrays (``frame_columns``), then ``from_arrays``."""
        return cls.from_arrays(cls.frame_columns(df), rate_scale=rate_scale, default_model=default_model,
                               default_region=default_region)

    @staticmethod
    def frame_columns(df: pd.DataFrame) -> dict:
        """A frame's normalised-trace columns as the arrays ``traceio.read_trace_arrays`` returns (labels as text)."""
        for col in ("arrival_s", "input_tokens", "output_tokens"):
            if col not in df.columns:
                raise ScenarioError(f"workload.{col}", f"the trace has no {col!r} column")
        return {col: (df[col].astype(str) if col in _LABEL_COLUMNS else df[col]).to_numpy()
                for col in df.columns if col in _KNOWN_COLUMNS}

    @classmethod
    def from_arrays(cls, cols: dict, *, rate_scale: float = 1.0, default_model: str | None = None,
                    default_region: str | None = None, default_tier: str = "IW-F") -> Workload:
        """``from_frame`` for the column arrays of ``traceio.read_trace_arrays`` (no pandas): same result."""
        order = np.argsort(cols["arrival_s"], kind="stable")
        n = len(order)
        arrival = np.asarray(cols["arrival_s"], dtype=np.float64)[order]
        if n:
            arrival = arrival - arrival[0]
        if rate_scale != 1.0:
            arrival = arrival / float(rate_scale)

        def cat(col, default):
            values = cols[col][order] if col in cols else np.full(n, default, dtype=object)
            names, codes = np.unique(values.astype(str) if col in cols else values, return_inverse=True)
            return [str(x) for x in names], codes.astype(np.int32)

        model_names, model = cat("model", default_model or "default")
        if default_model and "model" not in cols:
            model_names = [default_model]
        region_names, region = cat("region", default_region or "region-1")
        tiers = cols["tier"][order].astype(object) if "tier" in cols else np.full(n, default_tier, dtype=object)
        bad = ~np.isin(tiers, np.array(TIERS, dtype=object))
        if bad.any():
            raise ScenarioError("workload.tier", f"unknown tier {tiers[bad][0]!r}; use one of {list(TIERS)}")
        tier = np.zeros(n, dtype=np.int8)
        for name, idx in TIER_INDEX.items():
            tier[tiers == name] = idx
        extra = {k: v[order] for k, v in _request_attributes(cols).items()}
        if cols.get("hash_ids") is not None:
            extra["prefix_off"], extra["prefix_ids"] = prefix_csr([cols["hash_ids"][i] for i in order])
        deadline = None
        if "deadline_s" in cols:
            deadline = np.asarray(cols["deadline_s"], dtype=np.float64)[order]
            if rate_scale != 1.0:
                deadline = deadline / float(rate_scale)
        return cls(arrival_s=arrival,
                   input_tokens=np.maximum(np.asarray(cols["input_tokens"], dtype=np.int64)[order], 1),
                   output_tokens=np.maximum(np.asarray(cols["output_tokens"], dtype=np.int64)[order], 1),
                   tier=tier, model=model, region=region, model_names=model_names, region_names=region_names,
                   deadline_s=deadline, **extra)

    def to_frame(self):
        """The normalised-trace columns (names, not codes)."""
        import pandas as pd  # lazy: the engine path does not pay for pandas
        frame = pd.DataFrame({
            "arrival_s": self.arrival_s, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "region": pd.Categorical.from_codes(self.region, self.region_names),
            "model": pd.Categorical.from_codes(self.model, self.model_names),
            "tier": pd.Categorical.from_codes(self.tier.astype(np.int64), list(TIERS)),
        })
        if self.deadline_s is not None:
            frame["deadline_s"] = self.deadline_s
        return frame

    def remap(self, model_names: list[str], region_names: list[str]) -> Workload:
        """Re-index model/region codes onto the fleet's name lists (unknown names raise)."""
        def recode(codes, names, target, what):
            lookup = np.empty(len(names), dtype=np.int32)
            for i, name in enumerate(names):
                if name not in target:
                    if len(names) == 1 and len(target) >= 1 and name in ("default", "region-1"):
                        lookup[i] = 0
                        continue
                    raise ScenarioError(f"workload.{what}", f"trace {what} {name!r} has no endpoint in the fleet "
                                                            f"(fleet has {target})")
                lookup[i] = target.index(name)
            return lookup[codes] if len(codes) else codes

        return replace(
            self, model=recode(self.model, self.model_names, model_names, "model"),
            region=recode(self.region, self.region_names, region_names, "region"),
            model_names=list(model_names), region_names=list(region_names),
        )


def prefix_csr(lists) -> tuple[np.ndarray, np.ndarray]:
    """Per-request id lists (None or empty: no prefix) as the CSR pair (offsets, ids) of ``Workload.prefix_ids``."""
    lens = np.fromiter((0 if x is None else len(x) for x in lists), dtype=np.int64, count=len(lists))
    off = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    parts = [np.asarray(x, dtype=np.int64) for x in lists if x is not None and len(x)]
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return off, ids


def _request_attributes(cols: dict) -> dict:
    """The optional per-request columns of a normalised trace (predicted_output_tokens, ttft_slo_s, tpot_slo_s,
    class_id) as typed arrays, for those present."""
    out = {}
    for col, dtype in _ATTRIBUTE_COLUMNS:
        if col in cols:
            try:
                out[col] = np.asarray(cols[col], dtype=dtype)
            except (TypeError, ValueError):
                raise ScenarioError(f"workload.{col}", f"the trace's {col!r} column must be numeric") from None
    return out


_ATTRIBUTE_COLUMNS = (("predicted_output_tokens", np.int64), ("ttft_slo_s", np.float64), ("tpot_slo_s", np.float64),
                      ("class_id", np.int32))
_LABEL_COLUMNS = ("model", "region", "tier")
_KNOWN_COLUMNS = ("arrival_s", "input_tokens", "output_tokens", "deadline_s", "hash_ids", *_LABEL_COLUMNS,
                  *(c for c, _ in _ATTRIBUTE_COLUMNS))
