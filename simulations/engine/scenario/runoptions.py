"""How a run keeps its results: the run option ``result``, parsed once at the boundary. Django-free.

    {"mode": "table"}                        # default: the per-request table (every page of a run), exact
    {"mode": "streaming", "chunk_s": 3600}   # simulations.engine.streaming.stream: bounded memory, accumulated results

``table`` is today's result (``simulate``: exact percentiles, timelines, usage per endpoint, scaling events).
``streaming`` replays the workload in chunks of ``chunk_s`` simulated seconds (``simulate_stream``) and keeps
only what is accumulated online: exact counts and sums, hourly rollups per endpoint and tier, percentiles from
log histograms within ``stream.REL_ERR`` (0.5 %) relative. It is the mode for month-scale horizons; its request
and simulated-time caps are separate settings (PLANNER_MAX_STREAM_*), since memory does not grow with them.
Errors are ``ScenarioError`` naming ``result.<field>`` (the API turns them into the documented 400 shape).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ValidationError, model_validator
from pydantic_core import PydanticCustomError

from planner.inputs import Strict, explain, num
from simulations.engine.scenario.config import ScenarioError
from simulations.engine.scenario.schema import Limits

DEFAULT_CHUNK_S = 3600.0
MIN_CHUNK_S = 60.0
MAX_CHUNK_S = 7 * 86400.0
RESULT_MODES = ("table", "streaming")
# a streamed run's caps outside Django (the light CLI); the app reads PLANNER_MAX_STREAM_* (same defaults)
STREAM_LIMITS = Limits(max_requests=400_000_000, max_sim_time_s=31 * 86400.0)


class ResultOptions(Strict):
    """``result``: how the run keeps its results (docs/simulator.md "Month scale")."""

    mode: Literal["table", "streaming"] = "table"
    chunk_s: float | None = num(default=None, ge=MIN_CHUNK_S, le=MAX_CHUNK_S,
                                description="streaming only: simulated seconds per chunk (default 3600)")

    @model_validator(mode="after")
    def _chunk_only_when_streaming(self) -> ResultOptions:
        if self.mode != "streaming" and self.chunk_s is not None:
            raise PydanticCustomError("chunk_without_streaming", "chunk_s applies only to mode 'streaming'",
                                      {"hint": 'use {"mode": "streaming", "chunk_s": 3600} or drop chunk_s'})
        return self

    @property
    def streaming(self) -> bool:
        return self.mode == "streaming"

    @property
    def chunk(self) -> float:
        """Simulated seconds per chunk of a streamed run (the default when not given)."""
        return float(self.chunk_s if self.chunk_s is not None else DEFAULT_CHUNK_S)

    def stored(self) -> dict:
        """What a run row keeps: mode, and chunk_s for a streamed run."""
        return {"mode": self.mode, "chunk_s": self.chunk} if self.streaming else {"mode": "table"}


def openapi_schema() -> dict:
    """``ResultOptions``' JSON schema in OpenAPI 3.0 terms (``anyOf [X, null]`` -> ``X`` + ``nullable``), for the
    API documentation: derived from the one schema, not a copy."""
    schema = ResultOptions.model_json_schema()
    props = {}
    for name, prop in schema.get("properties", {}).items():
        branches = prop.get("anyOf")
        if branches:
            real = [b for b in branches if b.get("type") != "null"]
            prop = {**{k: v for k, v in prop.items() if k != "anyOf"}, **(real[0] if len(real) == 1 else {}),
                    "nullable": len(real) < len(branches)}
        prop.pop("title", None)
        props[name] = prop
    return {"type": "object", "description": (schema.get("description") or "").strip(), "properties": props,
            "additionalProperties": False}


def parse_result_options(data: Any) -> ResultOptions:
    """The validated option (None / {} = table), or ScenarioError naming ``result.<field>``. A bare string
    ``"table"`` / ``"streaming"`` is accepted as the mode."""
    if data is None or data == "":
        data = {}
    if isinstance(data, str):
        data = {"mode": data}
    if not isinstance(data, dict):
        raise ScenarioError("result", f"must be an object, got {type(data).__name__}",
                            hint='e.g. {"mode": "streaming", "chunk_s": 3600}')
    try:
        return ResultOptions.model_validate(data)
    except ValidationError as exc:
        where, message, hint = explain(exc)
        field = "result" if where == "(top level)" else f"result.{where}"
        if not hint:
            hint = {"result.chunk_s": f"simulated seconds per chunk, {MIN_CHUNK_S:,.0f} to {MAX_CHUNK_S:,.0f} "
                                      f"(default {DEFAULT_CHUNK_S:,.0f})",
                    "result.mode": "table (default) or streaming"}.get(field, "")
        raise ScenarioError(field, message, hint=hint) from None
