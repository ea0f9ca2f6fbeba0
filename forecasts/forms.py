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
        traces = list(traces)
        self.fields["trace"].choices = [(t.pk, f"#{t.pk} {t.name}") for t in traces]
        # the page's script puts these in when the planner picks another trace (a 1-hour trace gets a 30-minute
        # backtest, not the day-long one of the trace the form started on)
        self.trace_defaults = {str(t.pk): coherent_defaults(t.span_s) for t in traces}
        if not self.is_bound and traces:  # defaults that fit the trace the form starts on
            wanted = str((self.initial or {}).get("trace") or "")
            trace = next((t for t in traces if str(t.pk) == wanted), traces[0])
            self.initial = {**(self.initial or {}), "trace": trace.pk, **coherent_defaults(trace.span_s)}


def _span_text(seconds: float) -> str:
    if seconds >= 86400 and seconds % 86400 == 0:
        return f"{int(seconds // 86400)}d"
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    return f"{max(1, int(seconds // 60))}min"


def coherent_defaults(span_s: float) -> dict:
    """Horizon and backtest that fit a trace of ``span_s`` seconds: the house defaults (1 h ahead, 2 days held
    out) when the trace is long enough, else at most a quarter (horizon) and half (backtest) of its span, in whole
    resolution steps, so a backtest can run at all."""
    span = float(span_s or 0)
    if span >= 4 * 86400:
        return {"horizon": "1h", "backtest": "2d", "resolution": "5min"}
    resolution = 300 if span >= 6 * 3600 else 60
    step = lambda x: max(resolution, int(x // resolution) * resolution)  # noqa: E731
    horizon = min(3600, step(span / 4))
    backtest = step(span / 2)
    return {"horizon": _span_text(horizon), "backtest": _span_text(backtest),
            "resolution": "5min" if resolution == 300 else "1min"}
