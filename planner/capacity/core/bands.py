"""Risk bands: a KPI over N draws as its median with [p5, p95], and "meets the SLO with probability p".

A draw is one replay of the workload with a new seed (or, for plans, hourly demand sampled from the
forecast's intervals). The band is empirical (numpy's linear-interpolated percentiles of the draws); the
probability is the share of draws that met the target, with a Wilson score interval so a reader sees how
much 20 draws can say.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

DEFAULT_DRAWS = 20


def band(values: Iterable[float | None], lo: float = 5.0, hi: float = 95.0) -> dict:
    """{"median", "p5", "p95", "n"} of the finite values (None when there are none)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(float(v))], dtype=float)
    if x.size == 0:
        return {"median": None, "p5": None, "p95": None, "n": 0}
    q = np.percentile(x, [50.0, lo, hi])
    return {"median": float(q[0]), "p5": float(q[1]), "p95": float(q[2]), "n": int(x.size)}


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion (works at 0 and n, unlike the normal approximation)."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def probability(flags: Sequence[bool]) -> dict:
    """Share of draws that met a target: {"p", "met", "n", "low", "high"} (Wilson 95 %)."""
    n = len(flags)
    met = int(sum(bool(f) for f in flags))
    low, high = wilson(met, n)
    return {"p": met / n if n else None, "met": met, "n": n, "low": low, "high": high}


def bands_of(draws: Sequence[Mapping], keys: Sequence[str]) -> dict:
    """A band per KPI for a list of per-draw dicts, e.g. ``bands_of(draws, ["cost_usd", "gpu_hours"])``."""
    return {k: band(d.get(k) for d in draws) for k in keys}


def fmt_band(b: Mapping, fmt: str = "{:,.0f}", scale: float = 1.0) -> str:
    """'61,375 [60,900, 61,800]' for a page or a PDF cell; an em dash when the band is empty; the value alone,
    marked, when it rests on one draw (a band of one value says nothing)."""
    if not b or b.get("median") is None:
        return "\u2014"
    if b.get("n") == 1:
        return fmt.format(b["median"] * scale) + " (one draw, no band)"
    return (fmt.format(b["median"] * scale) + " [" + fmt.format(b["p5"] * scale) + ", "
            + fmt.format(b["p95"] * scale) + "]")


def sig_decimals(b: Mapping, digits: int = 3) -> int:
    """Decimals that show ``digits`` significant digits of the band's largest value (none for 100 and above):
    a few GPU-hours of a short simulated span read 0.0123 [0.0119, 0.0131], not 0 [0, 0]."""
    values = [abs(float(b[k])) for k in ("median", "p5", "p95") if b.get(k) is not None]
    top = max(values, default=0.0)
    if top == 0.0 or not math.isfinite(top):
        return 0
    return max(0, digits - 1 - math.floor(math.log10(top)))


def fmt_sig_band(b: Mapping, digits: int = 3) -> str:
    """``fmt_band`` with enough decimals for ``digits`` significant digits (``sig_decimals``)."""
    if not b or b.get("median") is None:
        return fmt_band(b)
    return fmt_band(b, "{:,." + str(sig_decimals(b, digits)) + "f}")
