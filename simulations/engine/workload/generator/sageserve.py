"""Kind ``sageserve``: multi-day traffic by region, model and tier (SageServe-like, see docs/traces.md).

Moved unchanged from ``planner/ingest/synth.py`` (one workload generator); the same spec and seed
give the same frame, byte for byte.


Each (region, model, tier) stream is a non-homogeneous Poisson process whose rate is

    mean_rate * shape(t) * noise(t) * bursts(t)

where ``mean_rate`` = total_rps x tier share x region weight x model weight x override factor
(renormalised inside each tier so the tier shares hold), ``shape`` = diurnal cosine x weekday
factor (weekend dip) x compound growth, scaled to mean 1 over the horizon; ``noise`` is a
mean-one log-normal step every ``noise_step_s``; ``bursts`` multiply the rate for a while at
random times. Token lengths come from log-normal distributions or are drawn jointly (input with
its output) from a real trace's empirical distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulations.engine.scenario.config import TIERS, ScenarioError
from simulations.engine.workload.generator.errors import GeneratorError
from simulations.engine.workload.generator.sageserve_spec import SpecInputError, validate_synth_spec
from simulations.engine.workload.traceio import read_parquet_columns

DAY = 86400.0
TOP_KEYS = {
    "kind",
    "name",
    "description",
    "seed",
    "days",
    "start_weekday",
    "step_s",
    "noise_step_s",
    "total_rps",
    "regions",
    "models",
    "tiers",
    "overrides",
    "tokens",
    "growth_per_day",
}
TIER_KEYS = {"share", "diurnal", "weekday_factors", "weekend_factor", "noise", "bursts", "growth_per_day", "deadline_s"}
DEFAULT_TOKENS = {
    "input": {"lognormal": {"median": 1000, "sigma": 1.0}},
    "output": {"lognormal": {"median": 200, "sigma": 0.9}},
}
MAX_REQUESTS = 50_000_000


SpecError = GeneratorError  # the name this code always used


def _num(value: Any, where: str, *, low: float | None = None, high: float | None = None) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{where} is {value!r}, not a number", hint="use a number") from None
    if not math.isfinite(x) or (low is not None and x < low) or (high is not None and x > high):
        bounds = f"between {low} and {high}" if high is not None else f">= {low}"
        raise SpecError(f"{where} is {value!r}; it must be {bounds}", hint="fix the value in the spec")
    return x


def _weights(spec: Any, where: str) -> dict[str, float]:
    if isinstance(spec, list):
        spec = {str(name): 1.0 for name in spec}
    if not isinstance(spec, dict) or not spec:
        raise SpecError(f"{where} must be a non-empty object of name: weight", hint='e.g. {"us-east": 2, "us-west": 1}')
    weights = {str(k): _num(v, f"{where}.{k}", low=0.0) for k, v in spec.items()}
    total = sum(weights.values())
    if total <= 0:
        raise SpecError(f"{where} weights sum to zero", hint="give at least one positive weight")
    return {k: v / total for k, v in weights.items()}


@dataclass(frozen=True)
class TierShape:
    share: float
    amplitude: float
    peak_hour: float
    weekday_factors: tuple[float, ...]
    noise: float
    burst_per_day: float
    burst_multiplier: float
    burst_duration_s: float
    growth_per_day: float
    deadline_s: float | None


def _tier(name: str, spec: dict, default_growth: float) -> TierShape:
    where = f"tiers.{name}"
    if not isinstance(spec, dict):
        raise SpecError(f"{where} must be an object", hint='e.g. {"share": 0.45, "diurnal": {"amplitude": 0.8}}')
    unknown = set(spec) - TIER_KEYS
    if unknown:
        raise SpecError(f"{where} has unknown key(s) {sorted(unknown)}", hint=f"known keys: {sorted(TIER_KEYS)}")
    diurnal = spec.get("diurnal") or {}
    weekend = _num(spec.get("weekend_factor", 1.0), f"{where}.weekend_factor", low=0.0)
    factors = spec.get("weekday_factors")
    if factors is None:
        factors = [1, 1, 1, 1, 1, weekend, weekend]
    if not isinstance(factors, list) or len(factors) != 7:
        raise SpecError(f"{where}.weekday_factors must list 7 numbers (Monday first)", hint="e.g. [1,1,1,1,1,0.4,0.4]")
    bursts = spec.get("bursts") or {}
    deadline = spec.get("deadline_s")
    return TierShape(
        share=_num(spec.get("share", 1.0), f"{where}.share", low=0.0),
        amplitude=_num(diurnal.get("amplitude", 0.0), f"{where}.diurnal.amplitude", low=0.0, high=1.0),
        peak_hour=_num(diurnal.get("peak_hour", 14.0), f"{where}.diurnal.peak_hour", low=0.0, high=24.0),
        weekday_factors=tuple(_num(f, f"{where}.weekday_factors[{i}]", low=0.0) for i, f in enumerate(factors)),
        noise=_num(spec.get("noise", 0.0), f"{where}.noise", low=0.0, high=3.0),
        burst_per_day=_num(bursts.get("per_day", 0.0), f"{where}.bursts.per_day", low=0.0),
        burst_multiplier=_num(bursts.get("multiplier", 1.0), f"{where}.bursts.multiplier", low=0.0),
        burst_duration_s=_num(bursts.get("duration_s", 600.0), f"{where}.bursts.duration_s", low=0.0),
        growth_per_day=_num(spec.get("growth_per_day", default_growth), f"{where}.growth_per_day", low=-0.99),
        deadline_s=None if deadline is None else _num(deadline, f"{where}.deadline_s", low=0.0),
    )


class _TokenSource:
    """Resolves the token distribution of a stream: (model, tier) > model > tier > default."""

    def __init__(self, spec: Any) -> None:
        spec = spec or {}
        if not isinstance(spec, dict):
            raise SpecError("tokens must be an object", hint='e.g. {"default": {"input": {...}, "output": {...}}}')
        unknown = set(spec) - {"default", "by_model", "by_tier", "by_model_tier", "empirical", "input", "output"}
        if unknown:
            raise SpecError(
                f"tokens has unknown key(s) {sorted(unknown)}",
                hint="use default, by_model, by_tier, by_model_tier or empirical",
            )
        base = {k: spec[k] for k in ("input", "output", "empirical") if k in spec}
        self.default = spec.get("default") or base or DEFAULT_TOKENS
        self.by_model = spec.get("by_model") or {}
        self.by_tier = spec.get("by_tier") or {}
        self.by_model_tier = spec.get("by_model_tier") or {}
        self._empirical: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def pick(self, model: str, tier: str) -> dict:
        return (
            self.by_model_tier.get(f"{model}|{tier}")
            or self.by_model.get(model)
            or self.by_tier.get(tier)
            or self.default
        )

    def sample(self, dist: dict, n: int, rng: np.random.Generator, where: str) -> tuple[np.ndarray, np.ndarray]:
        if "empirical" in dist:
            inp, out = self._load(dist["empirical"], where)
            idx = rng.integers(0, len(inp), size=n)
            return inp[idx], out[idx]
        return (
            self._one(dist.get("input", DEFAULT_TOKENS["input"]), n, rng, f"{where}.input"),
            self._one(dist.get("output", DEFAULT_TOKENS["output"]), n, rng, f"{where}.output"),
        )

    def _one(self, d: dict, n: int, rng: np.random.Generator, where: str) -> np.ndarray:
        if not isinstance(d, dict):
            raise SpecError(f"{where} must be an object", hint='e.g. {"lognormal": {"median": 1000, "sigma": 1}}')
        lo = int(_num(d.get("min", 1), f"{where}.min", low=0))
        hi = int(_num(d.get("max", 128_000), f"{where}.max", low=lo))
        if "fixed" in d:
            values = np.full(n, _num(d["fixed"], f"{where}.fixed", low=0))
        elif "lognormal" in d:
            ln = d["lognormal"]
            median = _num(ln.get("median", 1000), f"{where}.lognormal.median", low=1e-9)
            sigma = _num(ln.get("sigma", 1.0), f"{where}.lognormal.sigma", low=0.0, high=5.0)
            values = median * np.exp(sigma * rng.standard_normal(n))
        else:
            raise SpecError(f"{where} names no distribution", hint='use {"lognormal": {...}} or {"fixed": N}')
        return np.clip(np.round(values), lo, hi).astype(np.int32)

    def _load(self, spec: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(spec, dict) and "input" in spec and "output" in spec:
            inp = np.asarray(spec["input"], dtype=np.int32)
            out = np.asarray(spec["output"], dtype=np.int32)
            if len(inp) != len(out) or not len(inp):
                raise SpecError(
                    f"{where}.empirical input and output must be equally long, non-empty lists",
                    hint="pairs are sampled together",
                )
            return inp, out
        path = spec.get("path") if isinstance(spec, dict) else spec
        if not path:
            raise SpecError(
                f"{where}.empirical needs a path to a normalised trace",
                hint='{"empirical": {"path": "trace.parquet"}} (the page fills in an uploaded trace)',
            )
        key = str(path)
        if key not in self._empirical:
            if not Path(path).exists():
                raise SpecError(f"{where}.empirical: {path} does not exist", hint="point at a normalised trace")
            frame = read_lengths(path)
            if not len(frame):
                raise SpecError(f"{where}.empirical: the trace is empty", hint="use a trace with requests")
            self._empirical[key] = (frame["input_tokens"].to_numpy(np.int32), frame["output_tokens"].to_numpy(np.int32))
        return self._empirical[key]


def read_lengths(path: str | Path) -> pd.DataFrame:
    """The ``input_tokens`` / ``output_tokens`` columns of a normalised trace (Parquet), read by the engine's
    trace reader (traceio)."""
    try:
        cols = read_parquet_columns(path, ("input_tokens", "output_tokens"))
    except ScenarioError as exc:
        raise SpecError(f"{path}: {exc.message}", hint="point at a normalised trace") from None
    return pd.DataFrame(cols)


def _shape(t: np.ndarray, tier: TierShape, start_weekday: int) -> np.ndarray:
    hours = (t / 3600.0) % 24.0
    diurnal = 1.0 + tier.amplitude * np.cos(2 * np.pi * (hours - tier.peak_hour) / 24.0)
    weekday = ((t // DAY).astype(np.int64) + start_weekday) % 7
    weekly = np.asarray(tier.weekday_factors)[weekday]
    growth = (1.0 + tier.growth_per_day) ** (t / DAY)
    return diurnal * weekly * growth


def validate_spec(spec: Any) -> dict:
    """The spec, checked by its schema (generator/sageserve_spec.py) before any work is done."""
    try:  # a path here was resolved by the CLI or the Django layer
        validate_synth_spec({k: v for k, v in spec.items() if k != "kind"} if isinstance(spec, dict) else spec,
                            allow_paths=True)
    except SpecInputError as exc:
        raise SpecError(f"{exc.where}: {exc.message}", hint=exc.hint or "see docs/traces.md") from None
    if not isinstance(spec, dict):
        raise SpecError("the spec must be a JSON object", hint="see fixtures/workloads/sageserve_day.json")
    unknown = set(spec) - TOP_KEYS
    if unknown:
        raise SpecError(f"the spec has unknown key(s) {sorted(unknown)}", hint=f"known keys: {sorted(TOP_KEYS)}")
    for key in ("regions", "models", "tiers"):
        if key not in spec:
            raise SpecError(f"the spec has no {key!r}", hint="see fixtures/workloads/sageserve_day.json")
    for tier in spec["tiers"] if isinstance(spec["tiers"], dict) else []:
        if tier not in TIERS:
            raise SpecError(f"tiers.{tier} is not a tier", hint="tiers are IW-F, IW-N and NIW")
    return spec


def _stream_rate(tier: TierShape, mean_rate: float, grid: tuple, *, start_weekday: int, noise_step: float,
                 days: float, rng_noise, rng_burst) -> np.ndarray:
    """One stream's request rate per step: the tier's shape scaled to ``mean_rate``, its noise and bursts.
    ``grid`` = (step starts, step widths, step midpoints)."""
    t_steps, widths, t_mid = grid
    horizon = days * DAY
    if tier.burst_per_day > 0:  # bursts add requests: take their expected share out of the base rate
        mean_rate /= 1.0 + tier.burst_per_day * min(tier.burst_duration_s, DAY) / DAY * (
            tier.burst_multiplier - 1.0
        )
    shape = _shape(t_mid, tier, start_weekday)
    mean_shape = float(np.average(shape, weights=widths))
    rate = mean_rate * shape / mean_shape if mean_shape > 0 else np.zeros_like(shape)
    if tier.noise > 0:
        n_noise = int(math.ceil(horizon / noise_step))
        z = rng_noise.standard_normal(n_noise)
        noise = np.exp(tier.noise * z - tier.noise**2 / 2)
        rate = rate * noise[(t_steps // noise_step).astype(np.int64)]
    if tier.burst_per_day > 0 and tier.burst_multiplier != 1.0:
        n_bursts = rng_burst.poisson(tier.burst_per_day * days)
        starts = rng_burst.uniform(0, horizon, size=n_bursts)
        for s in starts:
            inside = (t_mid >= s) & (t_mid < s + tier.burst_duration_s)
            rate = np.where(inside, rate * tier.burst_multiplier, rate)
    return rate


def synthesize(spec: dict, seed: int | None = None) -> pd.DataFrame:
    """Generate a normalised trace (DataFrame, sorted, first request at 0.0) from a spec dict."""
    spec = validate_spec(spec)
    seed = int(spec.get("seed", 0) if seed is None else seed)
    days = _num(spec.get("days", 1), "days", low=1 / 24, high=366)
    horizon = days * DAY
    step = _num(spec.get("step_s", 60), "step_s", low=1.0, high=3600)
    noise_step = _num(spec.get("noise_step_s", 900), "noise_step_s", low=step)
    total_rps = _num(spec.get("total_rps", 1.0), "total_rps", low=0.0)
    start_weekday = int(_num(spec.get("start_weekday", 0), "start_weekday", low=0, high=6))
    regions = _weights(spec["regions"], "regions")
    models = _weights(spec["models"], "models")
    if not isinstance(spec["tiers"], dict) or not spec["tiers"]:
        raise SpecError(
            "tiers must be a non-empty object", hint='e.g. {"IW-F": {"share": 0.45}, "NIW": {"share": 0.28}}'
        )
    default_growth = _num(spec.get("growth_per_day", 0.0), "growth_per_day", low=-0.99)
    tiers = {name: _tier(name, t, default_growth) for name, t in spec["tiers"].items()}
    share_total = sum(t.share for t in tiers.values())
    if share_total <= 0:
        raise SpecError("tier shares sum to zero", hint="give each tier a share")
    expected = total_rps * horizon
    if expected > MAX_REQUESTS:
        raise SpecError(
            f"the spec asks for about {expected:,.0f} requests (limit {MAX_REQUESTS:,})", hint="lower total_rps or days"
        )
    factors = _overrides(spec.get("overrides") or [], regions, models, tiers)
    tokens = _TokenSource(spec.get("tokens"))

    n_steps = int(math.ceil(horizon / step))
    t_steps = np.arange(n_steps) * step
    widths = np.minimum(step, horizon - t_steps)
    t_mid = t_steps + widths / 2
    streams = [(r, m, tr) for tr in tiers for r in regions for m in models]
    children = np.random.SeedSequence(seed).spawn(len(streams))
    frames = []
    deadlines = any(t.deadline_s is not None for t in tiers.values())
    for (region, model, tier_name), child in zip(streams, children, strict=True):
        tier = tiers[tier_name]
        # Within a tier, region x model x override weights are renormalised so the tier share holds.
        in_tier = sum(regions[r] * models[m] * factors.get((r, m, tier_name), 1.0) for r in regions for m in models)
        weight = regions[region] * models[model] * factors.get((region, model, tier_name), 1.0)
        mean_rate = total_rps * tier.share / share_total * (weight / in_tier if in_tier > 0 else 0.0)
        if mean_rate <= 0:
            continue
        rng_count, rng_noise, rng_burst, rng_tokens, rng_place = (np.random.default_rng(s) for s in child.spawn(5))
        rate = _stream_rate(tier, mean_rate, (t_steps, widths, t_mid), start_weekday=start_weekday,
                            noise_step=noise_step, days=days, rng_noise=rng_noise, rng_burst=rng_burst)
        counts = rng_count.poisson(rate * widths)
        n = int(counts.sum())
        if n == 0:
            continue
        arrival = np.repeat(t_steps, counts) + rng_place.random(n) * np.repeat(widths, counts)
        arrival.sort()
        inp, out = tokens.sample(tokens.pick(model, tier_name), n, rng_tokens, f"tokens[{model}|{tier_name}]")
        frame = pd.DataFrame(
            {
                "arrival_s": arrival,
                "input_tokens": inp.astype(np.int32),
                "output_tokens": out.astype(np.int32),
                "region": region,
                "model": model,
                "tier": tier_name,
            }
        )
        if deadlines:
            frame["deadline_s"] = arrival + tier.deadline_s if tier.deadline_s is not None else np.nan
        frames.append(frame)
    if not frames:
        raise SpecError("the spec generates no requests", hint="raise total_rps or days")
    result = pd.concat(frames, ignore_index=True).sort_values(["arrival_s"], kind="stable", ignore_index=True)
    offset = float(result["arrival_s"].iloc[0])
    result["arrival_s"] -= offset
    if deadlines:
        result["deadline_s"] -= offset
    for name in ("region", "model", "tier"):
        result[name] = result[name].astype("category")
    result.attrs["synth"] = {"seed": seed, "days": days, "start_weekday": start_weekday, "offset_s": offset}
    return result


def _overrides(items: list, regions: dict, models: dict, tiers: dict) -> dict:
    if not isinstance(items, list):
        raise SpecError("overrides must be a list", hint='e.g. [{"region": "us-east", "model": "a", "factor": 2}]')
    factors: dict = {}
    for i, item in enumerate(items):
        where = f"overrides[{i}]"
        if not isinstance(item, dict) or "factor" not in item:
            raise SpecError(f"{where} must be an object with a factor", hint='{"region": ..., "factor": 2.0}')
        unknown = set(item) - {"region", "model", "tier", "factor"}
        if unknown:
            raise SpecError(f"{where} has unknown key(s) {sorted(unknown)}", hint="use region, model, tier, factor")
        for key, known in (("region", regions), ("model", models), ("tier", tiers)):
            if key in item and item[key] not in known:
                raise SpecError(
                    f"{where}.{key} {item[key]!r} is not in the spec's {key}s", hint=f"one of {sorted(known)}"
                )
        factor = _num(item["factor"], f"{where}.factor", low=0.0)
        for r in regions:
            for m in models:
                for t in tiers:
                    if item.get("region", r) == r and item.get("model", m) == m and item.get("tier", t) == t:
                        factors[(r, m, t)] = factors.get((r, m, t), 1.0) * factor
    return factors
