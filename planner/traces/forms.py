from __future__ import annotations

import json
from pathlib import Path

from django import forms
from django.conf import settings
from django.core.validators import MaxValueValidator

from planner.ingest.limits import ASSIGNMENT_MAX_CHARS, MAX_TIME_SCALE, MIN_RATE, MIN_TIME_SCALE, SEED_MAX

FORMATS = [
    ("auto", "auto-detect"),
    ("azure", "Azure LLM inference CSV"),
    ("burstgpt", "BurstGPT CSV"),
    ("mooncake", "Mooncake JSON lines"),
    ("native", "native CSV / JSON lines"),
]
WORKLOADS = Path(settings.BASE_DIR) / "fixtures" / "workloads"


class UploadForm(forms.Form):
    """The upload page's fields, with the API's bounds (planner/traces/api/serializers.py)."""

    file = forms.FileField(help_text="CSV or JSON lines, plain or gzip", allow_empty_file=True)
    name = forms.CharField(required=False, max_length=200, help_text="defaults to the file name")
    format = forms.ChoiceField(choices=FORMATS, initial="auto")
    region = forms.CharField(required=False, max_length=ASSIGNMENT_MAX_CHARS,
                             help_text='e.g. us-east, or us-east:0.5,us-west:0.5, or {"column": "..."}')
    model = forms.CharField(required=False, max_length=ASSIGNMENT_MAX_CHARS,
                            help_text="a value, ratios or a column mapping")
    tier = forms.CharField(required=False, max_length=ASSIGNMENT_MAX_CHARS,
                           help_text="IW-F, IW-N, NIW, or ratios like IW-F:0.45,IW-N:0.27,NIW:0.28")
    time_scale = forms.FloatField(required=False, min_value=MIN_TIME_SCALE, max_value=MAX_TIME_SCALE,
                                  help_text="0.5 compresses time to half")
    rate = forms.FloatField(required=False, min_value=MIN_RATE,
                            help_text="0.5 thins, 2 doubles (replicas jittered); at most TRACE_MAX_RATE_MULTIPLIER")
    jitter_s = forms.FloatField(required=False, min_value=0, max_value=86400,
                                help_text="replica jitter window, seconds (default 1)")
    seed = forms.IntegerField(required=False, min_value=0, max_value=SEED_MAX,
                              help_text="makes splits and rate changes reproducible")
    description = forms.CharField(required=False, max_length=10_000, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cap = settings.TRACE_MAX_RATE_MULTIPLIER  # the operator's cap, the same as the API's
        self.fields["rate"].max_value = cap
        self.fields["rate"].validators.append(MaxValueValidator(cap))
        self.fields["rate"].widget.attrs["max"] = cap

    def options(self) -> dict:
        return {
            k: self.cleaned_data[k]
            for k in ("time_scale", "rate", "jitter_s", "seed")
            if self.cleaned_data.get(k) is not None
        }


def workload_choices() -> list[tuple[str, str]]:
    return [(p.stem, p.stem) for p in sorted(WORKLOADS.glob("*.json"))]


class SynthForm(forms.Form):
    name = forms.CharField(required=False, max_length=200)
    spec = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 22, "cols": 100, "spellcheck": "false"}),
        help_text="JSON; see docs/traces.md for every key",
    )
    seed = forms.IntegerField(required=False, min_value=0, help_text="overrides the spec's seed")
    token_trace = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, help_text="sample token lengths from one of your traces"
    )

    def __init__(self, *args, traces=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["token_trace"].choices = [("", "spec's own distributions")] + [
            (t.pk, f"#{t.pk} {t.name}") for t in traces
        ]

    def clean_spec(self):
        try:
            spec = json.loads(self.cleaned_data["spec"])
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
        if not isinstance(spec, dict):
            raise forms.ValidationError("the spec must be a JSON object")
        return spec
