"""Shared pieces of every input schema (scenario, plan, synthetic workload, hardware JSON). Django-free.

Each core declares its input as pydantic v2 models built on ``Strict``: unknown keys are refused with a
"did you mean" (difflib), types are strict (no ``"1"`` for a number, no ``true`` for an integer), numbers
must be finite and in range. ``explain(ValidationError)`` turns pydantic's first error into
``(where, message, hint)`` with a dotted path such as ``fleet.endpoints[0].deployment.prefill.c0``, which
each core wraps in its own error class.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
import typing
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator
from pydantic_core import PydanticCustomError

# A JSON integer that fits PostgreSQL's bigint (and numpy's int64) and a finite float of sane magnitude:
# the bounds every number gets when its field declares none.
BIGINT = 2**63 - 1
MAX_ABS_FLOAT = 1e15
TAG = "<"  # tagged-union branch names start with it; explain() drops them from paths


def _allowed_keys(cls: type[BaseModel]) -> list[str]:
    keys = []
    for name, info in cls.model_fields.items():
        alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
        keys.append(alias or name)
    return keys


def suggest(key: str, known: list[str] | tuple[str, ...] | set[str]) -> str:
    """``" (did you mean 'quotas'?)"`` for a near miss, else the list of known names."""
    known = sorted(str(k) for k in known)
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"known keys: {', '.join(known)}" if known else "this object takes no keys"


class Strict(BaseModel):
    """Base of every input model: extra keys refused with a suggestion, strict types, finite numbers."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, populate_by_name=False)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = _allowed_keys(cls)
            for key in data:
                if key not in allowed:
                    raise PydanticCustomError(
                        "unknown_key", "unknown key {key}", {"key": str(key), "hint": suggest(str(key), allowed)}
                    )
        return data


def nul_path(data: Any, where: str = "") -> str | None:
    """The path of the first string (or key) holding a NUL character, which PostgreSQL cannot store in text or
    JSON; None when there is none. Each schema's entry point refuses such input first."""
    if isinstance(data, str):
        return (where or "(top level)") if "\x00" in data else None
    if isinstance(data, dict):
        for k, v in data.items():
            here = f"{where}.{k}" if where else str(k)
            if "\x00" in str(k):
                return here
            found = nul_path(v, here)
            if found:
                return found
    elif isinstance(data, list):
        for i, v in enumerate(data):
            found = nul_path(v, f"{where}[{i}]")
            if found:
                return found
    return None


NUL_MESSAGE = "contains a NUL character (\\u0000), which cannot be stored"


