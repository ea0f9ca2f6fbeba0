"""Filters of the decision card (templates/decisions/_card.html): bands and probabilities as text."""

from __future__ import annotations

from django import template

from planner.capacity.core.bands import fmt_band, fmt_sig_band, sig_decimals

register = template.Library()


@register.filter
def money_band(b) -> str:
    return fmt_band(b or {}, "${:,.0f}")


@register.filter
def pct_band(b) -> str:
    return fmt_band(b or {}, "{:.2%}")


@register.filter
def num_band(b) -> str:
    """A quantity's band with three significant digits (GPU-hours of a short span are fractions)."""
    return fmt_sig_band(b or {})


@register.filter
def sig(x) -> str:
    """A single measured figure with three significant digits (an em dash when unknown)."""
    if x is None:
        return "\u2014"
    return f"{x:,.{sig_decimals({'median': x})}f}"


@register.filter
def prob(p) -> str:
    """'0.95 [0.76, 0.99]': the share of draws and its Wilson 95 % interval."""
    if not p or p.get("p") is None:
        return "\u2014"
    return f"{p['p']:.2f} [{p['low']:.2f}, {p['high']:.2f}]"


@register.filter
def pct(x) -> str:
    return "\u2014" if x is None else f"{float(x):.1%}"
