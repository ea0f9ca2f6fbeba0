"""Energy of a run (simulations/engine/results/energy.py) checked against hand computations."""

from __future__ import annotations

import pytest

from simulations.engine import simulate
from simulations.engine.results.energy import DevicePower, energy_of
from simulations.engine.scenario.config import ScenarioError
from simulations.engine.scenario.power import parse_device
from simulations.tests.engine_helpers import scenario, workload

DEVICE = {"kind": "gpu", "idle_w": 50.0, "busy_w": 400.0, "source": "test", "assumed": True}


def test_one_usage_row_by_hand():
    row = {"serving_instance_hours": 2.0, "idle_instance_hours": 1.0, "provisioning_instance_hours": 0.5}
    e = energy_of(row, DevicePower(idle_w=50, busy_w=400), count=2, pue=1.2)
    # busy: 2 devices x 400 W x 2 h = 1.6 kWh; idle + provisioning: 2 x 50 W x 1.5 h = 0.15 kWh; x PUE 1.2
    assert e["busy_kwh"] == pytest.approx(1.92) and e["idle_kwh"] == pytest.approx(0.12)
    assert e["provisioning_kwh"] == pytest.approx(0.06) and e["energy_kwh"] == pytest.approx(2.1)
    assert energy_of(row, None, count=2, pue=1.0) is None


def test_a_run_reports_energy_from_its_busy_and_idle_seconds_and_prices_it_per_region():
    # one static instance (8 devices): two requests, then idle until the last completes; nothing is provisioned
    sc = scenario(spec={"device": DEVICE}, energy={"usd_per_kwh": {"r1": 0.25}, "pue": 1.0})
    result = simulate(sc, workload([0.0, 100.0], [1000, 1000], [50, 50]))
    row = result.usage[0]
    busy_h, idle_h = row["serving_instance_hours"], row["idle_instance_hours"]
    assert row["provisioning_instance_hours"] == 0 and busy_h > 0 and idle_h > 0
    want = 8 * (400 * busy_h + 50 * idle_h) / 1000
    s = result.summary
    assert s["energy_kwh"] == pytest.approx(want) and row["energy_kwh"] == pytest.approx(want)
    assert s["energy_cost_usd"] == pytest.approx(want * 0.25)
    assert s["energy_by_region"]["r1"]["usd_per_kwh"] == 0.25 and s["energy_missing_power"] == []
    # the busy time of one request by hand: prefill 0.1 + 0.001 x 1000 = 1.1 s, then 49 decode iterations
    # of 0.01 + 0.001 x 1 + 0.0001 x context, the context before each iteration being 1000..1048 tokens (the
    # engine counts the prefill's token into the KV with the first decode iteration)
    one = 1.1 + 49 * 0.011 + 0.0001 * sum(range(1000, 1049))
    assert busy_h * 3600 == pytest.approx(2 * one, rel=1e-6)


def test_unknown_power_is_reported_as_unknown_not_as_zero():
    sc = scenario()  # the helper's spec has no device and a gpu name the catalogue does not know
    result = simulate(sc, workload([0.0], [100], [10]))
    assert result.summary["energy_kwh"] is None and result.summary["energy_missing_power"] == ["toy/gpu/tp1"]
    assert result.usage[0]["energy_kwh"] is None


def test_a_spec_naming_a_catalogue_device_takes_its_power():
    sc = scenario(spec={"gpu": "a100-80gb", "gpus_per_instance": 1})
    result = simulate(sc, workload([0.0], [100], [10]))
    row = result.usage[0]
    assert row["device_kind"] == "gpu" and row["power_assumed"] is True
    assert row["energy_kwh"] == pytest.approx((400 * row["serving_instance_hours"] + 50 * row["idle_instance_hours"])
                                              / 1000)


@pytest.mark.parametrize(("block", "field"), [
    ({"kind": "tpu", "idle_w": 1, "busy_w": 2}, "device.kind"),
    ({"idle_w": 500, "busy_w": 400}, "device.busy_w"),
    ({"idle_w": "50", "busy_w": 400}, "device.idle_w"),
    ({"idle_w": 50, "busy_w": 400, "wats": 1}, "device.wats"),
])
def test_bad_device_blocks_name_the_field(block, field):
    with pytest.raises(ScenarioError) as info:
        parse_device(block, "device")
    assert info.value.field == field


def test_bad_energy_blocks_name_the_field():
    for block, field in (({"pue": 0.9}, "energy.pue"), ({"usd_per_kwh": {"r1": -1}}, "energy.usd_per_kwh.r1"),
                         ({"price": 1}, "energy.price")):
        with pytest.raises(ScenarioError) as info:
            scenario(energy=block)
        assert info.value.field == field, (info.value.field, str(info.value))
