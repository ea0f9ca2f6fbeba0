"""The scenario builder: a comparison scenario from forms instead of JSON, the forms generated from the one schema.

Workload: one of the team's uploaded (characterised) traces, or the synthesiser (``workload.synthetic``) with
its knobs. Fleet: one row per endpoint - region, the model it serves (the trace's name; blank: the deployment's),
a deployment from the hardware catalogue, start count, floor, ceiling, the spot pool of that model in that region,
and any other endpoint field of the schema. SLOs: every target of the schema's ``slo`` section. Strategies: the
comparison strategies and the registered bundles (``bundle_names()``: a new family appears here by registering), schedulers, baseline.

Every knob field (synthesiser, endpoint row, SLO) is generated from the pydantic models of
``simulations.engine.scenario.schema`` by ``planner.schemaforms`` (types, bounds, enums, defaults, descriptions), so a
field added to those models appears here with no template work. The form's output is the scenario dict,
validated by the one schema and parser (``services.validate_scenario``) before anything is stored; a schema
error lands on the field whose path produced it; the JSON produced is shown as the "advanced" view.
"""

from __future__ import annotations

import re

from django import forms

from planner.comparisons.core.variants import SCHEDULERS, STRATEGIES
from planner.comparisons.families import DEFAULT_STRATEGIES
from planner.schemaforms import SchemaForm, field_for_path, initial_from

SLO_MAIN = ("ttft_s", "e2e_s", "percentile")  # shown first; the other SLO fields under "more targets"
# the builder's own starting values (not bounds: those come from the schema only)
SLO_START = {"ttft_s.IW-F": 1.0, "ttft_s.IW-N": 60.0, "e2e_s.NIW": 86400.0}
SYNTH_START = {"duration_s": 3600.0, "total_requests": 20_000}
# the synthesiser's kinds in the builder: the engine's diurnal generator (workload.synthetic without a kind) and
# the generator's renewal streams (simulations/engine/workload/generator/spec.py); batch / slinfer / mix stay JSON
STREAM_FORMS = ("poisson", "gamma")
STREAM_EXCLUDE = ("kind", "name", "description", "lengths.empirical")


def trace_groups(trace) -> list[tuple[str, str]]:
    """The (region, model) pairs a trace's characterisation found, in order."""
    pairs = []
    for g in (trace.characterisation or {}).get("groups", []):
        region, model = (str(g.get("key", "")).split("|") + ["", ""])[:2]
        if region and model and (region, model) not in pairs:
            pairs.append((region, model))
    return pairs


def catalogue(team, *, builtin_only: bool = False) -> list:
    """The deployments a team may pick: the built-ins and the team's own (``builtin_only``: the built-ins)."""
    from django.db.models import Q

    from planner.hardware.models import Deployment

    qs = Deployment.objects.filter(team__isnull=True, builtin=True)
    if not builtin_only:
        qs = Deployment.objects.filter(Q(team=team) | Q(team__isnull=True, builtin=True))
    return list(qs.select_related("gpu", "model").order_by("model__name", "-builtin", "name"))


def grouped_choices(deployments) -> list:
    """Choices grouped by model: (model, [(name, "name: θ N TPS"), ...])."""
    groups: dict[str, list] = {}
    for d in deployments:
        tag = "" if d.builtin else " (yours)"
        groups.setdefault(d.model.name, []).append((d.name, f"{d.name}{tag}: θ {d.theta_tps:,.0f} TPS"))
    return [("", "-")] + list(groups.items())


def default_deployment(deployments, model: str) -> str:
    names = [d.name for d in deployments if d.model.name == model]
    for preferred in ("h100-80gb/tp8", "h100-80gb/tp4", "h100-80gb/tp2"):
        hit = next((n for n in names if n.endswith(preferred)), None)
        if hit:
            return hit
    return names[0] if names else ""


