"""Django form fields generated from a pydantic input schema (``model_json_schema()``): one schema, no second copy.

``schema_fields(Model)`` walks the model's JSON schema and makes one form field per scalar it finds - integer,
number, boolean, string, enum / const (a choice), an array of scalars (a comma-separated text field), a
dict whose keys are an enum (one field per key, e.g. ``{"IW-F": ..}``) - recursing into nested objects
(``slo.ttft_s.IW-F``). Bounds (minimum / maximum / exclusive), lengths, enums and defaults come from the
schema; its descriptions become the help text together with the range and the default. Anything else (free
dicts, lists of objects, unions of several kinds) is left to the JSON ("advanced") view. So a scalar added
to a schema model appears in the form with no template work.

Each field remembers its JSON path (``Spec``): ``collect`` turns cleaned data back into the nested dict
(blank -> omitted, so the schema's default applies), ``initial_from`` fills the fields from a past JSON
(clone-and-edit), ``field_for_path`` finds the field a schema error's path points at. The schema itself
validates the result (the caller's parser); the form's bounds only catch typos early, with the same limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

SCALARS = ("integer", "number", "boolean", "string")


@dataclass(frozen=True)
class Spec:
    name: str  # the form field's name
    path: tuple[str, ...]  # JSON keys from the model's root
    kind: str  # integer | number | boolean | string | choice | list
    default: Any = None
    item: str = ""  # the item type of a list


def _resolve(node: dict, defs: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    if isinstance(node, dict) and len(node.get("allOf", [])) == 1:
        node = {**_resolve(node["allOf"][0], defs), **{k: v for k, v in node.items() if k != "allOf"}}
    return node


def _unwrap(node: dict, defs: dict) -> tuple[dict | None, bool]:
    """(the one non-null branch, nullable); None when the field is a union of several kinds."""
    node = _resolve(node, defs)
    branches = node.get("anyOf") or node.get("oneOf")
    if not branches:
        return node, False
    real = [_resolve(b, defs) for b in branches if b.get("type") != "null"]
    if len(real) != 1:
        return None, True
    merged = {**real[0], **{k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}}
    return merged, len(real) < len(branches)


def _field_name(prefix: str, path: tuple[str, ...]) -> str:
    return prefix + "__".join(re.sub(r"[^A-Za-z0-9_]", "_", k) for k in path)


def humanise(key: str) -> str:
    unit = ""
    for suffix, name in (("_s", "s"), ("_ms", "ms"), ("_tps", "TPS"), ("_rps", "req/s"), ("_gb", "GB"), ("_w", "W")):
        if key.endswith(suffix) and len(key) > len(suffix):
            key, unit = key[: -len(suffix)], name
            break
    text = key if re.search(r"[A-Z]", key) else key.replace("_", " ")
    return f"{text} ({unit})" if unit else text


def _bounds_text(node: dict) -> str:
    lo = node.get("minimum", node.get("exclusiveMinimum"))
    hi = node.get("maximum", node.get("exclusiveMaximum"))
    if lo is None and hi is None:
        return ""

    def fmt(v):
        if abs(v) >= 1e15:
            return f"{v:.3g}"
        return f"{int(v):,}" if float(v).is_integer() else f"{v:,}"

    left = "" if lo is None else (f"> {fmt(lo)}" if "exclusiveMinimum" in node else f"≥ {fmt(lo)}")
    right = "" if hi is None else (f"< {fmt(hi)}" if "exclusiveMaximum" in node else f"≤ {fmt(hi)}")
    return "range " + ", ".join(x for x in (left, right) if x)


class _Exclusive:
    def __init__(self, bound: float, above: bool) -> None:
        self.bound, self.above = bound, above

    def __call__(self, value) -> None:
        if value is None:
            return
        if (self.above and not value > self.bound) or (not self.above and not value < self.bound):
            raise ValidationError(f"must be {'above' if self.above else 'below'} {self.bound:g}")


def _make_field(node: dict, kind: str, *, label: str, required: bool, default: Any, blank_default: bool,
                help_prefix: str) -> forms.Field | None:
    bits = [node.get("description") or help_prefix]
    if kind in ("integer", "number"):
        bits.append(_bounds_text(node))
    if default not in (None, "") and kind != "boolean":
        bits.append(f"default {default}")
    if not required and default is None and kind not in ("boolean",):
        bits.append("blank: not set")
    help_text = "; ".join(b for b in bits if b)
    initial = None if blank_default else default
    common = {"label": label, "required": required, "help_text": help_text, "initial": initial}
    if kind == "integer":
        lo = node.get("minimum", None if "exclusiveMinimum" not in node else node["exclusiveMinimum"] + 1)
        hi = node.get("maximum", None if "exclusiveMaximum" not in node else node["exclusiveMaximum"] - 1)
        return forms.IntegerField(min_value=lo, max_value=hi, **common)
    if kind == "number":
        field = forms.FloatField(min_value=node.get("minimum"), max_value=node.get("maximum"), **common)
        for key, above in (("exclusiveMinimum", True), ("exclusiveMaximum", False)):
            if key in node:
                field.validators.append(_Exclusive(node[key], above))
                field.widget.attrs["min" if above else "max"] = node[key]
        field.widget.attrs["step"] = "any"
        return field
    if kind == "boolean":  # a select, not a checkbox: a blank answer keeps the schema's default (an unchecked
        # box would be indistinguishable from "no", and a row added to a bound formset would render unchecked)
        blank = "not set" if default is None else f"default ({'yes' if default else 'no'})"
        return forms.TypedChoiceField(choices=[("", blank), ("true", "yes"), ("false", "no")],
                                      coerce=lambda v: v == "true", empty_value=None,
                                      **{**common, "required": False, "initial": None})
    if kind == "choice":
        options = node.get("enum") or ([node["const"]] if "const" in node else [])
        choices = ([] if required else [("", "not set")]) + [(str(o), str(o)) for o in options]
        by_text = {str(o): o for o in options}  # the schema's own value back (an integer enum stays an integer)
        return forms.TypedChoiceField(choices=choices, coerce=lambda v: by_text.get(v, v), empty_value=None, **common)
    if kind == "string":
        return forms.CharField(max_length=node.get("maxLength"), min_length=node.get("minLength"),
                               strip=True, **common)
    if kind == "list":
        return forms.CharField(**{**common, "help_text": "; ".join(b for b in ("comma-separated", help_text) if b)})
    return None


def _kind(node: dict) -> str | None:
    if "enum" in node or "const" in node:
        return "choice"
    t = node.get("type")
    if t in SCALARS:
        return t
    if t == "array":
        item = node.get("items") or {}
        if item.get("type") in SCALARS and "prefixItems" not in node:
            return "list"
    return None


def schema_fields(model, *, prefix: str = "", exclude: tuple[str, ...] = (), labels: dict | None = None,
                  blank_defaults: bool = False, initial: dict | None = None,
                  blank_placeholder: str = "") -> list[tuple[Spec, forms.Field]]:
    """(spec, form field) for every scalar of ``model`` (a pydantic model class) not under an ``exclude`` path
    (dotted, e.g. ``"spot.available"``). ``blank_defaults``: start blank even where the schema has a default
    (a blank field is omitted, so the default - or a catalogue's value - applies; ``blank_placeholder`` says
    which in the empty input). ``initial``: the form's own
    starting values by dotted path (not bounds: those are only the schema's)."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    labels, initial = labels or {}, initial or {}
    out: list[tuple[Spec, forms.Field]] = []

    def walk(node: dict, path: tuple[str, ...], optional: bool) -> None:
        required_keys = set(node.get("required", []))
        for key, raw in (node.get("properties") or {}).items():
            p = path + (key,)
            dotted = ".".join(p)
            if any(dotted == e or dotted.startswith(e + ".") for e in exclude):
                continue
            prop, nullable = _unwrap(raw, defs)
            if prop is None:
                continue
            is_optional = optional or nullable or key not in required_keys
            if prop.get("type") == "object" and prop.get("properties"):
                walk(prop, p, is_optional)
                continue
            names = (prop.get("propertyNames") or {}).get("enum")
            values = prop.get("additionalProperties")
            if prop.get("type") == "object" and names and isinstance(values, dict):
                leaf, _ = _unwrap(values, defs)
                if leaf is not None and _kind(leaf) in ("integer", "number", "boolean", "string"):
                    for name in names:
                        add(leaf, p + (name,), True, None)
                continue
            add(prop, p, is_optional, prop.get("default"))

    def add(node: dict, p: tuple[str, ...], optional: bool, default: Any) -> None:
        kind = _kind(node)
        if kind is None:
            return
        dotted = ".".join(p)
        label = labels.get(dotted) or " · ".join(humanise(k) for k in p)
        required = not optional and default is None and not blank_defaults
        field = _make_field(node, kind, label=label, required=required, default=default,
                            blank_default=blank_defaults, help_prefix="")
        if field is None:
            return
        if dotted in initial:
            field.initial = initial[dotted]
        if kind in ("integer", "number", "string", "list"):  # what a blank means
            field.widget.attrs["placeholder"] = (blank_placeholder if blank_defaults
                                                 else "" if default in (None, "") else str(default))
        item = (node.get("items") or {}).get("type", "") if kind == "list" else ""
        out.append((Spec(_field_name(prefix, p), p, kind, default, item), field))

    walk(schema, (), False)
    return out


def _convert_list(text: str, item: str) -> list:
    parts = [t.strip() for t in str(text).split(",") if t.strip()]
    if item == "integer":
        return [int(t) for t in parts]
    if item == "number":
        return [float(t) for t in parts]
    return parts


def clean_list(value: str, item: str):
    try:
        return _convert_list(value, item)
    except ValueError:
        raise ValidationError(f"a comma-separated list of {'numbers' if item in ('integer', 'number') else 'names'}"
                              ) from None


def collect(cleaned: dict, specs: list[Spec]) -> dict:
    """The nested JSON the fields describe; blank fields and fields at the schema's default are left out (the
    same meaning), so a nested object none of whose fields is changed is left out too."""
    out: dict = {}
    for spec in specs:
        value = cleaned.get(spec.name)
        if value is None or value == "":
            continue
        if spec.default is not None and value == spec.default:
            continue  # equivalent to leaving it out; keeps an untouched nested object (ttft_prompt.IW-F) out
        if spec.kind == "list":
            value = clean_list(value, spec.item)
            if not value:
                continue
        node = out
        for key in spec.path[:-1]:
            node = node.setdefault(key, {})
        node[spec.path[-1]] = value
    return out


def initial_from(data: dict, specs: list[Spec]) -> dict:
    """Field name -> value from a past JSON (clone-and-edit)."""
    out = {}
    for spec in specs:
        node: Any = data
        for key in spec.path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            continue
        out[spec.name] = ", ".join(str(v) for v in node) if spec.kind == "list" and isinstance(node, list) else node
    return out


def field_for_path(error_path: str, specs: list[Spec], root: tuple[str, ...] = ()) -> str | None:
    """The field a schema error's path (``slo.ttft_s.IW-F``, ``workload.synthetic.burst``) points at: the field
    with that path, else the first field under it (an object-level error), else None."""
    keys = tuple(k for k in re.split(r"\.|\[\d+\]", error_path or "") if k)
    if keys[: len(root)] != root:
        return None
    keys = keys[len(root):]
    if not keys:
        return None
    for spec in specs:
        if spec.path == keys[: len(spec.path)]:
            return spec.name
    for spec in specs:
        if spec.path[: len(keys)] == keys:
            return spec.name
    return None


class SchemaForm(forms.Form):
    """A form whose fields come from schema models: ``add_schema(group, Model, ...)`` adds the fields of one
    model under a group name (``self.groups[group]`` -> bound fields, ``self.specs[group]`` -> specs)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.specs: dict[str, list[Spec]] = {}

    def add_schema(self, group: str, model, **kwargs) -> list[Spec]:
        pairs = schema_fields(model, **kwargs)
        for spec, field in pairs:
            self.fields[spec.name] = field
        self.specs[group] = [spec for spec, _ in pairs]
        return self.specs[group]

    def group(self, name: str, *, only: tuple[str, ...] | None = None, skip: tuple[str, ...] = ()) -> list:
        """The bound fields of a group (``only`` / ``skip``: first JSON keys), in schema order."""
        return [self[s.name] for s in self.specs.get(name, [])
                if (only is None or s.path[0] in only) and s.path[0] not in skip]

    def collect(self, group: str) -> dict:
        return collect(self.cleaned_data, self.specs.get(group, []))

    def clean(self):
        data = super().clean()
        for specs in self.specs.values():
            for spec in specs:
                if spec.kind == "list" and data.get(spec.name):
                    try:
                        clean_list(data[spec.name], spec.item)
                    except ValidationError as exc:
                        self.add_error(spec.name, exc)
        return data


def scalar_field(model, dotted: str, *, label: str, required: bool = False, initial: Any = None,
                 help_text: str = "") -> forms.Field:
    """A form field for one scalar reached by ``dotted`` inside ``model``'s JSON schema, where ``*`` steps into a
    dict's values (``spot_pool.*``: the count per model of a region's spot pool)."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    node: dict = schema
    for key in dotted.split("."):
        node, _ = _unwrap(node["additionalProperties"] if key == "*" else node["properties"][key], defs)
    field = _make_field(node, _kind(node), label=label, required=required, default=node.get("default"),
                        blank_default=False, help_prefix=help_text)
    field.initial = initial
    return field


