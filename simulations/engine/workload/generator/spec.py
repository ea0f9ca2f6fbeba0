"""The generator's spec for the stream kinds (``poisson``, ``gamma``, ``batch``, ``slinfer``, ``mix``): pydantic v2
models, strict (no "1" for a number), closed (an unknown key is an error naming it), finite. Parsed once, at the
boundary, by ``parse_spec``; the two original kinds (``sageserve``, ``diurnal``) keep their own validation
(``sageserve.validate_spec``, the engine's ``diurnal``) so their results stay byte-identical.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError, model_validator

from simulations.engine.workload.generator.errors import GeneratorError

Tier = Literal["IW-F", "IW-N", "NIW"]
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$"
PERCENTILE = re.compile(r"^p(\d{1,2}(\.\d+)?)$")
MAX_TOKENS = 10_000_000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class LogNormal(Strict):
    median: float = Field(gt=0, le=MAX_TOKENS)
    sigma: float = Field(ge=0, le=5)


class LengthDist(Strict):
    """One length distribution: exactly one of ``lognormal``, ``quantiles`` (a log-normal fitted to published
    percentiles, e.g. ``{"p5": 7, "p50": 52, "p95": 911}``) or ``fixed``; rounded and clipped to [min, max]."""

    lognormal: LogNormal | None = None
    quantiles: dict[str, Annotated[float, Field(gt=0, le=MAX_TOKENS)]] | None = None
    fixed: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    min: int = Field(default=1, ge=0, le=MAX_TOKENS)
    max: int = Field(default=128_000, ge=1, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _one_distribution(self):
        given = [k for k in ("lognormal", "quantiles", "fixed") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of lognormal, quantiles, fixed (got {given or 'none'})")
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        if self.quantiles is not None:
            points = quantile_points(self.quantiles)
            if len(points) < 2:
                raise ValueError("quantiles needs at least two percentiles, e.g. {\"p50\": 52, \"p95\": 911}")
            values = [v for _, v in points]
            if any(b <= a for a, b in zip(values, values[1:], strict=False)):
                raise ValueError("quantile values must increase with the percentile")
        return self


def quantile_points(quantiles: dict[str, float]) -> list[tuple[float, float]]:
    """``{"p5": 7, "p50": 52}`` -> [(0.05, 7.0), (0.5, 52.0)], sorted; a bad key raises ValueError."""
    points = []
    for key, value in quantiles.items():
        m = PERCENTILE.match(key)
        if not m or not 0 < float(m.group(1)) < 100:
            raise ValueError(f"quantile key {key!r} is not a percentile like p5, p50, p99.9")
        points.append((float(m.group(1)) / 100.0, float(value)))
    return sorted(points)


class Empirical(Strict):
    """(input, output) pairs from a normalised trace: ``path`` (CLI / core), ``trace`` (a stored trace's id,
    resolved to its file by the web layer), or inline ``input`` / ``output`` lists. ``fit: true`` fits a
    log-normal to each column instead of resampling the pairs."""

    path: str | None = Field(default=None, max_length=1000)
    trace: int | None = Field(default=None, ge=1)
    input: list[Annotated[int, Field(ge=0, le=MAX_TOKENS)]] | None = Field(default=None, max_length=5_000_000)
    output: list[Annotated[int, Field(ge=0, le=MAX_TOKENS)]] | None = Field(default=None, max_length=5_000_000)
    fit: bool = False

    @model_validator(mode="after")
    def _one_source(self):
        inline = self.input is not None or self.output is not None
        given = [name for name, on in (("path", self.path), ("trace", self.trace), ("input/output", inline)) if on]
        if len(given) != 1:
            raise ValueError(f"give exactly one of path, trace, input+output (got {given or 'none'})")
        if inline and (self.input is None or self.output is None or len(self.input) != len(self.output)
                       or not self.input):
            raise ValueError("input and output must be equally long, non-empty lists (pairs are sampled together)")
        return self


class Lengths(Strict):
    """Prompt (``input``) and response (``output``) lengths, or ``empirical`` pairs. Default: log-normal with
    median 1000 / sigma 1.0 (input) and 200 / 0.9 (output), as the SageServe-like synthesiser."""

    input: LengthDist | None = None
    output: LengthDist | None = None
    empirical: Empirical | None = None

    @model_validator(mode="after")
    def _either(self):
        if self.empirical is not None and (self.input is not None or self.output is not None):
            raise ValueError("give either empirical or input/output, not both")
        return self


Weights = dict[Annotated[str, Field(pattern=NAME)], Annotated[float, Field(ge=0)]]


class Labels(Strict):
    """Who the requests belong to: one name (``model``) or weights (``models``) per column; a column no part
    names is left out (a scenario then fills it with the fleet's first model / region and tier IW-F)."""

    model: str | None = Field(default=None, pattern=NAME)
    models: Weights | None = None
    region: str | None = Field(default=None, pattern=NAME)
    regions: Weights | None = None
    tier: Tier | None = None
    tiers: dict[Tier, Annotated[float, Field(ge=0)]] | None = None
    deadline_s: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_per_column(self):
        for one, many in (("model", "models"), ("region", "regions"), ("tier", "tiers")):
            if getattr(self, one) is not None and getattr(self, many) is not None:
                raise ValueError(f"give {one} or {many}, not both")
            weights = getattr(self, many)
            if weights is not None and (not weights or sum(weights.values()) <= 0):
                raise ValueError(f"{many} needs at least one positive weight")
        return self


class _Stream(Labels):
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=5000)
    lengths: Lengths = Lengths()