class EndpointRow(SchemaForm):
    """One endpoint: region, deployment (its model follows), spot pool, and the schema's endpoint fields."""

    region = forms.CharField(max_length=200, label="Region", required=False)
    model = forms.CharField(max_length=200, label="Model", required=False,
                            help_text="the model name this endpoint serves, as the trace names it (a trace may use its "
                                      "own names, e.g. model-a); blank: the deployment's model")
    deployment = forms.ChoiceField(label="Deployment (catalogue)", required=False,
                                   help_text="the hardware and latency model the endpoint runs on; '-' leaves the row out")

    def __init__(self, *args, deployments=(), **kwargs):
        super().__init__(*args, **kwargs)
        from planner.schemaforms import scalar_field
        from simulations.engine.scenario import schema

        self.fields["deployment"].choices = grouped_choices(deployments)
        self.models = {d.name: d.model.name for d in deployments}
        self.add_schema("endpoint", schema.Endpoint, exclude=("region", "model", "deployment"))
        self.fields["spot_pool"] = scalar_field(
            schema.Region, "spot_pool.*", label="spot pool", initial=0,
            help_text="warm spot instances of this model in this region at start")

    def clean(self):
        data = super().clean()
        if data.get("deployment") and not data.get("region"):
            self.add_error("region", "name the region of this endpoint")
        return data

    def endpoint(self) -> dict:
        d = self.cleaned_data
        model = (d.get("model") or "").strip() or self.models.get(d["deployment"], "")
        return {"region": d["region"], "model": model,
                "deployment": d["deployment"], **self.collect("endpoint")}


EndpointRows = forms.formset_factory(EndpointRow, extra=0, min_num=1, validate_min=True)


