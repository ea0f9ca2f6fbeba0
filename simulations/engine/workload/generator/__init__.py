"""One workload generator: every synthetic request stream of the planner and the engine. Django-free.

    from simulations.engine.workload.generator import generate, generate_workload
    frame = generate({"kind": "gamma", "rate_rps": 5, "cv": 2, "duration_s": 600}, seed=1)   # normalised trace
    workload = generate_workload(spec, seed=1, model_names=[...], region_names=[...])       # engine arrays

Kinds (``kind`` key; docs/traces.md, "Workload generator"):

- ``sageserve``: multi-day, multi-region SageServe-like traffic (non-homogeneous Poisson per region x model x
  tier; the planner's synthesiser, default when a spec without ``kind`` goes to ``generate``);
- ``diurnal``: the engine's one-day generator (default for a scenario's ``workload.synthetic`` without kind);
- ``poisson``: Poisson at a fixed rate; ``gamma``: Gamma renewal with a target CV; ``batch``: N requests at t0;
- ``slinfer``: the SLINFER artefact's function traces, one model per function;
- ``mix``: several of the four above merged.

Lengths of the stream kinds: log-normal (given, or fitted to published percentiles), fixed, or resampled /
fitted from a trace (``lengths``). The two original kinds are unchanged: same spec and seed, same arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: pandas loads lazily, where a frame is built or read
    import pandas as pd

from simulations.engine.scenario.config import ScenarioError
from simulations.engine.workload.generator import diurnal
from simulations.engine.workload.generator.errors import GeneratorError
from simulations.engine.workload.workload import Workload

# the stream kinds' modules (pydantic) load on first use: the original kinds stay as cheap to import as before
STREAM_KINDS = ("poisson", "gamma", "batch", "slinfer", "mix")
MAX_REQUESTS = 50_000_000  # = sageserve.MAX_REQUESTS

KINDS = ("sageserve", "diurnal", *STREAM_KINDS)
__all__ = ["KINDS", "GeneratorError", "expected_requests", "find_paths", "generate", "generate_workload", "kind_of",
           "parse_spec", "validate"]


def parse_spec(spec: dict):
    """Validate a stream-kind spec (pydantic models in ``generator.spec``)."""
    from simulations.engine.workload.generator.spec import parse_spec as parse

    return parse(spec)


def validate(spec: object, *, allow_paths: bool = False, default: str = "sageserve"):
    """Check a spec of any kind once, before any work: ``sageserve`` by its schema (generator/sageserve_spec.py),
    the stream kinds by theirs (generator/spec.py). ``allow_paths=False`` (anything from the web or a scenario)
    refuses file paths (``lengths.empirical.path``, a SLINFER ``path``, ``tokens...empirical`` paths)."""
    kind = kind_of(spec, default)
    if kind == "diurnal":
        return spec  # the scenario schema's Synthetic model validates it
    if kind == "sageserve":
        from simulations.engine.workload.generator.sageserve_spec import (  # pydantic: lazy
            SpecInputError,
            validate_synth_spec,
        )

        try:
            return validate_synth_spec({k: v for k, v in spec.items() if k != "kind"}, allow_paths=allow_paths)
        except SpecInputError as exc:
            raise GeneratorError(exc.message, where=exc.where or "spec", hint=exc.hint) from None
    parsed = parse_spec(spec)
    if not allow_paths:
        found = find_paths(spec)
        if found:
            raise GeneratorError("file paths are not accepted here", where=found,
                                 hint='name a stored trace ({"empirical": {"trace": ID}}) or a bundled SLINFER trace '
                                      '("trace": "1_30_128_8_0")')
    return parsed


def find_paths(spec: dict) -> str | None:
    """Where the first file path of a stream-kind spec is (``parts.1.lengths.empirical.path``), else None."""
    parts = spec.get("parts") if spec.get("kind") == "mix" and isinstance(spec.get("parts"), list) else [spec]
    for i, part in enumerate(parts):
        prefix = f"parts.{i}." if part is not spec else ""
        if not isinstance(part, dict):
            continue
        if part.get("kind") == "slinfer" and part.get("path") is not None:
            return f"{prefix}path"
        empirical = (part.get("lengths") or {}).get("empirical") if isinstance(part.get("lengths"), dict) else None
        if isinstance(empirical, dict) and empirical.get("path") is not None:
            return f"{prefix}lengths.empirical.path"
    return None


def kind_of(spec: object, default: str = "sageserve") -> str:
    if not isinstance(spec, dict):
        raise GeneratorError("the spec must be a JSON object", hint="see fixtures/workloads/")
    kind = spec.get("kind", default)
    if kind not in KINDS:
        import difflib

        close = difflib.get_close_matches(str(kind), KINDS, n=1)
        raise GeneratorError(f"unknown kind {kind!r}", where="kind",
                             hint=(f"did you mean {close[0]!r}? " if close else "") + f"one of {', '.join(KINDS)}")
    return kind


def expected_requests(spec, default: str = "sageserve") -> float:
    """About how many requests a spec asks for (for caps before generating); 0 when it cannot tell cheaply.
    ``spec``: a dict, or a stream-kind spec already parsed (``generator.spec`` models: not parsed again)."""
    if not isinstance(spec, dict):
        return _expected(spec)
    kind = kind_of(spec, default)
    try:
        if kind == "sageserve":
            return float(spec.get("total_rps", 1.0)) * float(spec.get("days", 1)) * 86400
        if kind == "diurnal":
            return float(spec.get("total_requests") or float(spec.get("rps", 10.0)) * float(spec.get("duration_s", 86400)))
    except (TypeError, ValueError):
        return 0.0
    return _expected(parse_spec(spec))


def _expected(spec) -> float:
    from simulations.engine.workload.generator.spec import BatchSpec, GammaSpec, MixSpec, PoissonSpec

    if isinstance(spec, MixSpec):
        return sum(_expected(p) for p in spec.parts)
    if isinstance(spec, PoissonSpec | GammaSpec):
        return float(spec.requests if spec.requests is not None else spec.rate_rps * (spec.duration_s or 0.0))
    if isinstance(spec, BatchSpec):
        return float(spec.requests)
    return 0.0  # slinfer: bounded by the file


def generate(spec: dict, seed: int | None = None, *, model_names: list[str] | None = None,
             region_names: list[str] | None = None, parsed=None) -> pd.DataFrame:
    """A normalised trace (DataFrame sorted by arrival) from any kind's spec; ``seed`` overrides the spec's.
    ``parsed``: the stream-kind spec as its schema already parsed it (a scenario's), so it is not parsed again."""
    kind = kind_of(spec)
    if kind == "sageserve":
        from simulations.engine.workload.generator.sageserve import synthesize

        return synthesize(spec, seed=seed)
    if kind == "diurnal":
        if not model_names or not region_names:
            raise GeneratorError("kind diurnal draws from a fleet's models and regions", where="kind",
                                 hint="use it inside a scenario's workload.synthetic, or pick another kind")
        return generate_workload(spec, seed=seed or 0, model_names=model_names, region_names=region_names).to_frame()
    parsed = parse_spec(spec) if parsed is None else parsed
    if _expected(parsed) > MAX_REQUESTS:
        raise GeneratorError(f"the spec asks for about {_expected(parsed):,.0f} requests (limit {MAX_REQUESTS:,})",
                             hint="lower the rate, the duration or the request count")
    base = int(seed if seed is not None else (parsed.seed or 0))
    return _stream(parsed, np.random.SeedSequence(base))


def _stream(spec, ss: np.random.SeedSequence) -> pd.DataFrame:
    import pandas as pd  # lazy: the engine path does not pay for pandas

    from simulations.engine.workload.generator import arrivals, lengths, slinfer
    from simulations.engine.workload.generator.spec import BatchSpec, GammaSpec, MixSpec, SlinferSpec

    if isinstance(spec, MixSpec):
        children = ss.spawn(len(spec.parts))
        frames = [_stream(p, np.random.SeedSequence(p.seed) if p.seed is not None else c)
                  for p, c in zip(spec.parts, children, strict=True)]
        return _merge(frames)
    if isinstance(spec, SlinferSpec):
        frame = slinfer.read(spec)
        if spec.region is not None:
            frame["region"] = pd.Categorical([spec.region] * len(frame))
        if spec.tier is not None:
            frame["tier"] = pd.Categorical([spec.tier] * len(frame))
        return _sorted(frame)
    rng_arrival, rng_lengths, rng_labels = (np.random.default_rng(s) for s in ss.spawn(3))
    if isinstance(spec, BatchSpec):
        t = arrivals.batch(spec.requests, spec.at_s)
    else:
        t = arrivals.renewal(rng_arrival, rate=spec.rate_rps, cv=spec.cv if isinstance(spec, GammaSpec) else None,
                             start_s=spec.start_s, duration_s=spec.duration_s, requests=spec.requests)
    n = len(t)
    inp, out = lengths.sample(spec.lengths, n, rng_lengths)
    frame = pd.DataFrame({"arrival_s": t, "input_tokens": inp.astype(np.int32), "output_tokens": out.astype(np.int32)})
    for column, one, many in (("region", spec.region, spec.regions), ("model", spec.model, spec.models),
                              ("tier", spec.tier, spec.tiers)):
        if one is not None:
            frame[column] = pd.Categorical([one] * n)
        elif many is not None:
            names = list(many)
            w = np.array([many[k] for k in names], dtype=float)
            frame[column] = pd.Categorical.from_codes(rng_labels.choice(len(names), size=n, p=w / w.sum()), names)
    if spec.deadline_s is not None:
        frame["deadline_s"] = frame["arrival_s"] + spec.deadline_s
    return frame


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("arrival_s", kind="stable", ignore_index=True)


def _merge(frames: list[pd.DataFrame]) -> pd.DataFrame:
    import pandas as pd  # lazy: the engine path does not pay for pandas
    columns = {c for f in frames for c in f.columns}
    for column in ("region", "model", "tier"):
        if column in columns and not all(column in f.columns for f in frames):
            raise GeneratorError(f"some parts name a {column} and others do not", where="parts",
                                 hint=f"give every part a {column} (or none)")
    if "deadline_s" in columns:
        frames = [f if "deadline_s" in f.columns else f.assign(deadline_s=np.nan) for f in frames]
    merged = pd.concat([f.astype({c: str for c in ("region", "model", "tier") if c in f.columns}) for f in frames],
                       ignore_index=True)
    for column in ("region", "model", "tier"):
        if column in merged.columns:
            merged[column] = merged[column].astype("category")
    return _sorted(merged)


def generate_workload(spec: dict, *, seed: int, model_names: list[str], region_names: list[str], parsed=None):
    """Engine arrays for a scenario's ``workload.synthetic``: ``diurnal`` (the default) draws on the fleet's
    names; other kinds become a frame mapped onto the fleet like a trace. ``parsed``: the scenario schema's model of
    a stream-kind spec (the spec is then not validated a second time)."""
    try:
        kind = kind_of(spec, default="diurnal")
        if kind == "diurnal":
            return diurnal.synthesise(spec, seed=seed, model_names=model_names, region_names=region_names)
        frame = generate(spec, seed=seed, parsed=parsed)
    except GeneratorError as exc:
        field = "workload.synthetic" + ("" if exc.where == "spec" else f".{exc.where}")
        raise ScenarioError(field, exc.message + (f" ({exc.hint})" if exc.hint else "")) from None
    frame = frame.copy()
    for column, default in (("model", model_names[0]), ("region", region_names[0]), ("tier", "IW-F")):
        if column not in frame.columns:
            frame[column] = default
    return Workload.from_frame(frame).remap(list(model_names), list(region_names))
