"""Every kind of comparison through the one request parser: operator-level plans as a comparison (catalogue names),
fleet-only fields refused for the other kinds, an unknown kind named in the error."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.comparisons.kinds import KINDS, ComparisonKind, RequestError, kind_of, parse_request
from planner.comparisons.models import Comparison
from planner.opscaling.models import OperatorPlan

ROOT = Path(__file__).resolve().parents[3]


def test_a_scenario_is_matched_to_its_kind_and_an_unknown_kind_is_named():
    assert kind_of({"fleet": {}, "workload": {}}).name == "fleet"
    assert kind_of({"nodes": {"cpu": 1, "gpu": 1}, "model": "llama-2-7b"}).name == "serverless"
    assert kind_of({"kind": "operator-level", "model": "x"}).name == "operator-level"
    with pytest.raises(RequestError) as exc:
        kind_of({"kind": "quantum"})
    assert exc.value.field == "scenario.kind" and "operator-level" in exc.value.hint
    assert set(KINDS) == {"fleet", "serverless", "operator-level"}


def _kind_questions(path: Path) -> list[str]:
    """Where a module asks which kind a scenario is: a call of is_serverless, or a read of a scenario's "kind"."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "is_serverless":
                found.append(f"{node.lineno}: is_serverless")
            elif (name == "get" and isinstance(func, ast.Attribute) and "scenario" in ast.unparse(func.value)
                  and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "kind"):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Subscript) and "scenario" in ast.unparse(node.value)
              and isinstance(node.slice, ast.Constant) and node.slice.value == "kind"):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_only_the_kinds_ask_which_kind_a_scenario_is():
    """Services, jobs, the load check, views and the CLI ask the kind (planner/comparisons/kinds) instead of
    branching on the scenario's "kind" or its serverless shape (a form field named kind is not a scenario's)."""
    package = ROOT / "planner" / "comparisons"
    found = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] in ("kinds", "tests", "migrations") or rel == Path("core/serverless.py"):  # where it is defined
            continue
        if questions := _kind_questions(path):
            found[str(rel)] = questions
    assert found == {}


def test_the_load_check_is_the_fleet_kinds_and_the_other_kinds_wait_for_nothing_more():
    class Untouched:  # the other kinds answer without reading the comparison
        def __getattr__(self, name):
            raise AssertionError(f"read comparison.{name}")

    assert [n for n, k in KINDS.items() if n != "fleet" and k.load_check_pending(Untouched()) is not False] == []
    assert type(KINDS["fleet"]).load_check_pending is not ComparisonKind.load_check_pending
    assert KINDS["fleet"].default_choices and not KINDS["serverless"].default_choices


def test_the_request_parser_reads_form_text_and_api_lists_alike():
    _, from_api = parse_request({"scenario": {"fleet": {}}, "strategies": ["lt-i", "lt-ua"], "seeds": [1, 2]})
    _, from_form = parse_request({"scenario": '{"fleet": {}}', "strategies": "lt-i, lt-ua", "seeds": "1,2"})
    assert from_api == from_form and from_api.choices == ("lt-i", "lt-ua") and from_api.seeds == (1, 2)
    with pytest.raises(RequestError) as exc:
        parse_request({"scenario": "{not json"})
    assert exc.value.field == "scenario"
    with pytest.raises(RequestError) as exc:
        parse_request({"scenario": {"fleet": {}}, "seeds": "one"})
    assert exc.value.field == "seeds"


