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

from django import forms

from planner.comparisons.core.variants import SCHEDULERS, STRATEGIES


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
    initial = forms.IntegerField(min_value=0, max_value=500, initial=2, help_text="instances per endpoint at start")
    min_instances = forms.IntegerField(min_value=0, max_value=500, initial=1, label="Floor (min instances)")
    max_instances = forms.IntegerField(min_value=1, max_value=500, initial=20, label="Ceiling (max instances)")
    spot_pool = forms.IntegerField(min_value=0, max_value=500, initial=2,
                                   help_text="warm spot instances per model in each region at start")
    ttft_iwf = forms.FloatField(min_value=0.01, initial=1.0, label="IW-F TTFT target (s)")
    ttft_iwn = forms.FloatField(min_value=0.01, initial=60.0, label="IW-N TTFT target (s)")
    niw_deadline = forms.FloatField(min_value=1, initial=86400.0, label="NIW deadline (s)")
    strategies = forms.MultipleChoiceField(choices=[(k, k) for k in STRATEGIES], widget=forms.CheckboxSelectMultiple,
                                           initial=["reactive-unified", "lt-i", "lt-u", "lt-ua"])
    schedulers = forms.MultipleChoiceField(choices=[(s, s) for s in SCHEDULERS], required=False,
                                           widget=forms.CheckboxSelectMultiple)
    baseline = forms.CharField(max_length=80, initial="reactive-unified")

    def __init__(self, *args, team=None, traces=(), **kwargs):
        super().__init__(*args, **kwargs)
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
