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

from simulations.engine.scenario.power import (
    DevicePower,
    EnergyConfig,
)


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
