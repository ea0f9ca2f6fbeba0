"""Figures of the board as the page shows them: mean [95 % interval]."""

from django import template

register = template.Library()


@register.filter
def band(st, digits="1"):
    if not st:
        return "–"
    d = int(digits)
    return f"{st['mean']:,.{d}f} [{st['lo']:,.{d}f}, {st['hi']:,.{d}f}]"


@register.filter
def band_pct(st):
    if not st:
        return "–"
    return f"{100 * st['mean']:.1f} % [{100 * st['lo']:.1f}, {100 * st['hi']:.1f}]"


@register.filter
def pct(x):
    return "–" if x is None else f"{100 * float(x):.1f} %"


@register.filter
def point(p):
    if not p:
        return "defaults"
    return ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in p.items())


@register.filter
def saving_words(x):
    """'saves 12.3 %' or 'costs 49.8 % more' (GPU-hours against the baseline); a dash when there is none."""
    if x is None:
        return "\u2013"
    x = float(x)
    return f"saves {x:.1f} %" if x >= 0 else f"costs {-x:.1f} % more"