@pytest.mark.django_db(transaction=True)
def test_fleet_only_fields_are_refused_for_a_serverless_comparison_and_nothing_is_stored(cast):
    scenario = {"kind": "serverless", "model": "llama-2-7b", "workload": {"models": 32, "duration_s": 30},
                "nodes": {"cpu": 2, "gpu": 2}}
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": scenario, "seeds": [1, 2]}, format="json")
    assert resp.status_code == 400 and resp.json()["error"]["where"] == "seeds", resp.content
    assert resp.json()["error"]["hint"]
    assert not Comparison.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_operator_level_comparison_in_catalogue_names_equals_the_operator_level_plan(cast):
    from planner.traces.services import import_trace_file

    member = cast.owner
    trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=member.team, user=member.user,
                              name="code", region="eastus", model="llama2-70b", tier="IW-F")
    workload = {"trace_id": trace.pk, "window_s": 600, "rate_scale": 30.0}
    resp = member.api.post("/api/comparisons/", {"scenario": {
        "kind": "operator-level", "model": "llama3.1-8b", "gpu": "a100-80gb", "workload": workload,
        "sweeps": False}}, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    assert comp.status == "succeeded" and comp.scenario["model"] == "llama3.1-8b"
    rows = {r["key"]: r for r in comp.summary["rows"]}
    plan = member.api.post("/api/operator-plans/", {"spec": {"model": "llama-3-8b", "gpu": "a100",
                                                             "workload": workload, "sweeps": False}}, format="json")
    result = OperatorPlan.objects.get(pk=plan.json()["id"]).result
    model_level = sum(result["totals"][ph]["model_level"]["gpu_s"] for ph in ("prefill", "decode")) / 3600
    operator_level = sum(result["totals"][ph]["operator_level"]["gpu_s"] for ph in ("prefill", "decode")) / 3600
    assert rows["model-level"]["gpu_hours"] == pytest.approx(model_level)
    assert rows["operator-level"]["gpu_hours"] == pytest.approx(operator_level)
    energy = sum(result["totals"][ph]["operator_level"]["energy_j"] for ph in ("prefill", "decode")) / 3.6e6
    assert rows["operator-level"]["energy_kwh"] == pytest.approx(energy) != rows["model-level"]["energy_kwh"]
    assert rows["operator-level"]["saved_gpu_hours_pct"] == pytest.approx(
        100 * (model_level - operator_level) / model_level)
    bad = member.api.post("/api/comparisons/", {"scenario": {"kind": "operator-level", "model": "llama3.1-8b",
                                                             "gpu": "tpu", "workload": workload}}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["where"] == "scenario.gpu"
    page = member.api.get(f"/api/comparisons/{comp.pk}/pdf/")
    assert page.status_code == 200 and page.content[:4] == b"%PDF"


@pytest.mark.django_db(transaction=True)
def test_one_form_offers_every_family_with_its_own_sentences_and_starts_every_kind(cast):
    import html as html_lib

    from django.test import Client

    from planner.comparisons.core.bundles import bundle_names, get_bundle
    from planner.comparisons.core.serverless import DESCRIPTIONS
    from planner.comparisons.core.variants import STRATEGIES
    from planner.traces.services import import_trace_file

    page = Client()
    page.force_login(cast.owner.user)
    html = html_lib.unescape(page.get("/comparisons/").content.decode())
    for family in ("baselines", "sageserve", "preserve", "chiron"):
        assert f'data-family="{family}"' in html, family
    for text in [*STRATEGIES.values(), *(get_bundle(n).description for n in bundle_names()), *DESCRIPTIONS.values()]:
        assert text in html, text
    assert 'data-kind-panel="serverless"' in html and 'data-kind-panel="operator-level"' in html
    resp = page.post("/comparisons/new/", {"kind": "serverless", "systems": ["sllm", "slinfer"],
                                           "serverless_baseline": "sllm", "name": "from the form"})
    assert resp.status_code == 302, resp.content.decode()[:500]
    comp = Comparison.objects.get(name="from the form")
    assert comp.scenario["kind"] == "serverless" and [r.key for r in comp.results.all()] == ["sllm", "slinfer"]
    trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=cast.owner.team,
                              user=cast.owner.user, name="code", region="eastus", model="llama2-70b", tier="IW-F")
    resp = page.post("/comparisons/new/", {"kind": "operator-level", "op_trace": str(trace.pk),
                                           "op_model": "llama3.1-8b", "op_gpu": "a100-80gb", "op_window_s": "600",
                                           "name": "operator from the form"})
    assert resp.status_code == 302
    comp = Comparison.objects.get(name="operator from the form")
    assert comp.scenario["kind"] == "operator-level" and comp.status == "succeeded"
    bad = page.post("/comparisons/new/", {"kind": "operator-level", "op_trace": "", "op_model": "llama3.1-8b",
                                          "op_gpu": "a100-80gb", "op_window_s": "60"})
    assert bad.status_code == 400 and "scenario.workload" in bad.content.decode()