class _Renewal(_Stream):
    rate_rps: float = Field(gt=0, le=1e6)
    duration_s: float | None = Field(default=None, gt=0, le=366 * 86400)
    requests: int | None = Field(default=None, ge=1)
    start_s: float = Field(default=0.0, ge=0, le=366 * 86400)

    @model_validator(mode="after")
    def _bounded(self):
        if (self.duration_s is None) == (self.requests is None):
            raise ValueError("give exactly one of duration_s and requests")
        return self


class PoissonSpec(_Renewal):
    """Poisson arrivals at a fixed rate (exponential gaps), first request at ``start_s``."""

    kind: Literal["poisson"]


class GammaSpec(_Renewal):
    """A renewal process with Gamma-distributed gaps: mean 1 / rate_rps, coefficient of variation ``cv``
    (shape 1/cv^2): cv < 1 is smoother than Poisson, cv > 1 burstier, cv = 1 is Poisson."""

    kind: Literal["gamma"]
    cv: float = Field(gt=0, le=100)


class BatchSpec(_Stream):
    """A batch dump: ``requests`` requests all arriving at ``at_s``."""

    kind: Literal["batch"]
    requests: int = Field(ge=1)
    at_s: float = Field(default=0.0, ge=0, le=366 * 86400)


class SlinferSpec(Strict):
    """The SLINFER artefact's function traces (fixtures/traces/slinfer/, see its SOURCES.md): every function
    becomes a model of its own, named ``model_prefix`` + its index (3 digits) or by ``models`` in order."""

    kind: Literal["slinfer"]
    trace: str | None = Field(default=None, pattern=NAME)
    path: str | None = Field(default=None, max_length=1000)
    functions: int | None = Field(default=None, ge=1, le=100_000)
    first_function: int = Field(default=0, ge=0)
    model_prefix: str = Field(default="fn-", pattern=r"^[A-Za-z0-9_.\-]{0,40}$")
    models: list[Annotated[str, Field(pattern=NAME)]] | None = None
    region: str | None = Field(default=None, pattern=NAME)
    tier: Tier | None = None
    duration_s: float | None = Field(default=None, gt=0)
    seed: int | None = Field(default=None, ge=0)
    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=5000)

    @model_validator(mode="after")
    def _source(self):
        if (self.trace is None) == (self.path is None):
            raise ValueError("give exactly one of trace (a bundled name) and path")
        return self


