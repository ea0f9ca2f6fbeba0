"""The forms of the comparison kinds other than fleet strategies, generated from their schemas: a serverless
(SLINFER) scenario and an operator-level plan. The builder (/comparisons/build/) shows them beside the fleet
scenario's forms; /simulations/serverless/ runs the same serverless form as a single run.

Each form's ``scenario()`` is the JSON its kind parses (``kinds.parse_request``); ``place_error`` puts the kind's
error (a dotted path) on the field whose path produced it, else at the top of the form. Model and GPU names are
the hardware catalogue's.
"""

from __future__ import annotations

from django import forms

from planner.comparisons.core.serverless import DEFAULT_BASELINE, DEFAULT_SYSTEMS, DESCRIPTIONS, SYSTEMS
from planner.schemaforms import SchemaForm, field_for_path

SERVERLESS_START = {"workload.models": 32, "workload.duration_s": 300.0}
SERVERLESS_MAIN = ("workload", "nodes")  # shown first; the systems' knobs (params) under "more"


def system_choices() -> list[tuple[str, str]]:
    return [(name, name) for name in SYSTEMS]


class ServerlessForm(SchemaForm):
    """A serverless scenario: many models sharing CPU and GPU nodes; the systems to compare and the baseline."""

    name = forms.CharField(max_length=200, required=False)
    model = forms.ChoiceField(label="Model (catalogue)", help_text="every model of the trace is a replica of this "
                                                                   "one; latency from the SLINFER authors' tables")
    systems = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, initial=DEFAULT_SYSTEMS, required=False)
    baseline = forms.ChoiceField(initial=DEFAULT_BASELINE, label="Baseline system")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from simulations.engine.serverless import spec

        self.fields["model"].choices = [(m, m) for m in spec.CATALOGUE_MODELS]
        self.fields["model"].initial = "llama2-7b"
        self.fields["systems"].choices = system_choices()
        self.fields["baseline"].choices = system_choices()
        self.add_schema("spec", spec.ServerlessSpec, exclude=("name", "systems", "model"), initial=SERVERLESS_START)
        from simulations.engine.workload.generator.slinfer import bundled_traces

        trace = self.fields["workload__trace"]  # the bundled function traces by name, not free text
        self.fields["workload__trace"] = forms.ChoiceField(
            choices=[(t, t) for t in bundled_traces()], label=trace.label, initial=trace.initial, required=False,
            help_text="the SLINFER artefact's function traces (fixtures/traces/slinfer)")

    def main_fields(self):
        return self.group("spec", only=SERVERLESS_MAIN)

    def more_fields(self):
        return self.group("spec", skip=SERVERLESS_MAIN)

    def system_options(self) -> list[dict]:
        """[{name, text, checked}] for the systems, each with its own description."""
        chosen = self.systems_value()
        return [{"name": n, "text": DESCRIPTIONS.get(n, ""), "checked": n in chosen} for n in SYSTEMS]

    def systems_value(self) -> list[str]:
        value = self["systems"].value() or []
        return list(value) if isinstance(value, list | tuple) else [value]

    def clean(self):
        data = super().clean()
        if not data.get("systems"):
            self.add_error("systems", "tick at least one system")
        elif data.get("baseline") and data["baseline"] not in data["systems"]:
            self.add_error("baseline", f"the baseline {data['baseline']} is not among the ticked systems")
        return data

    def engine_systems(self) -> list[str]:
        """The engine systems the ticked ones run (an ablation is SLINFER with one parameter overridden)."""
        return list(dict.fromkeys(SYSTEMS[s][0] for s in self.cleaned_data["systems"]))

    def ablations(self) -> list[str]:
        """The ticked systems that are an engine system with overrides (they run only as a comparison's variants)."""
        return [s for s in self.cleaned_data["systems"] if SYSTEMS[s][1]]

    def scenario(self) -> dict:
        d = self.cleaned_data
        body = self.collect("spec")
        name = d.get("name") or (f"{d['model']}: {', '.join(d['systems'])} on {body.get('nodes', {}).get('cpu', 4)} "
                                 f"CPU + {body.get('nodes', {}).get('gpu', 4)} GPU nodes")
        return {"kind": "serverless", "name": name[:200], "model": d["model"], "systems": self.engine_systems(), **body}

    def place_error(self, path: str, message: str) -> None:
        path = (path or "").removeprefix("scenario.")
        head = path.split(".")[0].split("[")[0]
        if head in ("model", "systems", "baseline", "name"):
            self.add_error(head, message)
            return
        self.add_error(field_for_path(path, self.specs["spec"]), message if path else message)


class OperatorLevelForm(forms.Form):
    """An operator-level comparison: one of the team's traces, a catalogue model and GPU type, the window."""

    name = forms.CharField(max_length=200, required=False)
    trace = forms.TypedChoiceField(coerce=int, empty_value=None, required=False,
                                   help_text="one of your team's traces")
    model = forms.ChoiceField(label="Model (catalogue)")
    gpu = forms.ChoiceField(label="GPU type (catalogue)")
    window_s = forms.FloatField(min_value=1.0, max_value=86400.0, initial=60.0, label="Window (s)",
                                help_text="each window of the trace is planned on its own (1 s to 1 day)")

    def __init__(self, *args, traces=(), **kwargs):
        super().__init__(*args, **kwargs)
        from planner.opscale.spec import CATALOGUE_GPUS, CATALOGUE_MODELS

        self.fields["trace"].choices = [("", "-")] + [(t.pk, f"#{t.pk} {t.name}") for t in traces]
        self.fields["model"].choices = [(m, m) for m in sorted(CATALOGUE_MODELS)]
        self.fields["model"].initial = "llama3.1-8b"
        self.fields["gpu"].choices = [(g, g) for g in sorted(CATALOGUE_GPUS)]
        self.fields["gpu"].initial = "a100-80gb"

    def clean(self):
        data = super().clean()
        if data.get("trace") is None and "trace" not in self.errors:
            self.add_error("trace", "pick one of your traces (upload one first if there is none)")
        return data

    def scenario(self) -> dict:
        d = self.cleaned_data
        return {"kind": "operator-level", "model": d["model"], "gpu": d["gpu"],
                "workload": {"trace_id": d["trace"], "window_s": d["window_s"]}}

    def place_error(self, path: str, message: str) -> None:
        path = (path or "").removeprefix("scenario.")
        target = {"model": "model", "gpu": "gpu", "workload.trace_id": "trace", "workload.window_s": "window_s",
                  "name": "name"}.get(path)
        self.add_error(target, message)
