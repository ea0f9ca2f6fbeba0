"""Typed policy parameters: every policy declares its knobs as a model, and the boundary checks through them."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine.policies import AUTOSCALERS, INSTANCE_ROUTERS, PolicyKind, get_policy
from simulations.engine.policies.params import PolicyParams, check_params, knob_table, known_knobs
from simulations.engine.policies.registry import _TABLES
from simulations.engine.scenario.config import ScenarioError
from simulations.tests.engine_helpers import scenario

ALL = [(kind, name) for kind in PolicyKind for name in sorted(_TABLES[kind])]


@pytest.mark.parametrize("kind, name", ALL, ids=lambda x: x.value if isinstance(x, PolicyKind) else x)
def test_every_policy_declares_its_knobs_as_a_typed_model_with_descriptions(kind, name):
    model = get_policy(kind, name).Params
    assert issubclass(model, PolicyParams)
    for field_name, field in model.model_fields.items():
        assert field.description, f"{name}: knob {field_name} has no description"
    assert [row["name"] for row in knob_table(kind, name)] == list(model.knob_names())


def test_a_policy_reads_its_defaults_from_its_model():
    rng = np.random.default_rng(0)
    reactive = AUTOSCALERS["reactive-unified"]({}, rng)
    defaults = reactive.Params()
    assert (reactive.hi, reactive.lo, reactive.cooldown) == (defaults.scale_out_above, defaults.scale_in_below,
                                                             defaults.cooldown_s) == (0.70, 0.30, 15.0)
    lt = AUTOSCALERS["lt-ua"]({"beta_fraction": 0.25, "cooldown_in_s": 30}, rng)
    assert lt.beta_fraction == 0.25 and lt.lock.in_s == 30.0 and lt.lock.out_s == 15.0


@pytest.mark.parametrize("params, field, message", [
    ({"scale_out_abve": 0.8}, "strategy.params.scale_out_abve", "is not a knob of the 'reactive-unified'"),
    ({"cooldown_s": "15"}, "strategy.params.cooldown_s", "valid number"),
    ({"donate_to_spot": 1}, "strategy.params.donate_to_spot", "valid boolean"),
    ({"cooldown_s": -1.0}, "strategy.params.cooldown_s", "greater than or equal to 0"),
])
def test_a_bad_knob_is_refused_at_the_boundary_naming_it(params, field, message):
    with pytest.raises(ScenarioError) as err:
        check_params("reactive-unified", params, "strategy.params")
    assert err.value.field == field and message in str(err.value)
    assert err.value.hint  # a did-you-mean or the knob's description


def test_a_choice_knob_lists_its_choices_and_the_comparison_prefix_is_kept():
    with pytest.raises(ScenarioError) as err:
        check_params("llumnix-batch", {"migration": "sideways"}, "strategy_params.llumnix-batch")
    assert err.value.field == "strategy_params.llumnix-batch.migration"
    assert "'live', 'queued' or 'none'" in err.value.message


def test_a_router_knob_is_accepted_with_any_autoscaler_and_checked_by_the_chosen_router():
    router = ((PolicyKind.INSTANCE_ROUTER, "gpu-memory-usage"),)
    check_params("reactive-unified", {"mu_util_weight": 0.3}, "strategy.params", router)
    with pytest.raises(ScenarioError, match="less than or equal to 1"):
        check_params("reactive-unified", {"mu_util_weight": 1.5}, "strategy.params", router)
    assert "mu_util_weight" in known_knobs("lt-ua") and "preference" in known_knobs("chiron")


def test_static_ignores_the_shared_knobs_a_comparison_hands_every_strategy():
    assert known_knobs("static") is None
    check_params("static", {"cooldown_s": 15, "whatever": 1}, "strategy.params")


def test_the_schedulers_knobs_are_checked_when_the_scenario_is_parsed():
    with pytest.raises(ScenarioError) as err:
        scenario(strategy={"autoscaler": "static", "scheduler": "dpa", "scheduler_params": {"tau_n": -1}})
    assert err.value.field == "strategy.scheduler_params.tau_n"
    scenario(strategy={"autoscaler": "static", "scheduler": "fcfs", "scheduler_params": {"tau_n": 5}})


def test_a_knob_a_python_keyword_names_is_read_by_its_json_name():
    chiron = AUTOSCALERS["chiron"]({"global": "utilisation"}, np.random.default_rng(0))
    assert chiron.global_mode == "utilisation" and "global" in known_knobs("chiron")
    with pytest.raises(ScenarioError, match="'chiron' or 'utilisation'"):
        check_params("chiron", {"global": "everywhere"}, "strategy.params")


def test_every_instance_router_is_constructible_from_the_declared_defaults():
    for name in INSTANCE_ROUTERS:
        assert get_policy(PolicyKind.INSTANCE_ROUTER, name).Params.read({}) is not None