class ScenarioBuilderForm(SchemaForm):
    name = forms.CharField(max_length=200, required=False)
    source = forms.ChoiceField(choices=[("trace", "an uploaded trace"), ("synthetic", "the synthesiser")],
                               widget=forms.RadioSelect, initial="trace", label="Workload")
    trace = forms.TypedChoiceField(coerce=int, required=False, empty_value=None,
                                   help_text="an uploaded trace of your team (characterised)")
    synth_kind = forms.ChoiceField(required=False, choices=[("diurnal", "diurnal (a daily rate curve)")]
                                   + [(k, k) for k in STREAM_FORMS], initial="diurnal", label="Synthesiser",
                                   help_text="which generator; its knobs are below")
    strategies = forms.MultipleChoiceField(choices=[(k, k) for k in STRATEGIES], widget=forms.CheckboxSelectMultiple,
                                           initial=list(DEFAULT_STRATEGIES), required=False)
    bundles = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple, required=False,
                                        help_text="registered strategy bundles (manage.py compare --list-bundles)")
    schedulers = forms.MultipleChoiceField(choices=[(s, s) for s in SCHEDULERS], required=False,
                                           widget=forms.CheckboxSelectMultiple)
    baseline = forms.CharField(max_length=80, initial="reactive-unified", required=False,
                               help_text="a strategy, bundle or variant key; blank: reactive-unified")

    def __init__(self, data=None, *, team=None, traces=(), initial=None, rows=None, extra_rows: int = 0):
        super().__init__(data, initial=initial)
        from planner.comparisons.core.bundles import bundle_names, get_bundle
        from simulations.engine.scenario import schema

        self.team = team
        self.traces = {t.pk: t for t in traces}
        self.fields["trace"].choices = [("", "-")] + [(t.pk, f"#{t.pk} {t.name} ({t.requests:,} requests)")
                                                       for t in traces]
        self.fields["bundles"].choices = [(n, f"{n}: {get_bundle(n).description}") for n in bundle_names()]
        self.fields["strategies"].choices = [(k, k) for k in STRATEGIES]  # after the bundles registered theirs
        self.add_schema("synthetic", schema.Synthetic, prefix="syn__", exclude=("kind",), initial=SYNTH_START)
        from simulations.engine.workload.generator import spec as stream_spec

        for kind in STREAM_FORMS:
            model = getattr(stream_spec, f"{kind.capitalize()}Spec")
            for spec in self.add_schema(kind, model, prefix=f"{kind}__", exclude=STREAM_EXCLUDE):
                self.fields[spec.name].required = False  # only the chosen kind counts; its schema says what is missing
        self.add_schema("slo", schema.SLO, prefix="slo__", initial=SLO_START)
        self.deployments = catalogue(team)
        self.rows = self._rows(data, rows, extra_rows)

    def _rows(self, data, rows, extra_rows):
        kwargs = {"form_kwargs": {"deployments": self.deployments}, "prefix": "ep"}
        if data is not None and "ep-TOTAL_FORMS" in data:
            if extra_rows:
                data = data.copy()
                data["ep-TOTAL_FORMS"] = str(int(data.get("ep-TOTAL_FORMS") or 0) + extra_rows)
            return EndpointRows(data, **kwargs)
        if rows is None:
            trace = self._selected_trace()
            rows = [{"region": r, "model": m, "deployment": default_deployment(self.deployments, m), "max": 20}
                    for r, m in (trace_groups(trace) if trace else [])] or [{"region": "eastus", "max": 20}]
        return EndpointRows(initial=rows, **kwargs)

    def _selected_trace(self):
        raw = self.data.get("trace") if self.is_bound else self.initial.get("trace")
        try:
            return self.traces.get(int(raw))
        except (TypeError, ValueError):
            return None

    def families(self) -> list[dict]:
        """The fleet strategies and bundles by family (families.fleet_families), each option marked ``checked``
        from the form's value and each family ``open`` when one of its options is."""
        from planner.comparisons.families import fleet_families

        chosen = {"strategies": set(self["strategies"].value() or []), "bundles": set(self["bundles"].value() or [])}
        out = []
        for fam in fleet_families():
            options = [{**o, "checked": o["name"] in chosen[o["field"]]} for o in fam["options"]]
            out.append({**fam, "options": options, "open": any(o["checked"] for o in options)})
        return out

    def synthetic_fields(self):
        return self.group("synthetic")

    def synth_panels(self) -> list[tuple[str, list]]:
        """(kind, its generated fields) for every synthesiser kind of the builder."""
        return [("diurnal", self.group("synthetic"))] + [(k, self.group(k)) for k in STREAM_FORMS]

    def _synth_group(self) -> str:
        kind = self.cleaned_data.get("synth_kind") or "diurnal"
        return "synthetic" if kind == "diurnal" else kind

    def slo_main(self):
        return self.group("slo", only=SLO_MAIN)

    def slo_more(self):
        return self.group("slo", skip=SLO_MAIN)

    def is_valid(self) -> bool:
        ok = super().is_valid()
        return self.rows.is_valid() and ok

    def clean(self):
        data = super().clean()
        if data.get("source") == "trace" and data.get("trace") is None:
            self.add_error("trace", "pick one of your traces, or choose the synthesiser")
        if data.get("trace") is not None and data["trace"] not in self.traces:
            self.add_error("trace", "not one of your characterised traces")
        if not data.get("strategies") and not data.get("bundles"):
            self.add_error("strategies", "choose at least one strategy or bundle")
        return data

    def endpoint_forms(self) -> list:
        """The rows that describe an endpoint (a blank extra row is skipped)."""
        return [f for f in self.rows if getattr(f, "cleaned_data", None) and f.cleaned_data.get("deployment")]

    def scenario(self) -> dict:
        """The engine scenario these answers describe."""
        d = self.cleaned_data
        rows = self.endpoint_forms()
        endpoints = [f.endpoint() for f in rows]
        regions: dict[str, dict] = {}
        for f, e in zip(rows, endpoints, strict=True):
            pool = regions.setdefault(e["region"], {})
            pool[e["model"]] = max(pool.get(e["model"], 0), f.cleaned_data.get("spot_pool") or 0)
        if d["source"] == "trace":
            trace = self.traces[d["trace"]]
            workload, default_name = {"trace_id": trace.pk}, f"strategies on trace #{trace.pk} {trace.name}"
        else:
            group = self._synth_group()
            synthetic = self.collect(group) if group == "synthetic" else {"kind": group, **self.collect(group)}
            workload, default_name = {"synthetic": synthetic}, "strategies on a synthesised workload"
        return {
            "name": d.get("name") or default_name,
            "seed": 0,
            "workload": workload,
            "fleet": {"regions": [{"name": r, "spot_pool": {m: n for m, n in pool.items() if n}}
                                  for r, pool in regions.items()],
                      "endpoints": endpoints},
            "slo": self.collect("slo"),
            "strategy": {"autoscaler": "reactive-unified", "scheduler": "fcfs"},
        }

    def place_error(self, path: str, message: str) -> None:
        """Put a schema / variant error on the field whose path produced it (else on the form)."""
        m = re.match(r"^fleet\.endpoints\[(\d+)\]\.?(.*)$", path or "")
        rows = self.endpoint_forms()
        if m and int(m.group(1)) < len(rows):
            row = rows[int(m.group(1))]
            key = m.group(2).split(".")[0] or "deployment"
            row.add_error(key if key in row.fields else None, message)
            return
        m = re.match(r"^fleet\.regions\[(\d+)\]\.spot_pool", path or "")
        if m:
            region = self.scenario_regions()[int(m.group(1))] if int(m.group(1)) < len(self.scenario_regions()) else ""
            row = next((f for f in rows if f.cleaned_data.get("region") == region), None)
            if row is not None:
                row.add_error("spot_pool", message)
                return
        target = (field_for_path(path, self.specs["slo"], ("slo",))
                  or field_for_path(path, self.specs[self._synth_group()], ("workload", "synthetic")))
        if target is None and (path or "").startswith("workload.synthetic"):
            target = "synth_kind"  # an error about the generator as a whole (e.g. "duration_s or requests")
        if target is None:
            head = (path or "").split(".")[0].split("[")[0]
            target = head if head in ("strategies", "bundles", "schedulers", "baseline") else None
            if (path or "").startswith("workload.trace_id"):
                target = "trace"
        self.add_error(target, message if target else f"{path}: {message}")

    def scenario_regions(self) -> list[str]:
        seen = []
        for f in self.endpoint_forms():
            if f.cleaned_data["region"] not in seen:
                seen.append(f.cleaned_data["region"])
        return seen


