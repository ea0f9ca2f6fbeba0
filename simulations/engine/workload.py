"""The request stream, held as numpy arrays (one row per request, sorted by arrival).

Readers for the normalised trace contract (Parquet) and for raw CSV / JSONL, plus a small
deterministic synthetic generator (diurnal, multi-region, multi-model, three tiers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from simulations.engine.config import TIER_INDEX, TIERS, ScenarioError


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
    # optional request attributes (issue 11 item 1), one value per request; None when the trace has none
    predicted_output_tokens: np.ndarray | None = None  # int64, filled by a predictor from the request alone
    ttft_slo_s: np.ndarray | None = None  # float64 per-request TTFT target (NaN = the tier's)
    tpot_slo_s: np.ndarray | None = None  # float64 per-request ITL/TPOT target (NaN = the tier's)
    class_id: np.ndarray | None = None  # int32 class or service id

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    @property
    def duration_s(self) -> float:
        return float(self.arrival_s[-1]) if len(self) else 0.0

    @classmethod
    def from_frame(cls, df: pd.DataFrame, *, rate_scale: float = 1.0, default_model: str | None = None,
                   default_region: str | None = None) -> Workload:
        """Build from a frame with the normalised-trace columns (missing optional ones get defaults)."""
        for col in ("arrival_s", "input_tokens", "output_tokens"):
            if col not in df.columns:
                raise ScenarioError(f"workload.{col}", f"the trace has no {col!r} column")
        df = df.sort_values("arrival_s", kind="stable")
        n = len(df)
        arrival = df["arrival_s"].to_numpy(dtype=np.float64)
        if n:
            arrival = arrival - arrival[0]
        if rate_scale != 1.0:
            arrival = arrival / float(rate_scale)

        def cat(col, default):
            if col in df.columns:
                values = df[col].astype(str).to_numpy()
            else:
                values = np.full(n, default, dtype=object)
            names, codes = np.unique(values, return_inverse=True)
            return [str(x) for x in names], codes.astype(np.int32)

        model_names, model = cat("model", default_model or "default")
        if default_model and "model" not in df.columns:
            model_names = [default_model]
        region_names, region = cat("region", default_region or "region-1")
        tiers = df["tier"].astype(str).to_numpy() if "tier" in df.columns else np.full(n, "IW-F", dtype=object)
        bad = ~np.isin(tiers, np.array(TIERS, dtype=object))
        if bad.any():
            raise ScenarioError("workload.tier", f"unknown tier {tiers[bad][0]!r}; use one of {list(TIERS)}")
        tier = np.zeros(n, dtype=np.int8)
        for name, idx in TIER_INDEX.items():
            tier[tiers == name] = idx
        deadline = None
        if "deadline_s" in df.columns:
            deadline = df["deadline_s"].to_numpy(dtype=np.float64)
            if rate_scale != 1.0:
                deadline = deadline / float(rate_scale)
        return cls(
            arrival_s=arrival,
            input_tokens=np.maximum(df["input_tokens"].to_numpy(dtype=np.int64), 1),
            output_tokens=np.maximum(df["output_tokens"].to_numpy(dtype=np.int64), 1),
            tier=tier, model=model, region=region, model_names=model_names, region_names=region_names,
            deadline_s=deadline,
            **_request_attributes(df),
        )

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


def _request_attributes(df: pd.DataFrame) -> dict:
    """The optional per-request columns of a normalised trace (predicted_output_tokens, ttft_slo_s, tpot_slo_s,
    class_id) as arrays, for those present."""
    out = {}
    for col, dtype in (("predicted_output_tokens", np.int64), ("ttft_slo_s", np.float64), ("tpot_slo_s", np.float64),
                       ("class_id", np.int32)):
        if col in df.columns:
            try:
                out[col] = df[col].to_numpy(dtype=dtype)
            except (TypeError, ValueError):
                raise ScenarioError(f"workload.{col}", f"the trace's {col!r} column must be numeric") from None
    return out


def read_trace_file(path: str | Path) -> pd.DataFrame:
    """Read a trace file into normalised columns: Parquet (contract), CSV (Azure style or normalised), JSONL."""
    path = Path(path)
    if not path.exists():
        raise ScenarioError("workload.trace_path", f"file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            from planner.ingest.normalised import read_trace  # type: ignore

            return read_trace(path)
        except ImportError:
            return pd.read_parquet(path)
    if suffix in (".jsonl", ".json"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        df = pd.DataFrame(rows)
        if "timestamp" in df.columns:  # Mooncake: ms from start
            df = df.rename(columns={"input_length": "input_tokens", "output_length": "output_tokens"})
            df["arrival_s"] = df["timestamp"].astype(float) / 1000.0
        return df
    if suffix == ".csv":
        df = pd.read_csv(path)
        if "TIMESTAMP" in df.columns:  # Azure LLM inference trace
            ts = pd.to_datetime(df["TIMESTAMP"].astype(str).str.strip(), format="mixed", utc=True)
            out = pd.DataFrame({
                "arrival_s": (ts - ts.min()).dt.total_seconds().to_numpy(),
                "input_tokens": df["ContextTokens"].astype(np.int64),
                "output_tokens": df["GeneratedTokens"].astype(np.int64),
            })
            return out
        return df
    raise ScenarioError("workload.trace_path", f"unsupported file type {suffix!r}; use .parquet, .csv or .jsonl")


def synthesise(spec: dict, *, seed: int, model_names: list[str], region_names: list[str]) -> Workload:
    """A deterministic synthetic workload: Poisson arrivals with a diurnal rate, per (region, model).

    spec keys: duration_s (86400), total_requests (or rps), diurnal_amplitude (0.6, peak at 14:00),
    tier_mix {"IW-F": .5, "IW-N": .25, "NIW": .25}, model_weights / region_weights (lists or dicts),
    input_tokens {"mean": 1024, "sigma": 1.0, "max": 8192} (log-normal), output_tokens likewise,
    burst {"at_s", "duration_s", "factor"} (optional).
    """
    ss = np.random.SeedSequence(seed)
    rng = np.random.default_rng(ss)
    duration = float(spec.get("duration_s", 86400.0))
    if "total_requests" in spec:
        total = int(spec["total_requests"])
    else:
        total = int(float(spec.get("rps", 10.0)) * duration)
    if total <= 0 or duration <= 0:
        raise ScenarioError("workload.synthetic", "needs total_requests (or rps) > 0 and duration_s > 0")
    amp = float(spec.get("diurnal_amplitude", 0.6))
    peak_h = float(spec.get("peak_hour", 14.0))

    def weights(key, names):
        w = spec.get(key)
        if w is None:
            return np.full(len(names), 1.0 / len(names))
        if isinstance(w, dict):
            w = [float(w.get(n, 0.0)) for n in names]
        w = np.asarray(w, dtype=float)
        if w.shape[0] != len(names) or w.sum() <= 0:
            raise ScenarioError(f"workload.synthetic.{key}", f"needs {len(names)} non-negative weights")
        return w / w.sum()

    # Arrivals: inverse-CDF sampling of a non-homogeneous Poisson process (sorted uniforms).
    grid = np.linspace(0.0, duration, 2049)
    rate = 1.0 + amp * np.cos(2 * np.pi * (grid / 86400.0 - peak_h / 24.0))
    burst = spec.get("burst")
    if burst:
        in_burst = (grid >= float(burst["at_s"])) & (grid < float(burst["at_s"]) + float(burst["duration_s"]))
        rate = np.where(in_burst, rate * float(burst.get("factor", 8.0)), rate)
    cdf = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2 * np.diff(grid))])
    cdf /= cdf[-1]
    u = np.sort(rng.random(total))
    arrival = np.interp(u, cdf, grid)
    arrival -= arrival[0]

    model = rng.choice(len(model_names), size=total, p=weights("model_weights", model_names)).astype(np.int32)
    region = rng.choice(len(region_names), size=total, p=weights("region_weights", region_names)).astype(np.int32)
    mix = spec.get("tier_mix", {"IW-F": 0.5, "IW-N": 0.25, "NIW": 0.25})
    p = np.array([float(mix.get(t, 0.0)) for t in TIERS])
    if p.sum() <= 0:
        raise ScenarioError("workload.synthetic.tier_mix", "needs positive weights for IW-F, IW-N, NIW")
    tier = rng.choice(3, size=total, p=p / p.sum()).astype(np.int8)

    def lengths(key, mean, sigma, cap):
        d = spec.get(key, {})
        mu = float(d.get("mean", mean))
        s = float(d.get("sigma", sigma))
        hi = int(d.get("max", cap))
        x = rng.lognormal(np.log(mu) - s * s / 2, s, size=total)
        return np.clip(np.rint(x), 1, hi).astype(np.int64)

    return Workload(
        arrival_s=arrival, input_tokens=lengths("input_tokens", 1024, 1.0, 8192),
        output_tokens=lengths("output_tokens", 256, 1.0, 2048), tier=tier, model=model, region=region,
        model_names=list(model_names), region_names=list(region_names),
    )
