"""The energy block of a scenario and a deployment's ``device`` block: what a run is told about power and
electricity prices (results/energy.py turns them into kWh and cost)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simulations.engine.scenario.errors import ScenarioError

# Assumed electricity price when a scenario gives none: about the 2023 US industrial average (EIA, ~8 cents per
# kWh, as recalled; not re-verified). Override per region in the scenario's "energy" block.
DEFAULT_USD_PER_KWH = 0.08
DEFAULT_PRICE_SOURCE = "assumed: ~US industrial average electricity price 2023 (EIA), as recalled"
DEVICE_KINDS = ("gpu", "cpu")


@dataclass(frozen=True)
class DevicePower:
    kind: str = "gpu"  # gpu or cpu
    idle_w: float = 0.0  # per device
    busy_w: float = 0.0  # per device
    source: str = ""
    assumed: bool = True

    def to_dict(self) -> dict:
        return {"kind": self.kind, "idle_w": self.idle_w, "busy_w": self.busy_w, "source": self.source,
                "assumed": self.assumed}


@dataclass(frozen=True)
class EnergyConfig:
    usd_per_kwh: dict = field(default_factory=dict)  # region -> USD per kWh ("default" for the others)
    pue: float = 1.0  # facility power usage effectiveness (1.0 = devices only)

    def price(self, region: str) -> tuple[float, str]:
        if region in self.usd_per_kwh:
            return float(self.usd_per_kwh[region]), "scenario"
        if "default" in self.usd_per_kwh:
            return float(self.usd_per_kwh["default"]), "scenario default"
        return DEFAULT_USD_PER_KWH, DEFAULT_PRICE_SOURCE


def _number(d: dict, key: str, where: str, default=None, *, low: float = 0.0, high: float = math.inf) -> float:
    value = d.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not low <= value <= high:
        raise ScenarioError(f"{where}.{key}", f"must be a number between {low:g} and {high:g}, got {value!r}")
    return float(value)


def parse_device(d, where: str) -> DevicePower | None:
    """A deployment's ``device`` block: {kind, idle_w, busy_w, source?, assumed?} (watts per device)."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ScenarioError(where, "must be an object {kind, idle_w, busy_w, source, assumed}")
    unknown = set(d) - {"kind", "idle_w", "busy_w", "source", "assumed", "count"}
    if unknown:
        raise ScenarioError(f"{where}.{sorted(unknown)[0]}", "unknown key; use kind, idle_w, busy_w, source, assumed")
    kind = d.get("kind", "gpu")
    if kind not in DEVICE_KINDS:
        raise ScenarioError(f"{where}.kind", f"must be one of {list(DEVICE_KINDS)}, got {kind!r}")
    idle = _number(d, "idle_w", where, 0.0, high=1e5)
    busy = _number(d, "busy_w", where, 0.0, high=1e5)
    if busy < idle:
        raise ScenarioError(f"{where}.busy_w", f"busy power ({busy:g} W) is below idle power ({idle:g} W)")
    assumed = d.get("assumed", True)
    if not isinstance(assumed, bool):
        raise ScenarioError(f"{where}.assumed", "must be true or false")
    return DevicePower(kind=kind, idle_w=idle, busy_w=busy, source=str(d.get("source", ""))[:500], assumed=assumed)
