"""Synthesiser specs from the web: token lengths sampled from one of the team's traces, never a server path."""

from __future__ import annotations

import json

from planner.traces.errors import TraceInputError
from planner.traces.models import Trace


def resolve_token_source(spec: dict, *, team) -> dict:
    """Replace every ``"empirical": {"trace": ID}`` under ``tokens`` (kind sageserve) or ``lengths`` (the stream
    kinds, also inside a mix's ``parts``) by that trace's normalised file (team-checked). Any other
    ``empirical`` source (a path, inline lists) is refused here: a spec from the web must not read server
    files, and inline lists belong in the Django-free core only. Likewise a SLINFER ``path`` (bundled
    ``trace`` names only)."""
    spec = json.loads(json.dumps(spec))
    _refuse_paths(spec)
    tokens = spec.get("tokens") if isinstance(spec, dict) else None

    def visit(node, where: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                visit(item, f"{where}[{i}]")
            return
        if not isinstance(node, dict):
            return
        for key, value in list(node.items()):
            here = f"{where}.{key}"
            if key != "empirical":
                visit(value, here)
                continue
            trace_id = value.get("trace") if isinstance(value, dict) else None
            if not isinstance(value, dict) or set(value) != {"trace"}:
                raise TraceInputError(
                    "token lengths can only be sampled from one of your traces here",
                    where=here,
                    hint='use {"empirical": {"trace": ID}} with the id of one of your traces',
                )
            try:
                trace = Trace.objects.filter(team=team, pk=int(trace_id), status=Trace.Status.READY).first()
            except (TypeError, ValueError):
                trace = None
            if trace is None:
                raise TraceInputError(
                    f"trace #{trace_id} does not exist in your team or is not ready (still normalising, or failed)",
                    where=here,
                    hint="pick one of your uploaded traces whose status is ready",
                )
            node[key] = {"path": str(trace.normalised_file)}

    visit(tokens, "tokens")
    parts = spec.get("parts") if isinstance(spec, dict) and isinstance(spec.get("parts"), list) else [spec]
    for i, part in enumerate(parts):
        if isinstance(part, dict) and isinstance(part.get("lengths"), dict):
            visit(part["lengths"], "lengths" if part is spec else f"parts[{i}].lengths")
    return spec


def with_token_trace(spec, trace_id: int):
    """The spec with its token lengths sampled from one of the team's traces: ``tokens`` for kind sageserve,
    ``lengths`` for the stream kinds (every part of a mix; a SLINFER trace keeps its own lengths)."""
    if not isinstance(spec, dict):
        return spec
    source = {"empirical": {"trace": trace_id}}
    kind = spec.get("kind", "sageserve")
    if kind == "sageserve":
        return {**spec, "tokens": source}
    if kind == "mix" and isinstance(spec.get("parts"), list):
        parts = [{**p, "lengths": source} if isinstance(p, dict) and p.get("kind") != "slinfer" else p
                 for p in spec["parts"]]
        return {**spec, "parts": parts}
    if kind in ("poisson", "gamma", "batch"):
        return {**spec, "lengths": source}
    return spec


def _refuse_paths(spec) -> None:
    parts = spec.get("parts") if isinstance(spec, dict) and isinstance(spec.get("parts"), list) else [spec]
    for i, part in enumerate(parts):
        if isinstance(part, dict) and part.get("kind") == "slinfer" and "path" in part:
            raise TraceInputError(
                "a SLINFER trace can only be one of the bundled ones here",
                where="spec.path" if part is spec else f"spec.parts[{i}].path",
                hint='use "trace": a name from fixtures/traces/slinfer/ (e.g. "1_30_128_8_0")',
            )
