from __future__ import annotations

from django import forms

from forecasts.core.backtest import DEFAULT_CANDIDATES
from forecasts.core.series import GROUP_COLUMNS, METRICS


class ForecastRunForm(forms.Form):
    """The page form; validation is the API serializer's (one set of rules, same messages)."""

    trace = forms.TypedChoiceField(coerce=int, choices=())
    group_by = forms.MultipleChoiceField(
        choices=[(c, c) for c in GROUP_COLUMNS],
        initial=list(GROUP_COLUMNS),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    metrics = forms.MultipleChoiceField(
        choices=[(m, m) for m in METRICS], initial=["input_tps"], widget=forms.CheckboxSelectMultiple
    )
    method = forms.ChoiceField(
        choices=[("auto", "auto (best backtest)")] + [(m, m) for m in DEFAULT_CANDIDATES], initial="auto"
    )
    resolution = forms.ChoiceField(
        choices=[("1min", "1 min"), ("5min", "5 min"), ("15min", "15 min"), ("60min", "60 min")], initial="5min"
    )
    horizon = forms.CharField(initial="1h", help_text="e.g. 1h, 30min")
    backtest = forms.CharField(initial="2d", help_text="trailing span held out for the backtest")

    def __init__(self, *args, traces=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["trace"].choices = [(t.pk, f"#{t.pk} {t.name}") for t in traces]
