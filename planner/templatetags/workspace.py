"""Formatting for the workspace pages: money with thousands separators, percentages, durations, query links."""

from __future__ import annotations

import math

from django import template

register = template.Library()


def _finite(x):
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


@register.filter
def money(x, digits=0):
    """$12,345 (or -$1,234); '-' when missing."""
    x = _finite(x)
    if x is None:
        return "–"
    sign = "-" if x < 0 else ""
    return f"{sign}${abs(x):,.{int(digits)}f}"


@register.filter
def num(x, digits=1):
    x = _finite(x)
    return "–" if x is None else f"{x:,.{int(digits)}f}"


@register.filter
def pct(x, digits=1):
    """A value already in percent: 99.98 -> '99.98 %'."""
    x = _finite(x)
    return "–" if x is None else f"{x:,.{int(digits)}f} %"


@register.filter
def frac_pct(x, digits=1):
    """A fraction shown as a percentage: 0.9998 -> '99.98 %' (one convention on every page)."""
    x = _finite(x)
    return "–" if x is None else f"{100 * x:,.{int(digits)}f} %"


@register.filter
def duration(seconds):
    """Wall time in words: 0.4 s, 12.3 s, 4 min 05 s, 2 h 03 min."""
    s = _finite(seconds)
    if s is None:
        return "–"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


@register.simple_tag(takes_context=True)
def query(context, **changes):
    """The current query string with some parameters changed (pagination and sort links keep the filters)."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = value
    return "?" + params.urlencode() if params else "?"


def _formsets(form) -> list:
    rows = getattr(form, "rows", None)
    if rows is None:
        return []
    if isinstance(rows, dict):
        return list(rows.values())
    return [rows] if hasattr(rows, "forms") else []


@register.simple_tag
def form_problems(form) -> list[dict]:
    """Every error of a form, its nested row formsets included, as [{label, message, anchor}], for the summary
    at the top of the form (each error is also shown on its field). A list of such dicts is passed through (a
    JSON form's problems, listed by the view)."""
    if isinstance(form, list):
        return form
    if form is None or not getattr(form, "is_bound", False):
        return []
    out = [{"label": "", "message": str(e), "anchor": ""} for e in form.non_field_errors()]
    for field in form:
        for e in field.errors:
            out.append({"label": str(field.label or field.name), "message": str(e), "anchor": field.id_for_label or ""})
    for formset in _formsets(form):
        out += [{"label": "", "message": str(e), "anchor": ""} for e in formset.non_form_errors()]
        for i, row in enumerate(formset.forms, start=1):
            for name, errors in row.errors.items():
                label = row.fields[name].label or name if name in row.fields else ""
                for e in errors:
                    out.append({"label": f"row {i}" + (f", {label}" if label else ""), "message": str(e),
                                "anchor": row[name].id_for_label if name in row.fields else ""})
    return out


@register.filter
def job_status(job) -> str:
    """The status a person should read for a job (planner.jobs.views.display_state): a forecast run that needs
    review says so, a parent whose children run is running."""
    from planner.jobs.views import display_state

    return display_state(job)[0]
