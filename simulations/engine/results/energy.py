"""Energy of a run: kWh from the busy / idle / provisioning seconds the engine already tracks
per (region, model) in ``SimulationResult.usage``, and what it costs at each region's electricity price.

Per instance, with ``count`` devices (GPUs, or CPU sockets) of one kind drawing ``busy_w`` while the instance has
work and ``idle_w`` otherwise:

    kWh = count x (busy_w x serving_h + idle_w x (idle_h + provisioning_h)) / 1000 x PUE

Provisioning (VM acquisition, weight loading) is charged at idle power: the devices are on, not computing.
The energy cost is informational: cloud GPU-hour prices already include power, so ``cost_usd`` does not add it.
A deployment spec without a ``device`` block takes the built-in catalogue's figures for its ``gpu`` when the
catalogue knows that device type (planner.catalogue, optional); otherwise its power is unknown: its rows carry
``energy_kwh: null``, the summary totals are null and ``energy_missing_power`` names the deployments.
"""

from __future__ import annotations

import functools
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


def energy_of(row: dict, device: DevicePower | None, count: int, pue: float) -> dict | None:
    """kWh of one usage row (hours of serving / idle / provisioning instances) or None without power figures."""
    if device is None:
        return None
    busy_kwh = count * device.busy_w * row["serving_instance_hours"] / 1000.0 * pue
    idle_kwh = count * device.idle_w * row["idle_instance_hours"] / 1000.0 * pue
    prov_kwh = count * device.idle_w * row["provisioning_instance_hours"] / 1000.0 * pue
    return {"busy_kwh": busy_kwh, "idle_kwh": idle_kwh, "provisioning_kwh": prov_kwh,
            "energy_kwh": busy_kwh + idle_kwh + prov_kwh}


@functools.lru_cache(maxsize=64)
def catalogue_device(gpu: str) -> DevicePower | None:
    """The built-in catalogue's power figures for a device type name, if the catalogue is installed and knows it."""
    try:
        from planner.catalogue.builtin import builtin_view as load_builtin  # read-only, no copy
    except ImportError:  # pragma: no cover - the engine alone
        return None
    for g in load_builtin()["gpu_types"]:
        if g["name"] == gpu and g.get("busy_w") is not None:
            return DevicePower(kind=g.get("device_kind", "gpu"), idle_w=float(g["idle_w"]), busy_w=float(g["busy_w"]),
                               source=f"built-in catalogue, {gpu}: {g.get('power_source', '')}",
                               assumed=bool(g.get("power_assumed", True)))
    return None


def add_energy(result, scenario) -> None:
    """Add ``energy_kwh`` (and its parts and cost) to every usage row, per region and to the summary, in place."""
    specs = {ep.deployment.name: ep.deployment for ep in scenario.fleet.endpoints}
    energy = getattr(scenario, "energy", None) or EnergyConfig()
    total = {"energy_kwh": 0.0, "busy_kwh": 0.0, "idle_kwh": 0.0, "provisioning_kwh": 0.0, "energy_cost_usd": 0.0}
    regions: dict[str, dict] = {}
    missing: set[str] = set()
    for row in result.usage:
        spec = specs.get(row["deployment"])
        device = getattr(spec, "device", None)
        if device is None and spec is not None and spec.gpu:
            device = catalogue_device(spec.gpu)
        e = energy_of(row, device, int(row["gpus_per_instance"]), energy.pue)
        price, source = energy.price(row["region"])
        if e is None:
            missing.add(row["deployment"])
            row.update({"energy_kwh": None, "energy_cost_usd": None, "device_kind": None})
            continue
        cost = e["energy_kwh"] * price
        row.update({**e, "energy_cost_usd": cost, "usd_per_kwh": price, "device_kind": device.kind,
                    "power_assumed": device.assumed})
        r = regions.setdefault(row["region"], {"energy_kwh": 0.0, "energy_cost_usd": 0.0, "usd_per_kwh": price,
                                               "price_source": source})
        r["energy_kwh"] += e["energy_kwh"]
        r["energy_cost_usd"] += cost
        for k in ("energy_kwh", "busy_kwh", "idle_kwh", "provisioning_kwh"):
            total[k] += e[k]
        total["energy_cost_usd"] += cost
    result.summary.update({
        **({k: None for k in total} if missing else total),
        "energy_by_region": regions, "energy_pue": energy.pue,
        "energy_missing_power": sorted(missing),
    })
