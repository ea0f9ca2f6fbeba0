"""Methods built from single methods (single.py): an equal-weight ensemble and a log1p transform."""

from __future__ import annotations

import numpy as np

from forecasts.core.methods.base import InsufficientHistory, Method
from forecasts.core.methods.single import make_single

DEFAULT_ENSEMBLE = ("seasonal_naive_daily", "arima_fourier", "holt_winters")


class Ensemble(Method):
    """Equal-weight average of member forecasts (means and interval bounds averaged).

    Members that cannot fit the history (too short) are left out; the ones used are in describe().
    """

    name = "ensemble"

    def __init__(self, resolution_s: int, members=DEFAULT_ENSEMBLE, **params):
        super().__init__(resolution_s, **params)
        self.member_names = tuple(members)

    def fit(self, y, start, warm=None):
        self.members = []
        self.skipped = {}
        previous = {m.name: m for m in getattr(warm, "members", [])}
        for name in self.member_names:
            member = make_single(name, self.resolution_s, role="ensemble member")
            try:
                member.fit(y, start, warm=previous.get(name))
            except InsufficientHistory as exc:
                self.skipped[name] = str(exc)
                continue
            self.members.append(member)
        if not self.members:
            raise InsufficientHistory(f"ensemble: no member can fit ({'; '.join(self.skipped.values())})")
        self.end = start + len(y)

    def update(self, y_new):
        for member in self.members:
            member.update(y_new)
        self.end += len(y_new)

    def predict(self, h, level):
        parts = [member.predict(h, level) for member in self.members]
        return tuple(np.mean([p[i] for p in parts], axis=0) for i in range(3))

    def describe(self):
        return {"method": self.name, "members": [m.describe() for m in self.members], "skipped": self.skipped}


class LogTransformed(Method):
    """Any method on log(1 + y): multiplicative seasonality (a weekend that scales the whole daily
    curve) becomes additive. Bounds map back exactly (quantiles survive a monotone transform); the
    point forecast maps back to the median, not the mean (slightly low for skewed errors)."""

    def __init__(self, resolution_s: int, base: str = "arima_fourier", **params):
        super().__init__(resolution_s)
        self.base = make_single(base, resolution_s, role="base of a log transform", **params)
        self.name = f"{self.base.name}_log"

    def fit(self, y, start, warm=None):
        self.base.fit(np.log1p(np.maximum(np.asarray(y, dtype=float), 0.0)), start, warm=getattr(warm, "base", None))
        self.end = self.base.end

    def update(self, y_new):
        self.base.update(np.log1p(np.maximum(np.asarray(y_new, dtype=float), 0.0)))
        self.end = self.base.end

    def predict(self, h, level):
        return tuple(np.expm1(np.clip(part, -50.0, 50.0)) for part in self.base.predict(h, level))

    def describe(self):
        return {**self.base.describe(), "method": self.name, "transform": "log1p"}