def _kind_tag(value) -> str | None:
    """Union branch label ``<kind>`` (the scenario schema's error paths skip labels in angle brackets)."""
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return f"<{kind}>" if isinstance(kind, str) else None


Part = Annotated[
    Annotated[PoissonSpec, Tag("<poisson>")] | Annotated[GammaSpec, Tag("<gamma>")]
    | Annotated[BatchSpec, Tag("<batch>")] | Annotated[SlinferSpec, Tag("<slinfer>")],
    Discriminator(_kind_tag),
]


class MixSpec(Strict):
    """Several streams merged and sorted by arrival (e.g. a Poisson background plus a batch dump)."""

    kind: Literal["mix"]
    parts: list[Part] = Field(min_length=1, max_length=100)
    seed: int | None = Field(default=None, ge=0)
    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=5000)


StreamSpec = Annotated[
    Annotated[PoissonSpec, Tag("<poisson>")] | Annotated[GammaSpec, Tag("<gamma>")]
    | Annotated[BatchSpec, Tag("<batch>")] | Annotated[SlinferSpec, Tag("<slinfer>")]
    | Annotated[MixSpec, Tag("<mix>")],
    Discriminator(_kind_tag),
]
STREAM_KINDS = ("poisson", "gamma", "batch", "slinfer", "mix")
_ADAPTER = TypeAdapter(StreamSpec)


def parse_spec(spec: dict) -> PoissonSpec | GammaSpec | BatchSpec | SlinferSpec | MixSpec:
    """Validate a stream-kind spec once; errors name the key path and suggest a spelling."""
    try:
        return _ADAPTER.validate_python(spec)
    except ValidationError as exc:
        raise translate(exc) from None


def translate(exc: ValidationError, prefix: str = "") -> GeneratorError:
    errors = exc.errors(include_url=False)
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])  # a misspelt key explains most
    # the discriminated union puts the kind into the path (parts.0.<poisson>.rate_rps): drop it
    loc = [str(p) for p in err["loc"] if not str(p).startswith("<")]
    where = ".".join(([prefix] if prefix else []) + loc) or prefix or "spec"
    message = err["msg"].removeprefix("Value error, ")
    hint = ""
    if err["type"] == "extra_forbidden":
        model = _model_at(err["loc"])
        known = sorted(model.model_fields) if model else []
        close = difflib.get_close_matches(loc[-1], known, n=1)
        message = f"unknown key {loc[-1]!r}"
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
    elif err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        where = ".".join(([prefix] if prefix else []) + loc + ["kind"])
        tag = str((err.get("ctx") or {}).get("tag", "")).strip("<>")
        tag = "" if tag == "None" else tag
        close = difflib.get_close_matches(tag, STREAM_KINDS, n=1)
        message = f"unknown kind {tag!r}" if tag else "kind is required"
        hint = (f"did you mean {close[0]!r}? " if close else "") + (
            f"kind is one of {', '.join(STREAM_KINDS)} (or sageserve / diurnal, see docs/traces.md)")
    elif err["type"] == "missing":
        message = f"{loc[-1]!r} is required"
    return GeneratorError(message, where=where, hint=hint or "see docs/traces.md, Workload generator")


def _model_at(loc: tuple) -> type[BaseModel] | None:
    kinds = {"poisson": PoissonSpec, "gamma": GammaSpec, "batch": BatchSpec, "slinfer": SlinferSpec, "mix": MixSpec}
    model: type[BaseModel] | None = None
    for part in loc[:-1]:
        part = part.strip("<>") if isinstance(part, str) else part
        if part in kinds:
            model = kinds[part]
        elif model is not None and isinstance(part, str) and part in model.model_fields:
            ann = model.model_fields[part].annotation
            model = next((a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type)
                          and issubclass(a, BaseModel)), None) or model
    return model