class SchemaRow(SchemaForm):
    """One row of a list in a schema (``demand[i]``, ``quotas[i]``): every field optional in the form; a row whose
    ``key_fields`` are all blank is left out; the schema reports what a used row lacks, on that row's field."""

    key_fields: tuple[str, ...] = ()

    def optional(self) -> None:
        for field in self.fields.values():
            field.required = False

    def used(self) -> bool:
        data = getattr(self, "cleaned_data", None) or {}
        return any(data.get(k) not in (None, "") for k in self.key_fields)


def rows_formset(form_class, *, prefix: str, data=None, initial=None, extra_rows: int = 0, form_kwargs=None,
                 extra: int = 1):
    """A formset of ``form_class`` rows: bound when ``data`` carries its management form (``extra_rows`` more
    rows on "add a row"), else from ``initial`` plus ``extra`` blank rows."""
    factory = forms.formset_factory(form_class, extra=extra)
    kwargs = {"prefix": prefix, "form_kwargs": form_kwargs or {}}
    if data is not None and f"{prefix}-TOTAL_FORMS" in data:
        if extra_rows:
            data = data.copy()
            data[f"{prefix}-TOTAL_FORMS"] = str(int(data.get(f"{prefix}-TOTAL_FORMS") or 0) + extra_rows)
        return factory(data, **kwargs)
    return factory(initial=initial or [], **kwargs)
