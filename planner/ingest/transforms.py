"""Seeded, streaming transforms applied while normalising: assign or split region/model/tier,
scale time, multiply the request rate.

All randomness comes from one ``numpy.random.SeedSequence(seed)`` with a child generator per
component, and every generator draws one value per row in file order, so the result does not
depend on how the file was chunked.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from planner.ingest.errors import TraceFormatError
from planner.ingest.formats import TIERS
from planner.ingest.limits import MAX_RATE, MAX_TIME_SCALE, MIN_RATE, MIN_TIME_SCALE

DEFAULTS = {"region": "region-1", "model": "default", "tier": "IW-F"}
GROUP_COLUMNS = ("region", "model", "tier")


@dataclass(frozen=True)
class Assignment:
    """How one of region/model/tier is set.

    kind "keep": use the file's column (or the default); "fixed": one value; "split": random by
    ratios; "column": copy a source column, optionally through a value map.
    """

    kind: str = "keep"
    value: str | None = None
    ratios: tuple[tuple[str, float], ...] = ()
    column: str | None = None
    mapping: tuple[tuple[str, str], ...] = ()
    default: str | None = None

    def as_json(self) -> Any:
        if self.kind == "keep":
            return None
        if self.kind == "fixed":
            return self.value
        if self.kind == "split":
            return dict(self.ratios)
        out: dict[str, Any] = {"column": self.column}
        if self.mapping:
            out["map"] = dict(self.mapping)
        if self.default is not None:
            out["default"] = self.default
        return out


def parse_assignment(spec: Any, target: str) -> Assignment:
    """Accepts None, "value", {"a": 0.7, "b": 0.3}, {"column": "Log Type", "map": {...}, "default": "NIW"},
    or the CLI text forms "value", "a:0.7,b:0.3" and a JSON object."""
    where = f"the {target} assignment"
    if spec is None or spec == "":
        return Assignment()
    if isinstance(spec, str):
        text = spec.strip()
        if text.startswith("{"):
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise TraceFormatError(
                    f"{where} is not valid JSON ({exc.msg})", hint='e.g. {"east": 0.6, "west": 0.4}'
                ) from None
        elif ":" in text and "," in text or text.count(":") == 1 and _is_ratio(text.split(":")[1]):
            ratios = {}
            for part in text.split(","):
                name, _, weight = part.partition(":")
                ratios[name.strip()] = weight.strip()
            spec = ratios
        else:
            return _fixed(text, target)
    if isinstance(spec, dict) and "column" in spec:
        unknown = set(spec) - {"column", "map", "default"}
        if unknown:
            raise TraceFormatError(
                f"{where} has unknown key(s) {sorted(unknown)}",
                hint='use {"column": NAME, "map": {FROM: TO}, "default": VALUE}',
            )
        mapping = spec.get("map") or {}
        if not isinstance(mapping, dict):
            raise TraceFormatError(f"{where}: map must be an object", hint='e.g. "map": {"API log": "NIW"}')
        if target == "tier":
            for value in list(mapping.values()) + ([spec["default"]] if spec.get("default") else []):
                _check_tier(value, where)
        return Assignment(
            kind="column",
            column=str(spec["column"]),
            mapping=tuple((str(k), str(v)) for k, v in mapping.items()),
            default=None if spec.get("default") is None else str(spec["default"]),
        )
    if isinstance(spec, dict):
        if not spec:
            raise TraceFormatError(f"{where} has no values", hint='e.g. {"east": 0.6, "west": 0.4}')
        ratios = []
        for name, weight in spec.items():
            try:
                w = float(weight)
            except (TypeError, ValueError):
                raise TraceFormatError(
                    f"{where}: the ratio for {name!r} is {weight!r}, not a number",
                    hint="ratios are non-negative numbers, e.g. east:0.6,west:0.4",
                ) from None
            if not math.isfinite(w) or w < 0:
                raise TraceFormatError(
                    f"{where}: the ratio for {name!r} is {weight!r}", hint="ratios are non-negative numbers"
                )
            if target == "tier":
                name = _check_tier(name, where)
            ratios.append((str(name), w))
        total = sum(w for _, w in ratios)
        if total <= 0:
            raise TraceFormatError(f"{where}: the ratios sum to zero", hint="give at least one positive ratio")
        if len(ratios) == 1:
            return _fixed(ratios[0][0], target)
        return Assignment(kind="split", ratios=tuple((n, w / total) for n, w in ratios))
    raise TraceFormatError(
        f"{where} must be a value, ratios or a column mapping, not {type(spec).__name__}",
        hint='e.g. "east", "east:0.6,west:0.4" or {"column": "Model"}',
    )


def _is_ratio(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _check_tier(value: str, where: str) -> str:
    tier = str(value).strip().upper().replace("_", "-")
    if tier not in TIERS:
        raise TraceFormatError(f"{where}: {value!r} is not a tier", hint="tiers are IW-F, IW-N and NIW")
    return tier


def _fixed(value: str, target: str) -> Assignment:
    if target == "tier":
        value = _check_tier(value, f"the {target} assignment")
    if not value:
        raise TraceFormatError(f"the {target} value is empty", hint=f"give a {target} name")
    return Assignment(kind="fixed", value=value)


@dataclass(frozen=True)
class TransformOptions:
    region: Assignment = field(default_factory=Assignment)
    model: Assignment = field(default_factory=Assignment)
    tier: Assignment = field(default_factory=Assignment)
    time_scale: float = 1.0  # multiply every time by this: 0.5 compresses the trace to half its span
    rate: float = 1.0  # < 1 thins requests, > 1 replicates them with jitter
    jitter_s: float = 1.0  # replicas arrive uniformly within [0, jitter_s) after their original
    seed: int = 0

    @classmethod
    def from_dict(cls, data: dict | None) -> TransformOptions:
        data = dict(data or {})
        unknown = set(data) - {"region", "model", "tier", "time_scale", "rate", "jitter_s", "seed"}
        if unknown:
            raise TraceFormatError(
                f"unknown option(s) {sorted(unknown)}",
                hint="options are region, model, tier, time_scale, rate, jitter_s, seed",
            )
        out = {}
        for name in ("region", "model", "tier"):
            out[name] = parse_assignment(data.get(name), name)
        for name, default, low in (("time_scale", 1.0, MIN_TIME_SCALE), ("rate", 1.0, MIN_RATE),
                                   ("jitter_s", 1.0, -1e-12)):
            raw = data.get(name)
            raw = default if raw in (None, "") else raw
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise TraceFormatError(
                    f"{name} is {raw!r}, not a number", hint=f"{name} is a positive number"
                ) from None
            if not math.isfinite(value) or value < low:
                raise TraceFormatError(
                    f"{name} must be at least {max(low, 0):g} (got {raw!r})",
                    hint="e.g. time_scale 0.5 halves the span; rate 2 doubles the requests",
                )
            high = {"time_scale": MAX_TIME_SCALE, "rate": MAX_RATE, "jitter_s": 86400.0}[name]
            if value > high:
                raise TraceFormatError(f"{name} must be at most {high:g} (got {raw!r})",
                                       hint="a larger multiplier makes an unbounded trace from a small file")
            out[name] = value
        seed = data.get("seed")
        try:
            out["seed"] = int(seed) if seed not in (None, "") else 0
        except (TypeError, ValueError):
            raise TraceFormatError(f"seed is {seed!r}, not an integer", hint="seed is a whole number") from None
        if not 0 <= out["seed"] < 2**63:
            raise TraceFormatError("seed must be >= 0 and below 2^63", hint="use a non-negative integer")
        return cls(**out)

    def as_dict(self) -> dict:
        d = asdict(self)
        for name in ("region", "model", "tier"):
            d[name] = getattr(self, name).as_json()
        return d

    def source_columns(self) -> list[str]:
        return sorted({a.column for a in (self.region, self.model, self.tier) if a.kind == "column" and a.column})

    @property
    def is_identity(self) -> bool:
        return self.as_dict() == TransformOptions(seed=self.seed).as_dict()


class Transformer:
    """Applies the options to sorted chunks of ``t_ns``-framed requests, returning normalised frames
    (``arrival_s`` relative to ``t0_ns``, before the final shift to the first kept request)."""

    def __init__(self, options: TransformOptions, t0_ns: int, columns: set[str]) -> None:
        self.opt = options
        self.t0 = int(t0_ns)
        self.columns = columns
        children = np.random.SeedSequence(options.seed).spawn(5)
        self.rng = {
            name: np.random.default_rng(s)
            for name, s in zip(("region", "model", "tier", "rate", "jitter"), children, strict=True)
        }
        self._carry: pd.DataFrame | None = None

    def _assign(self, frame: pd.DataFrame, target: str) -> np.ndarray:
        a: Assignment = getattr(self.opt, target)
        n = len(frame)
        if a.kind == "fixed":
            return pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[a.value])
        if a.kind == "split":
            names = [r[0] for r in a.ratios]
            cum = np.cumsum([r[1] for r in a.ratios])
            cum[-1] = 1.0
            u = self.rng[target].random(n)
            codes = np.searchsorted(cum, u, side="right").clip(0, len(names) - 1)
            return (
                pd.Categorical.from_codes(codes, categories=pd.Index(names).unique())
                if len(set(names)) == len(names)
                else pd.Categorical(np.asarray(names, dtype=object)[codes])
            )
        if a.kind == "column":
            src = frame[f"src:{a.column}"].astype(object)
            mapping = dict(a.mapping)
            if mapping:
                mapped = src.map(mapping)
                fallback = a.default if a.default is not None else None
                mapped = mapped.where(mapped.notna(), fallback if fallback is not None else src)
            else:
                mapped = src
            values = mapped.astype(object).to_numpy()
            empty = pd.isna(values) | (values == "")
            if empty.any():
                values[empty] = a.default or DEFAULTS[target]
            if target == "tier":
                norm = pd.Series(values).astype(str).str.upper().str.replace("_", "-", regex=False)
                bad = ~norm.isin(TIERS)
                if bad.any():
                    raise TraceFormatError(
                        f"the tier mapping gives {values[bad.to_numpy()][0]!r}, which is not a tier",
                        column=a.column,
                        hint='map every value of the column to IW-F, IW-N or NIW, or give "default"',
                    )
                values = norm.to_numpy(dtype=object)
            return pd.Categorical(values)
        if target in frame.columns:
            return pd.Categorical(frame[target].to_numpy(dtype=object))
        return pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[DEFAULTS[target]])

    def apply(self, frame: pd.DataFrame, *, last: bool = False) -> pd.DataFrame:
        """Transform one sorted chunk; with replication, rows that could still be overtaken are held
        back until the next chunk (or ``last``)."""
        out = pd.DataFrame(
            {
                "arrival_s": (frame["t_ns"].to_numpy(dtype=np.int64) - self.t0) / 1e9 * self.opt.time_scale,
                "input_tokens": frame["input_tokens"].to_numpy(dtype=np.int32),
                "output_tokens": frame["output_tokens"].to_numpy(dtype=np.int32),
            }
        )
        for target in GROUP_COLUMNS:
            out[target] = self._assign(frame, target)
        if "deadline_ns" in frame.columns:
            d = frame["deadline_ns"].to_numpy(dtype=np.int64)
            from planner.ingest.formats import NO_DEADLINE

            out["deadline_s"] = np.where(d == NO_DEADLINE, np.nan, (d - self.t0) / 1e9 * self.opt.time_scale)
        for name in ("session_id", "failed", "hash_ids"):
            if name in frame.columns:
                out[name] = frame[name].to_numpy()
        horizon = out["arrival_s"].iloc[-1] if len(out) else -np.inf
        out = self._rate(out)
        if self.opt.rate <= 1.0:
            return out
        if self._carry is not None and len(self._carry):
            out = pd.concat([self._carry, out], ignore_index=True)
        out = out.sort_values("arrival_s", kind="stable", ignore_index=True)
        if last:
            self._carry = None
            return out
        # Later chunks only hold originals at >= horizon, and replicas never arrive before their original.
        ready = out["arrival_s"].to_numpy() <= horizon
        self._carry = out[~ready].reset_index(drop=True)
        return out[ready].reset_index(drop=True)

    def flush(self) -> pd.DataFrame | None:
        carry, self._carry = self._carry, None
        return carry

    def _rate(self, out: pd.DataFrame) -> pd.DataFrame:
        rate = self.opt.rate
        if rate == 1.0 or not len(out):
            return out
        u = self.rng["rate"].random(len(out))
        whole = math.floor(rate)
        copies = np.full(len(out), whole, dtype=np.int64) + (u < rate - whole)
        if rate < 1.0:
            return out[copies > 0].reset_index(drop=True)
        idx = np.repeat(np.arange(len(out)), copies)
        rep = out.iloc[idx].reset_index(drop=True)
        # The first copy of each request is the original; the others get a forward jitter.
        starts = np.concatenate([[0], np.cumsum(copies)[:-1]])
        is_copy = np.ones(len(rep), dtype=bool)
        is_copy[starts[copies > 0]] = False
        jitter = self.rng["jitter"].random(int(is_copy.sum())) * self.opt.jitter_s
        arrival = rep["arrival_s"].to_numpy().copy()
        arrival[is_copy] += jitter
        rep["arrival_s"] = arrival
        if "deadline_s" in rep.columns:
            dl = rep["deadline_s"].to_numpy().copy()
            dl[is_copy] += jitter
            rep["deadline_s"] = dl
        if "session_id" in rep.columns:
            sid = rep["session_id"].to_numpy(dtype=object).copy()
            copy_no = np.arange(len(rep)) - np.repeat(starts, copies)
            has = is_copy & (sid != "")
            sid[has] = [f"{s}#{k}" for s, k in zip(sid[has], copy_no[has], strict=True)]
            rep["session_id"] = sid
        return rep
