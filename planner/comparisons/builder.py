"""The scenario builder: a comparison scenario from forms instead of JSON.

Workload: one of the team's uploaded (characterised) traces. Fleet: one endpoint per (region, model) the
trace contains, each on a deployment picked from the hardware catalogue for that model (built-ins and the
team's own), with floors and ceilings, a starting count and a spot pool per region. SLOs: the TTFT targets
of the interactive tiers and the batch deadline. Strategies and baseline as on the JSON form.

The form's output is the engine scenario dict, checked by the one scenario schema and parser
(simulations.engine.schema through services.validate_scenario) before anything is stored; the JSON it produced is shown
as the "advanced" view and kept on error.
"""

from __future__ import annotations

import re

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from planner.comparisons.core.variants import SCHEDULERS, STRATEGIES


def schema_bounds(model, field: str) -> dict:
    """{"min_value", "max_value"} of a field of the scenario schema (simulations.engine.schema), so the form
    accepts exactly what the schema does."""
    out = {}
    for item in model.model_fields[field].metadata:
        if hasattr(item, "ge"):
            out["min_value"] = item.ge
        if hasattr(item, "le"):
            out["max_value"] = item.le
    return out


def _bounds():
    from simulations.engine import schema

    seconds = schema.Seconds.__metadata__[0].metadata  # Annotated[float, Field(ge=..., le=...)]
    sec = {k: v for item in seconds for k, v in (("min_value", getattr(item, "ge", None)),
                                                 ("max_value", getattr(item, "le", None))) if v is not None}
    return {"initial": schema_bounds(schema.Endpoint, "initial"),
            "min_instances": schema_bounds(schema.Endpoint, "min_instances"),
            "max_instances": schema_bounds(schema.Endpoint, "max_instances"), "seconds": sec}


# where a schema error's path points -> the form field that produced it
_ERROR_FIELDS = [(r"^fleet\.endpoints\[\d+\]\.initial", "initial"), (r"^fleet\.endpoints\[\d+\]\.min", "min_instances"),
                 (r"^fleet\.endpoints\[\d+\]\.max", "max_instances"), (r"^fleet\.regions\[\d+\]\.spot_pool", "spot_pool"),
                 (r"^slo\.ttft_s\.IW-F", "ttft_iwf"), (r"^slo\.ttft_s\.IW-N", "ttft_iwn"), (r"^slo\.e2e_s\.NIW", "niw_deadline"),
                 (r"^strategies", "strategies"), (r"^schedulers", "schedulers"), (r"^baseline", "baseline")]


def form_field_for(error_path: str) -> str | None:
    for pattern, name in _ERROR_FIELDS:
        if re.match(pattern, error_path or ""):
            return name
    return None


def trace_groups(trace) -> list[tuple[str, str]]:
    """The (region, model) pairs a trace's characterisation found, in order."""
    pairs = []
    for g in (trace.characterisation or {}).get("groups", []):
        region, model = (str(g.get("key", "")).split("|") + ["", ""])[:2]
        if region and model and (region, model) not in pairs:
            pairs.append((region, model))
    return pairs


def deployment_choices(team, model: str) -> list[tuple[str, str]]:
    from django.db.models import Q

    from planner.hardware.models import Deployment

    qs = Deployment.objects.filter(Q(team=team) | Q(team__isnull=True, builtin=True), model__name=model)
    out = []
    for d in qs.select_related("gpu").order_by("-builtin", "name"):
        tag = "" if d.builtin else " (yours)"
        out.append((d.name, f"{d.name}{tag}: θ {d.theta_tps:,.0f} TPS"))
    return out


def _default_deployment(choices: list[tuple[str, str]]) -> str:
    names = [c[0] for c in choices]
    for preferred in ("h100-80gb/tp8", "h100-80gb/tp4", "h100-80gb/tp2"):
        hit = next((n for n in names if n.endswith(preferred)), None)
        if hit:
            return hit
    return names[0] if names else ""


class ScenarioBuilderForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    trace = forms.TypedChoiceField(coerce=int, help_text="an uploaded trace of your team (characterised)")
    # bounds come from simulations.engine.schema in __init__
    initial = forms.IntegerField(initial=2, help_text="instances per endpoint at start")
    min_instances = forms.IntegerField(initial=1, label="Floor (min instances)")
    max_instances = forms.IntegerField(initial=20, label="Ceiling (max instances)")
    spot_pool = forms.IntegerField(initial=2, help_text="warm spot instances per model in each region at start")
    ttft_iwf = forms.FloatField(initial=1.0, label="IW-F TTFT target (s)")
    ttft_iwn = forms.FloatField(initial=60.0, label="IW-N TTFT target (s)")
    niw_deadline = forms.FloatField(initial=86400.0, label="NIW deadline (s)")
    strategies = forms.MultipleChoiceField(choices=[(k, k) for k in STRATEGIES], widget=forms.CheckboxSelectMultiple,
                                           initial=["reactive-unified", "lt-i", "lt-u", "lt-ua"])
    schedulers = forms.MultipleChoiceField(choices=[(s, s) for s in SCHEDULERS], required=False,
                                           widget=forms.CheckboxSelectMultiple)
    baseline = forms.CharField(max_length=80, initial="reactive-unified")

    def __init__(self, *args, team=None, traces=(), **kwargs):
        super().__init__(*args, **kwargs)
        bounds = _bounds()  # from the one scenario schema: the form accepts what the schema accepts
        for name, key in (("initial", "initial"), ("min_instances", "min_instances"),
                          ("max_instances", "max_instances"), ("spot_pool", "initial"),
                          ("ttft_iwf", "seconds"), ("ttft_iwn", "seconds"), ("niw_deadline", "seconds")):
            field, lo, hi = self.fields[name], bounds[key].get("min_value"), bounds[key].get("max_value")
            field.validators = [v for v in field.validators
                                if not isinstance(v, (MinValueValidator, MaxValueValidator))]
            if lo is not None:
                field.min_value = lo
                field.validators.append(MinValueValidator(lo))
                field.widget.attrs["min"] = lo
            if hi is not None:
                field.max_value = hi
                field.validators.append(MaxValueValidator(hi))
                field.widget.attrs["max"] = hi
        self.team = team
        self.traces = {t.pk: t for t in traces}
        self.fields["trace"].choices = [(t.pk, f"#{t.pk} {t.name} ({t.requests:,} requests)") for t in traces]
        trace = self._selected_trace()
        self.endpoint_fields = []
        for region, model in trace_groups(trace) if trace else []:
            choices = deployment_choices(team, model)
            key = f"dep__{region}__{model}"
            self.fields[key] = forms.ChoiceField(choices=choices or [("", "no deployment of this model")],
                                                 initial=_default_deployment(choices),
                                                 label=f"{region} / {model}")
            self.endpoint_fields.append((region, model, key))

    def _selected_trace(self):
        raw = self.data.get("trace") if self.is_bound else self.initial.get("trace")
        try:
            return self.traces.get(int(raw))
        except (TypeError, ValueError):
            return None

    def clean(self):
        data = super().clean()
        if data.get("min_instances") is not None and data.get("max_instances") is not None:
            if data["min_instances"] > data["max_instances"]:
                self.add_error("max_instances", "must be at least the floor")
        if not self.endpoint_fields and data.get("trace") is not None:
            raise forms.ValidationError("this trace has no (region, model) groups yet: wait for its characterisation")
        for _region, model, key in self.endpoint_fields:
            if not data.get(key):
                self.add_error(key, f"the hardware catalogue has no deployment of {model}; add one first")
        return data

    def scenario(self) -> dict:
        """The engine scenario these answers describe."""
        d = self.cleaned_data
        trace = self.traces[d["trace"]]
        lo, hi = d["min_instances"], d["max_instances"]
        start = min(max(d["initial"], lo), hi)
        regions = sorted({r for r, _, _ in self.endpoint_fields})
        models = sorted({m for _, m, _ in self.endpoint_fields})
        return {
            "name": d.get("name") or f"strategies on trace #{trace.pk} {trace.name}",
            "seed": 0,
            "workload": {"trace_id": trace.pk},
            "fleet": {
                "regions": [{"name": r, "spot_pool": {m: d["spot_pool"] for m in models}} for r in regions],
                "endpoints": [{"region": r, "model": m, "deployment": d[key], "initial": start, "min": lo, "max": hi}
                              for r, m, key in self.endpoint_fields],
            },
            "slo": {"ttft_s": {"IW-F": d["ttft_iwf"], "IW-N": d["ttft_iwn"]}, "e2e_s": {"NIW": d["niw_deadline"]}},
            "strategy": {"autoscaler": "reactive-unified", "scheduler": "fcfs"},
        }
