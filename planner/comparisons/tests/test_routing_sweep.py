"""The routing sweep from the API, the pages and a job: same numbers as the engine's sweep, knees as
defined (the first rate whose SLO attainment falls below the threshold), bad input refused with nothing stored."""

import pytest
from rest_framework.test import APIClient

from planner.accounts.services import create_user
from planner.comparisons import routing
from planner.jobs.models import Job

SMALL = {"rates": [30, 6], "routers": ["least-requests", "round-robin"], "minutes": 0.5}


@pytest.fixture
def people(db):
    owner, owner_key = create_user("rita", "pw-rita-12345", "team-r")
    _out, out_key = create_user("otto", "pw-otto-12345", "team-o")

    def api(key):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client

    return {"owner": api(owner_key), "outsider": api(out_key), "user": owner}


@pytest.mark.django_db(transaction=True)
def test_a_sweep_posted_to_the_api_runs_as_a_job_with_the_engines_numbers_and_knees(people):
    from simulations.engine.sweep import routing_sweep

    response = people["owner"].post("/api/comparisons/routing-sweeps/", SMALL, format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.SUCCEEDED, job.last_error
    result = job.result
    direct = routing_sweep(routing.base_scenario(0.5), [6.0, 30.0], SMALL["routers"], knee_attainment=0.9)
    def numbers(points):  # everything but the CPU time each point took
        return [{k: v for k, v in p.items() if k != "cpu_s"} for p in points]

    assert numbers(result["points"]) == numbers(direct["points"]) and result["rates_rps"] == [6.0, 30.0]
    for router in SMALL["routers"]:
        mine = [p for p in result["points"] if p["router"] == router]
        below = [p["rate_rps"] for p in mine if p["attainment"] < 0.9]
        assert result["knees_rps"][router] == (below[0] if below else None)
    # 4 instances of llama-2-7b serve ~14 req/s (BENCHMARKS): 6 req/s is below every knee, 30 past all of them
    assert all(p["attainment"] >= 0.9 for p in result["points"] if p["rate_rps"] == 6.0)
    assert result["knees_rps"] == {"least-requests": 30.0, "round-robin": 30.0}
    assert people["outsider"].get(f"/api/jobs/{job.pk}/").status_code == 404


@pytest.mark.parametrize("body, where", [
    ({"rates": []}, "rates"),
    ({"rates": [5], "routers": ["nope"]}, "routers"),
    ({"rates": [5], "minutes": 100}, "minutes"),
    ({"rates": [-1]}, "rates"),
    ({"rates": [5], "knee_attainment": 1.5}, "knee_attainment"),
])
def test_bad_sweeps_get_the_documented_error_and_store_nothing(people, body, where):
    response = people["owner"].post("/api/comparisons/routing-sweeps/", body, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert where in error["fields"] and error["message"]
    assert not Job.objects.filter(kind=routing.KIND).exists()


@pytest.mark.django_db(transaction=True)
def test_the_pages_start_a_sweep_and_show_its_knees_figure_and_table(people, client):
    client.force_login(people["user"])
    assert client.get("/comparisons/routing-sweep/").status_code == 200
    bad = client.post("/comparisons/routing-sweep/", {"rates": "5,x", "routers": ["round-robin"], "minutes": "1",
                                                      "knee_attainment": "0.9"})
    assert bad.status_code == 400 and b"rates" in bad.content and b"5,x" in bad.content
    response = client.post("/comparisons/routing-sweep/", {"rates": "6, 30", "routers": ["least-requests"],
                                                           "minutes": "0.5", "knee_attainment": "0.9"})
    assert response.status_code == 302
    page = client.get(response["Location"])
    html = page.content.decode()
    assert page.status_code == 200 and 'data-knee="least-requests"' in html and "30.0 req/s" in html
    assert 'data-plotly-for="fig-routing-sweep"' in html and "data-sweep-points" in html
    assert "#" in client.get("/comparisons/routing-sweep/").content.decode()
    other = APIClient()
    other.force_login(create_user("olaf", "pw-olaf-12345", "team-x")[0])
    assert other.get(response["Location"]).status_code == 404


def test_the_figure_titles_every_axis_and_marks_each_knee_in_its_routers_colour():
    from planner.plotstyle import axes_without_title

    result = {"routers": ["a", "b"], "knee_attainment": 0.9, "knees_rps": {"a": 2.0, "b": None},
              "points": [{"router": r, "rate_rps": x, "attainment": at} for r, x, at in
                         (("a", 1.0, 0.99), ("a", 2.0, 0.5), ("b", 1.0, 0.97), ("b", 2.0, 0.95))]}
    fig = routing.figure(result)
    assert axes_without_title(fig) == []
    a_line, a_knee = (t for t in fig.data if t.legendgroup == "a")
    assert a_knee.x == (2.0,) and a_knee.marker.color == a_line.line.color
    assert [t.showlegend for t in fig.data] == [True, False, True]
