"""The planner's door to the one workload generator (``simulations.engine.workload.generator``, docs/traces.md).

``synthesize(spec, seed)`` returns a normalised trace for any generator kind: ``sageserve`` (the multi-day
SageServe-like synthesiser that lived here, unchanged: same spec and seed, same frame), ``poisson``, ``gamma``,
``batch``, ``slinfer``, ``mix``. Errors come out as ``SpecError`` (a ``TraceFormatError``) so the trace pages,
the API and ``manage.py synth_trace`` report them like every other bad input.
"""

from __future__ import annotations

import pandas as pd

from planner.ingest.errors import TraceFormatError
from simulations.engine.workload.generator import KINDS, GeneratorError, expected_requests, generate, validate
from simulations.engine.workload.generator.sageserve import DEFAULT_TOKENS, MAX_REQUESTS, TIER_KEYS, TOP_KEYS

__all__ = ["DEFAULT_TOKENS", "KINDS", "MAX_REQUESTS", "TIER_KEYS", "TOP_KEYS", "SpecError", "expected_size",
           "synthesize", "validate_spec"]


class SpecError(TraceFormatError):
    """A synthesiser spec the user can fix (names the key)."""

    def __init__(self, message: str, *, where: str = "spec", hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.spec_where = where


def _translated(exc: GeneratorError) -> SpecError:
    message = exc.message if exc.where in ("spec", "") or exc.where in exc.message else f"{exc.where}: {exc.message}"
    return SpecError(message, where=exc.where, hint=exc.hint)


def synthesize(spec: dict, seed: int | None = None) -> pd.DataFrame:
    """Generate a normalised trace (DataFrame sorted by arrival) from a generator spec dict."""
    try:
        return generate(spec, seed=seed)
    except GeneratorError as exc:
        raise _translated(exc) from None


def validate_spec(spec) -> dict:
    """Check a spec of any kind by its schema (trusted caller: file paths allowed)."""
    from simulations.engine.workload.generator import kind_of
    from simulations.engine.workload.generator.sageserve import validate_spec as sageserve_spec

    try:
        if kind_of(spec) == "sageserve":
            return sageserve_spec(spec)
        validate(spec, allow_paths=True)
    except GeneratorError as exc:
        raise _translated(exc) from None
    return spec


def expected_size(spec: dict) -> float:
    """About how many requests ``spec`` asks for (0 if unknown); errors surface when generating."""
    try:
        return expected_requests(spec)
    except GeneratorError:
        return 0.0