def _json_value_ok(value: Any, depth: int = 0) -> Any:
    if depth > 32:
        raise PydanticCustomError("too_deep", "is nested more than 32 levels deep")
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("finite_number", "must be a finite number, got {value}", {"value": str(value)})
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > BIGINT:
        raise PydanticCustomError("int_range", "is too large: integers must fit in 64 bits")
    if isinstance(value, dict):
        for k, v in value.items():
            if "\x00" in str(k):
                raise PydanticCustomError("nul_character", "contains a NUL character (\\u0000) in a key")
            _json_value_ok(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _json_value_ok(v, depth + 1)
    elif isinstance(value, str) and "\x00" in value:
        raise PydanticCustomError("nul_character", "contains a NUL character (\\u0000)")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise PydanticCustomError("json_type", "must be a JSON value")
    return value


def _json_ok(value: Any) -> Any:
    return _json_value_ok(value)


# Free-form JSON (descriptions, knobs, metadata): any JSON value, but finite, 64-bit and not absurdly deep.
JSONValue = Annotated[Any, AfterValidator(_json_ok)]


def num(*, ge: float | None = None, gt: float | None = None, le: float | None = None, lt: float | None = None,
        default: Any = ..., description: str = "") -> Any:
    """A finite float field with bounds (an int is accepted for a float)."""
    if le is None and lt is None:
        le = MAX_ABS_FLOAT
    if ge is None and gt is None:
        ge = -MAX_ABS_FLOAT
    return Field(default, ge=ge, gt=gt, le=le, lt=lt, description=description or None)


def integer(*, ge: int = 0, le: int = BIGINT, default: Any = ..., description: str = "") -> Any:
    return Field(default, ge=ge, le=le, description=description or None)


def _field_type(tp: Any) -> Any:
    """The input type of a config dataclass field: scalars as they are, containers as free-form JSON."""
    origin = typing.get_origin(tp)
    if tp in (float, int, bool, str):
        return tp
    if origin in (dict, tuple, list) or tp in (dict, tuple, list):
        return JSONValue
    return JSONValue


def section(dc: type, name: str, *, fields: dict[str, tuple] | None = None, aliases: dict[str, str] | None = None,
            bounds: dict[str, dict] | None = None, exclude: tuple[str, ...] = (), required: tuple[str, ...] = (),
            add: dict[str, tuple] | None = None, validators: dict | None = None, doc: str = "") -> type[Strict]:
    """A ``Strict`` model for the frozen config dataclass ``dc``: one field per dataclass field, its type
    (int / float / bool / str; containers as checked JSON), its default, and bounds from ``bounds`` (else
    generic finite / 64-bit ranges). ``fields`` replaces a field's (type, FieldInfo); ``aliases`` renames a
    field in the JSON (``min_instances`` is ``min``); ``exclude`` leaves a field out (set by the engine).
    A field added to ``dc`` later therefore joins the schema with its type and default, with no edit here."""
    hints = typing.get_type_hints(dc)
    fields = dict(fields or {})
    aliases = aliases or {}
    bounds = bounds or {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(dc):
        if f.name in exclude:
            continue
        if f.name in fields:
            tp, info = fields[f.name]
        else:
            tp = _field_type(hints[f.name])
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                default = f.default_factory()  # type: ignore[misc]
            else:
                default = ...
            if f.name in required:
                default = ...
            kw = dict(bounds.get(f.name, {}))
            if tp is float:
                info = num(default=default, **kw)
            elif tp is int:
                info = integer(default=default, **kw)
            else:
                info = Field(default, **kw)
        if f.name in aliases:
            tp = Annotated[tp, Field(alias=aliases[f.name], validation_alias=aliases[f.name])]
        out[f.name] = (tp, info)
    out.update(add or {})
    return create_model(name, __base__=Strict, __doc__=doc or dc.__doc__, __validators__=validators or None, **out)


def to_kwargs(model: BaseModel) -> dict:
    """Field-name keyword arguments for the dataclass a ``section`` model mirrors (top level only)."""
    return {name: getattr(model, name) for name in type(model).model_fields}


_BRANCH = re.compile(r"^(constrained-\w+|float|int|str|bool|none|bytes|\w+\[.*\])$")


def _model_names(cls: type = None) -> set[str]:  # type: ignore[assignment]
    cls = cls or Strict
    names = {cls.__name__}
    for sub in cls.__subclasses__():
        names |= _model_names(sub)
    return names


def _path(loc: tuple) -> str:
    models = _model_names()
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and (part.startswith((TAG, "[")) or _BRANCH.match(part) or part in models):
            continue  # a union branch's label, not a key of the input
        else:
            out += f".{part}" if out else str(part)
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _finite_text(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


_TYPE_WORDS = {
    "float_type": "a number", "int_type": "a whole number", "int_from_float": "a whole number",
    "string_type": "a string", "bool_type": "true or false", "dict_type": "an object", "list_type": "a list",
    "model_type": "an object", "model_attributes_type": "an object", "tuple_type": "a list",
}


def explain(exc: ValidationError) -> tuple[str, str, str]:
    """``(where, message, hint)`` for the first error of a pydantic ValidationError (paths dotted)."""
    errors = exc.errors(include_url=False)
    # the most specific problem: in a union (a number or a list of numbers) the branch that got deepest
    err = max(errors, key=lambda e: len(_path(tuple(e.get("loc", ()))).replace("[", ".[").split(".")))
    where, message, hint = _describe(err)
    others = {_path(tuple(e.get("loc", ()))) for e in errors} - {_path(tuple(err.get("loc", ())))}
    if others:
        hint = (hint + "; " if hint else "") + f"{len(others)} more problem(s) after this one"
    return where, message, hint


def every_problem(exc: ValidationError) -> list[tuple[str, str, str]]:
    """``(where, message, hint)`` for each place a pydantic ValidationError names, in the input's order: a form
    lists them all at its top, not the first one alone."""
    seen: dict[str, tuple[str, str, str]] = {}
    for err in exc.errors(include_url=False):
        where, message, hint = _describe(err)
        seen.setdefault(where, (where, message, hint))
    return list(seen.values())


def _describe(err: dict) -> tuple[str, str, str]:
    """``(where, message, hint)`` of one pydantic error."""
    where = _path(tuple(err.get("loc", ())))
    etype = err.get("type", "")
    ctx = err.get("ctx") or {}
    value = err.get("input")
    hint = ""
    if etype == "unknown_key":
        key = ctx.get("key", "")
        where = f"{where}.{key}" if where else key
        return where, "is an unknown key", ctx.get("hint", "")
    if etype in _TYPE_WORDS:
        message = f"must be {_TYPE_WORDS[etype]}, got {type(value).__name__} {_shown(value)}"
        if isinstance(value, str) and etype in ("float_type", "int_type") and _finite_text(value):
            hint = "write the number without quotes"
        elif isinstance(value, float) and etype == "int_type":
            hint = "write a whole number without a decimal point"
    elif etype == "finite_number":
        message, hint = "must be a finite number (not NaN or infinity)", "give a finite value"
    elif etype in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "")
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[etype]
        message = f"must be {op} {bound}, got {_shown(value)}"
    elif etype == "literal_error":
        message = f"must be one of {ctx.get('expected', '')}, got {_shown(value)}"
        if isinstance(value, str):
            options = [o.strip().strip("'\"") for o in str(ctx.get("expected", "")).replace(" or ", ",").split(",")]
            close = difflib.get_close_matches(value, [o for o in options if o], n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else ""
    elif etype == "missing":
        message = "is required"
    elif etype == "too_short" and isinstance(ctx.get("min_length"), int):
        message = f"needs at least {ctx['min_length']} item{'s' if ctx['min_length'] != 1 else ''}, got {_shown(value)}"
    elif etype in ("too_short", "too_long"):
        message = err.get("msg", "has the wrong length").replace("List", "the list").replace("Dictionary", "the object")
    else:
        message = str(err.get("msg", "is invalid"))
        if message.startswith("Value error, "):
            message = message[len("Value error, "):]
        hint = str(ctx.get("hint", "")) if isinstance(ctx, dict) else ""
    return where or "(top level)", message, hint


def deep_merge(base: dict, over: dict) -> dict:
    """``base`` with ``over`` merged in, recursively for nested objects (copies; inputs untouched)."""
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out
