"""The comparison builder offers every kind: fleet strategies grouped by family (each with its own sentence),
serverless systems and operator-level plans in forms generated from their schemas, catalogue names, errors at the
top of the form and on the field, nothing stored on bad input."""

from __future__ import annotations

import html as html_lib
from pathlib import Path

import pytest
from django.test import Client

from planner.comparisons.models import Comparison

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def client(cast):
    c = Client()
    c.force_login(cast.owner.user)
    return c


def _serverless_post(**over) -> dict:
    data = {"kind": "serverless", "action": "run", "sl-model": "llama2-7b", "sl-systems": ["sllm", "slinfer"],
            "sl-baseline": "sllm", "sl-workload__trace": "1_30_128_8_0", "sl-workload__models": "32",
            "sl-workload__duration_s": "30", "sl-nodes__cpu": "2", "sl-nodes__gpu": "2",
            "sl-name": "serverless from the builder"}
    data.update(over)
    return data


def test_the_builder_groups_fleet_strategies_by_family_with_their_own_sentences(client):
    from planner.comparisons.core.bundles import bundle_names, get_bundle
    from planner.comparisons.core.serverless import DESCRIPTIONS
    from planner.comparisons.core.variants import STRATEGIES

    page = html_lib.unescape(client.get("/comparisons/build/").content.decode())
    for family in ("baselines", "sageserve", "preserve", "chiron", "industry"):
        assert f'data-family="{family}"' in page, family
    for text in [*STRATEGIES.values(), *(get_bundle(n).description for n in bundle_names()), *DESCRIPTIONS.values()]:
        assert text in page, text
    for kind in ("fleet", "serverless", "operator-level"):
        assert f'data-kind-panel="{kind}"' in page and f'value="{kind}"' in page
    # catalogue names only: the serverless and operator-level models and GPUs are the catalogue's
    assert '<option value="llama2-7b"' in page and '<option value="a100-80gb"' in page
    assert 'value="llama-2-7b"' not in page and 'value="llama-3-8b"' not in page and 'value="a100"' not in page


@pytest.mark.django_db(transaction=True)
def test_a_serverless_comparison_starts_from_the_builder_in_catalogue_names(client):
    resp = client.post("/comparisons/build/", _serverless_post())
    assert resp.status_code == 302, html_lib.unescape(resp.content.decode())[:3000]
    comp = Comparison.objects.get(name="serverless from the builder")
    assert comp.scenario["kind"] == "serverless" and comp.scenario["model"] == "llama2-7b"
    assert comp.scenario["workload"]["models"] == 32 and comp.scenario["nodes"]["cpu"] == 2
    assert [r.key for r in comp.results.all()] == ["sllm", "slinfer"] and comp.baseline == "sllm"


@pytest.mark.django_db(transaction=True)
def test_serverless_errors_are_at_the_top_and_on_the_field_and_nothing_is_stored(client):
    resp = client.post("/comparisons/build/", _serverless_post(**{"sl-nodes__cpu": "0",
                                                                  "sl-nodes__gpu": "0"}))
    page = html_lib.unescape(resp.content.decode())
    assert resp.status_code == 400
    assert "data-form-errors" in page and "at least one node" in page  # the schema's own sentence, at the top
    resp = client.post("/comparisons/build/", _serverless_post(**{"sl-workload__duration_s": "-5"}))
    page = html_lib.unescape(resp.content.decode())
    assert resp.status_code == 400 and "data-form-errors" in page
    field = page[page.index('data-schema-field="workload__duration_s"'):][:1500]
    assert "data-field-error" in field  # on the field too
    resp = client.post("/comparisons/build/", _serverless_post(**{"sl-systems": [], "sl-baseline": "sllm"}))
    assert resp.status_code == 400 and "tick at least one system" in html_lib.unescape(resp.content.decode())
    resp = client.post("/comparisons/build/", _serverless_post(**{"sl-systems": ["slinfer"], "sl-baseline": "sllm"}))
    assert resp.status_code == 400 and "not among the ticked systems" in html_lib.unescape(resp.content.decode())
    assert not Comparison.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_operator_level_comparison_starts_from_the_builder_and_a_missing_trace_is_named(cast, client):
    from planner.traces.services import import_trace_file

    bad = client.post("/comparisons/build/", {"kind": "operator-level", "op-model": "llama3.1-8b",
                                              "op-gpu": "a100-80gb", "op-window_s": "600"})
    page = html_lib.unescape(bad.content.decode())
    assert bad.status_code == 400 and "data-form-errors" in page and "pick one of your traces" in page
    assert not Comparison.objects.exists()
    trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=cast.owner.team,
                              user=cast.owner.user, name="code", region="eastus", model="llama2-70b", tier="IW-F")
    resp = client.post("/comparisons/build/", {"kind": "operator-level", "op-trace": str(trace.pk),
                                               "op-model": "llama3.1-8b", "op-gpu": "a100-80gb",
                                               "op-window_s": "600", "op-name": "operator from the builder"})
    assert resp.status_code == 302, html_lib.unescape(resp.content.decode())[:2000]
    comp = Comparison.objects.get(name="operator from the builder")
    assert comp.scenario["kind"] == "operator-level" and comp.scenario["model"] == "llama3.1-8b"
    assert comp.scenario["gpu"] == "a100-80gb"


def test_the_builder_the_list_form_and_the_fleet_kind_default_to_the_same_strategies():
    from planner.comparisons.builder import ScenarioBuilderForm
    from planner.comparisons.families import DEFAULT_STRATEGIES
    from planner.comparisons.kinds import KINDS
    from planner.comparisons.views import FORM_DEFAULTS

    assert DEFAULT_STRATEGIES == ("reactive-unified", "lt-i", "lt-u", "lt-ua")
    assert ScenarioBuilderForm.base_fields["strategies"].initial == list(DEFAULT_STRATEGIES)
    assert FORM_DEFAULTS["strategies"] == list(DEFAULT_STRATEGIES)
    assert KINDS["fleet"].default_choices == DEFAULT_STRATEGIES