def initial_from_scenario(form_cls_specs: dict, scenario: dict, variants: list[dict], baseline: str) -> tuple:
    """(form initial, endpoint rows, why-not) to clone a past comparison into the builder; why-not is a sentence
    when the scenario holds something the forms cannot show (then the JSON form is the way)."""
    wl = scenario.get("workload") or {}
    initial: dict = {"name": f"{scenario.get('name', 'comparison')} (copy)"}
    if "trace_id" in wl:
        initial.update(source="trace", trace=wl["trace_id"])
    elif isinstance(wl.get("synthetic"), dict) and wl["synthetic"].get("kind", "diurnal") == "diurnal":
        initial["source"] = "synthetic"
        initial.update(initial_from(wl["synthetic"], form_cls_specs["synthetic"]))
    elif isinstance(wl.get("synthetic"), dict) and wl["synthetic"].get("kind") in STREAM_FORMS:
        kind = wl["synthetic"]["kind"]
        initial.update(source="synthetic", synth_kind=kind)
        initial.update(initial_from(wl["synthetic"], form_cls_specs[kind]))
    else:
        return initial, [], "its workload (a bundled trace or a synthesiser spec) is only editable as JSON"
    initial.update(initial_from(scenario.get("slo") or {}, form_cls_specs["slo"]))
    pools = {}
    for r in (scenario.get("fleet") or {}).get("regions", []):
        if isinstance(r, dict):
            pools[r.get("name")] = r.get("spot_pool") or {}
    rows = []
    for e in (scenario.get("fleet") or {}).get("endpoints", []):
        if not isinstance(e.get("deployment"), str):
            return initial, [], "an endpoint carries an inline deployment spec, only editable as JSON"
        row = {"region": e.get("region", ""), "model": e.get("model", ""), "deployment": e["deployment"],
               "spot_pool": pools.get(e.get("region"), {}).get(e.get("model"), 0)}
        row.update({k: v for k, v in e.items() if k not in ("region", "model", "deployment")})
        rows.append(row)
    initial["strategies"] = sorted({v["strategy"] for v in variants if not v.get("bundle") and not v.get("scheduler")
                                    and v.get("role") != "tuning"})
    initial["bundles"] = sorted({v["bundle"] for v in variants if v.get("bundle")})
    initial["schedulers"] = sorted({v["scheduler"] for v in variants if v.get("scheduler")})
    initial["baseline"] = (baseline or "").split("@")[0]
    return initial, rows, ""
