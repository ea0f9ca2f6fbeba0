"""Typed policy parameters (``strategy.params``): each policy class declares a ``Params`` model next to the code
that reads it, and everything that checks a scenario (the scenario parser, the comparison service, forms, the API)
validates through those models.

A policy's ``Params`` subclasses ``PolicyParams`` (pydantic): one field per knob with its type, range, default and
description; inheritance composes them (a policy's model extends its base class's and its components'). The
policy reads its knobs from ``Model.read(params)`` (the validated model, defaults filled), so a default lives in
one place. Routers and the scheduler read the same ``strategy.params`` dict: their models declare the knobs they
read, and any autoscaler accepts them (a router knob is checked by the chosen router's model).

``check_params`` is the boundary check: an unknown knob is refused with a "did you mean", a bad value names the
knob (``strategy.params.cooldown_s: ...``), as a ``ScenarioError``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.inputs import suggest
from simulations.engine.policies.registry import _TABLES, AUTOSCALERS, PolicyKind, get_policy
from simulations.engine.scenario.config import ScenarioError


class PolicyParams(BaseModel):
    """A policy's knobs. Unknown keys are refused (a misspelt knob would silently do nothing), types are strict
    (``"1"`` is not a number, ``1`` is not a boolean; an integer is a number), numbers finite, values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
    # False: the policy reads no knob of its own and ignores any it is given (``static``: a comparison hands every
    # strategy the same shared knobs)
    refuse_unknown: ClassVar[bool] = True

    @classmethod
    def knob_names(cls) -> dict[str, str]:
        """Knob name (as written in ``strategy.params``) -> field name (differs for a Python keyword: ``global``)."""
        return {(f.alias or name): name for name, f in cls.model_fields.items()}

    @classmethod
    def read(cls, params: dict | None):
        """The validated model of the knobs of ``params`` this model declares (others belong to other parts of
        the strategy and are checked by ``check_params``). A bad value is a ScenarioError naming the knob
        (``strategy.params.<knob>``) with the knob's description as the hint."""
        params = params or {}
        names = cls.knob_names()
        try:
            return cls.model_validate({k: v for k, v in params.items() if k in names})
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            field = cls.model_fields.get(names.get(str(err["loc"][0]), "")) if err["loc"] else None
            msg = f"must be {err['ctx']['expected']}" if err.get("type") == "literal_error" else err["msg"]
            hint = (f"{err['loc'][0]}: {field.description}" if field is not None and field.description
                    else "see the policy's knobs in docs/simulator.md")
            raise ScenarioError(f"strategy.params.{loc}" if loc else "strategy.params", msg, hint=hint) from None


def knob(default: Any, description: str, **bounds: Any) -> Any:
    """A knob: its default, what it does (shown in forms and docs), and its bounds (``ge``, ``gt``, ``le``, ...)."""
    return Field(default, description=description, **bounds)


def params_model(kind: PolicyKind, name: str) -> type[PolicyParams]:
    return get_policy(kind, name).Params


def router_knobs() -> set[str]:
    """Knobs the registered routers read from ``strategy.params`` (any autoscaler accepts them)."""
    out: set[str] = set()
    for kind in (PolicyKind.REGION_ROUTER, PolicyKind.ENDPOINT_ROUTER, PolicyKind.INSTANCE_ROUTER):
        for cls in _TABLES[kind].values():  # every family: a router knob is accepted whichever router runs
            out.update(cls.Params.knob_names())
    return out


def known_knobs(autoscaler: str) -> set[str] | None:
    """The knobs an autoscaler accepts (its own and the routers'), or None when it ignores unknown ones."""
    model = params_model(PolicyKind.AUTOSCALER, autoscaler)
    if not model.refuse_unknown:
        return None
    return set(model.knob_names()) | router_knobs()


def check_params(autoscaler: str, params: dict, where: str, routers: tuple = ()) -> None:
    """ScenarioError for a knob the chosen autoscaler and routers do not read, or a value their models refuse.
    ``routers``: (PolicyKind, name) pairs of the chosen routers. An unknown autoscaler is left to the name checks."""
    if autoscaler not in AUTOSCALERS:
        return
    model = AUTOSCALERS[autoscaler].Params
    params = params or {}
    known = known_knobs(autoscaler) if params else None  # no knob given: none unknown (and no family loaded)
    if known is not None:
        for key in params:
            if key not in known:
                raise ScenarioError(f"{where}.{key}", f"is not a knob of the {autoscaler!r} autoscaler",
                                    hint=suggest(key, sorted(known)))
    try:
        model.read(params)
        for kind, name in routers:
            params_model(kind, name).read(params)
        # rules across knobs that a model does not state (a forecaster's history, ...) stay in the constructors,
        # which only parse and check their knobs: construct the autoscaler once
        AUTOSCALERS[autoscaler](dict(params), np.random.default_rng(0))
    except ScenarioError as exc:
        field = exc.field
        if field.startswith("strategy.params"):
            field = where + field[len("strategy.params"):]
        raise ScenarioError(field, exc.message, hint=exc.hint) from None


def knob_table(kind: PolicyKind, name: str) -> list[dict]:
    """The declared knobs of a policy: name, type, default, bounds and description (forms, API, docs)."""
    schema = params_model(kind, name).model_json_schema()
    out = []
    for key, prop in (schema.get("properties") or {}).items():
        out.append({"name": key, "type": prop.get("type") or prop.get("anyOf") or prop.get("enum"),
                    "default": prop.get("default"), "description": prop.get("description", ""),
                    **{b: prop[b] for b in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum")
                       if b in prop}})
    return out
