"""Traces through the API, the pages, the service and the commands, with the owner/teammate/outsider cast."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from planner.ingest.normalised import read_trace
from planner.jobs.models import Job
from planner.traces import services
from planner.traces.models import Trace, trace_root

AZURE_CODE = Path(__file__).resolve().parents[3] / "fixtures" / "traces" / "azure_code_2023.csv"  # bundled, real
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "workloads"
NATIVE = (
    "arrival_s,input_tokens,output_tokens,region,tier\n"
    "0,100,10,east,IW-F\n5,200,20,west,NIW\n65,300,30,east,IW-N\n3,50,5,east,IW-F\n"
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def upload(client, content: bytes | str, name="trace.csv", **fields):
    data = content.encode() if isinstance(content, str) else content
    return client.post("/api/traces/", {"file": SimpleUploadedFile(name, data), **fields}, format="multipart")


def failure(response) -> dict:
    """An upload of a bad file is accepted (202, stored) and then failed by its normalisation job: the trace says
    what, where and how to fix it, and so does its job."""
    assert response.status_code == 202, response.content
    body = response.json()
    trace = Trace.objects.select_related("job").get(pk=body["id"])
    assert body["status"] == "failed" and trace.current_status()[0] == "failed"
    assert trace.job.kind == "trace.normalise" and trace.job.status == "failed"
    assert trace.job.last_error["message"] == body["status_reason"]["message"]
    assert not trace.normalised_file.exists()  # nothing half stored
    return body["status_reason"]


def folders() -> set[str]:
    root = trace_root()
    return {p.name for p in root.iterdir()} if root.exists() else set()


def test_an_upload_is_normalised_characterised_and_visible_to_the_team_only(cast):
    response = upload(cast.owner.api, NATIVE, name="small.csv", tier="", rate="1", seed="0")
    assert response.status_code == 202, response.content
    assert response["Location"] == f"/api/traces/{response.json()['id']}/"
    body = cast.owner.api.get(response["Location"]).json()
    assert body["status"] == "ready" and body["status_reason"] is None
    assert (body["requests"], body["span_s"], body["input_tokens"], body["format"]) == (4, 65.0, 650, "native")
    assert body["was_sorted"] is False  # the 3 s row came last: sorted, not rejected
    assert body["job"]["kind"] == "trace.characterise" and body["job"]["status"] == "succeeded"
    trace = Trace.objects.get(pk=body["id"])
    assert trace.characterisation["requests"] == 4
    assert trace.created_by == cast.owner.user and trace.team == cast.owner.team
    assert read_trace(trace.normalised_file)["arrival_s"].tolist() == [0.0, 3.0, 5.0, 65.0]
    assert trace.original_path.read_bytes() == NATIVE.encode()

    assert cast.teammate.api.get(f"/api/traces/{trace.pk}/").status_code == 200
    assert cast.outsider.api.get(f"/api/traces/{trace.pk}/").status_code == 404
    assert [t["id"] for t in cast.teammate.api.get("/api/traces/").json()["results"]] == [trace.pk]
    assert cast.outsider.api.get("/api/traces/").json()["results"] == []
    assert cast.outsider.api.delete(f"/api/traces/{trace.pk}/").status_code == 404
    assert cast.outsider.api.get(f"/api/traces/{trace.pk}/characterisation/").status_code == 404

    chars = cast.teammate.api.get(f"/api/traces/{trace.pk}/characterisation/").json()
    assert chars["summary"]["span_s"] == 65.0
    assert chars["series"]["60"]["groups"]["all"]["rps"] == pytest.approx([3 / 60, 1 / 60])
    download = cast.teammate.api.get(f"/api/traces/{trace.pk}/download/?kind=original")
    assert b"".join(download.streaming_content) == NATIVE.encode()


def test_the_teammate_can_delete_and_the_files_go_too(cast):
    trace_id = upload(cast.owner.api, NATIVE).json()["id"]
    folder = Trace.objects.get(pk=trace_id).directory
    assert folder.exists()
    assert cast.teammate.api.delete(f"/api/traces/{trace_id}/").status_code == 204
    assert not Trace.objects.filter(pk=trace_id).exists() and not folder.exists()


def test_the_list_filters_by_name_format_and_size(cast):
    upload(cast.owner.api, NATIVE, name="alpha.csv")
    upload(
        cast.owner.api,
        AZURE_CODE.read_bytes(),
        name="beta.csv",
    )
    names = lambda q: sorted(t["name"] for t in cast.owner.api.get(f"/api/traces/?{q}").json()["results"])  # noqa: E731
    assert names("name=alph") == ["alpha"]
    assert names("file_format=azure") == ["beta"]
    assert names("min_requests=5") == ["beta"]
    assert names("ordering=name") == ["alpha", "beta"]


def test_a_duplicate_upload_is_a_409_pointing_at_the_existing_trace(cast):
    first = upload(cast.owner.api, NATIVE).json()
    before = folders()
    again = upload(cast.teammate.api, NATIVE, name="again.csv")
    assert again.status_code == 409
    err = again.json()["error"]
    assert err["existing"]["id"] == first["id"] and f"#{first['id']}" in err["message"]
    assert "delete it first" in err["hint"]
    assert folders() == before and Trace.objects.count() == 1
    # The same file with other options, or for another team, is a new trace.
    assert upload(cast.owner.api, NATIVE, rate="2").status_code == 202
    assert upload(cast.outsider.api, NATIVE).status_code == 202


@pytest.mark.parametrize(
    "content, name, status, message",
    [
        (b"", "empty.csv", 400, "empty"),
        (bytes(range(256)) * 20, "junk.bin", 202, "binary"),
        (b"arrival_s,input_tokens,output_tokens\n0,1,1\n1,-4,1\n", "neg.csv", 202, "negative"),
        (b"when,what\n1,2\n", "unknown.csv", 202, "matches no known trace format"),
        (
            gzip.compress(
                (
                    "arrival_s,input_tokens,output_tokens\n" + "".join(f"{i},{i * 7 % 1000},3\n" for i in range(50000))
                ).encode(),
                mtime=0,  # the same bytes in every test process (the test id is made from them)
            )[:-4],
            "cut.csv.gz",
            202,
            "truncated",
        ),
    ],
    ids=["empty", "binary", "negative", "unknown-format", "truncated-gzip"],
)
def test_bad_uploads_name_the_problem_and_keep_no_normalised_file(cast, content, name, status, message):
    """An empty file is refused in the request; any other bad file fails its normalisation job, and the trace's
    status says what, where (the file's name first) and how to fix it."""
    before_jobs = Job.objects.count()
    response = upload(cast.owner.api, content, name=name)
    if status == 400:
        assert response.status_code == 400, response.content
        err = response.json()["error"]
        assert message in err["message"] and err["where"] and err["hint"]
        assert Trace.objects.count() == 0 and Job.objects.count() == before_jobs and folders() == set()
    else:
        reason = failure(response)
        assert message in reason["message"] and reason["where"].startswith(name) and reason["hint"]
        assert reason["file"] == name
        # the same file can be uploaded again (after fixing nothing, it fails again: not a 409)
        assert upload(cast.owner.api, content, name=name).status_code == 202
    assert cast.owner.api.get("/api/traces/").status_code == 200  # still serving


def test_a_bad_value_is_reported_with_its_line(cast):
    response = upload(cast.owner.api, "arrival_s,input_tokens,output_tokens\n0,1,1\n1,abc,1\n")
    reason = failure(response)
    assert reason["line"] == 3 and reason["column"] == "input_tokens" and reason["where"].startswith("trace.csv: ")


def test_bad_options_are_a_400(cast):
    response = upload(cast.owner.api, NATIVE, tier="GOLD")
    assert response.status_code == 400 and "not a tier" in response.json()["error"]["message"]
    assert folders() == set()


def test_the_upload_size_limit_is_configurable(cast, settings):
    settings.TRACE_UPLOAD_MAX_BYTES = 10
    response = upload(cast.owner.api, NATIVE)
    assert response.status_code == 413 and "TRACE_UPLOAD_MAX_BYTES" in response.json()["error"]["hint"]
    assert folders() == set()


def test_splits_and_rate_multiplication_apply_at_upload(cast):
    created = upload(cast.owner.api, NATIVE, region="r1", model="m:1", tier="IW-F:0.5,NIW:0.5", rate="3", seed="7")
    body = cast.owner.api.get(created["Location"]).json()
    assert body["requests"] == 12 and set(k.split("|")[0] for k in body["groups"]) == {"r1"}
    assert body["options"]["rate"] == 3.0 and body["options"]["tier"] == {"IW-F": 0.5, "NIW": 0.5}


def test_synthesis_through_the_api_stores_a_trace(cast):
    spec = json.loads((FIXTURES / "sageserve_day.json").read_text())
    spec["total_rps"] = 0.02
    response = cast.owner.api.post("/api/traces/synthesise/", {"spec": spec, "name": "tiny"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["format"] == "synth" and body["name"] == "tiny" and body["job"]["status"] == "succeeded"
    assert {k.split("|")[2] for k in body["groups"]} == {"IW-F", "IW-N", "NIW"}
    again = cast.owner.api.post("/api/traces/synthesise/", {"spec": spec, "name": "tiny"}, format="json")
    assert again.status_code == 409
    spec["total_rps"] = 100
    big = cast.owner.api.post("/api/traces/synthesise/", {"spec": spec}, format="json")
    assert big.status_code == 400 and "above the limit" in big.json()["error"]["message"]
    bad = cast.owner.api.post("/api/traces/synthesise/", {"spec": {"regions": ["a"]}}, format="json")
    assert bad.status_code == 400 and "models: is required" in bad.json()["error"]["message"]


def test_synthesis_can_sample_tokens_from_a_teams_trace_but_not_anothers(cast):
    trace_id = upload(cast.owner.api, NATIVE).json()["id"]
    spec = {"days": 0.1, "total_rps": 0.01, "regions": ["r"], "models": ["m"], "tiers": {"IW-F": {}}}
    ok = cast.teammate.api.post("/api/traces/synthesise/", {"spec": spec, "token_trace": trace_id}, format="json")
    assert ok.status_code == 201, ok.content
    df = read_trace(Trace.objects.get(pk=ok.json()["id"]).normalised_file)
    assert set(df["input_tokens"]) <= {100, 200, 300, 50}
    denied = cast.outsider.api.post("/api/traces/synthesise/", {"spec": spec, "token_trace": trace_id}, format="json")
    assert denied.status_code == 400 and "does not exist in your team" in denied.json()["error"]["message"]
    for sneaky in (
        {"empirical": "/etc/passwd"},
        {"default": {"empirical": {"path": "/etc/passwd"}}},
        {"by_model": {"m": {"empirical": {"trace": trace_id, "path": "/etc/passwd"}}}},
    ):
        refused = cast.owner.api.post("/api/traces/synthesise/", {"spec": {**spec, "tokens": sneaky}}, format="json")
        assert refused.status_code == 400 and "one of your traces" in refused.json()["error"]["message"]
    nested = {**spec, "tokens": {"default": {"empirical": {"trace": trace_id}}}}
    assert cast.owner.api.post("/api/traces/synthesise/", {"spec": nested}, format="json").status_code == 201


def test_pages_list_upload_and_show_charts(cast):
    page = Client()
    page.force_login(cast.owner.user)
    assert page.get("/traces/").status_code == 200
    response = page.post(
        "/traces/upload/", {"file": SimpleUploadedFile("p.csv", NATIVE.encode()), "format": "auto", "tier": ""}
    )
    assert response.status_code == 302
    trace = Trace.objects.get()
    detail = page.get(response["Location"])
    html = detail.content.decode()
    assert 'data-trace-status="ready"' in html
    assert detail.status_code == 200 and "vendor/plotly.min.js" in html and "fig-rates" in html and "fig-cdf" in html
    assert "cdn.plot.ly" not in html
    assert page.get(f"/traces/{trace.pk}/?by=region&interval=900").status_code == 200
    bad = page.post("/traces/upload/", {"file": SimpleUploadedFile("p.csv", b"x,y\n1,2\n"), "format": "auto"})
    assert bad.status_code == 302
    failed = page.get(bad["Location"]).content.decode()
    assert 'data-trace-status="failed"' in failed and "matches no known trace format" in failed
    assert "Where: p.csv" in failed and 'data-trace-status="failed"' in page.get("/traces/").content.decode()
    Trace.objects.filter(status="failed").delete()
    outsider = Client()
    outsider.force_login(cast.outsider.user)
    assert outsider.get(f"/traces/{trace.pk}/").status_code == 404
    assert outsider.post(f"/traces/{trace.pk}/delete/").status_code == 404
    assert page.post(f"/traces/{trace.pk}/delete/").status_code == 302 and not Trace.objects.exists()


def test_the_synthesise_page_prefills_a_fixture_and_creates_a_trace(cast):
    page = Client()
    page.force_login(cast.owner.user)
    form = page.get("/traces/synthesise/?fixture=sageserve_week")
    assert form.status_code == 200 and "sageserve-week" in form.content.decode()
    spec = json.loads((FIXTURES / "sageserve_day.json").read_text())
    spec["total_rps"] = 0.01
    response = page.post("/traces/synthesise/", {"spec": json.dumps(spec), "name": "page-synth", "seed": "3"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Trace.objects.get().name == "page-synth"
    bad = page.post("/traces/synthesise/", {"spec": "{not json"})
    assert bad.status_code == 400 and "not valid JSON" in bad.content.decode()


def test_import_trace_file_is_callable_for_demo_data_and_queues_characterisation(cast, tmp_path):
    path = tmp_path / "n.csv"
    path.write_text(NATIVE)
    trace = services.import_trace_file(
        path, team=cast.owner.team, name="demo", tier="NIW", format="native", time_scale=0.5
    )
    trace.refresh_from_db()
    assert trace.name == "demo" and trace.job.kind == "trace.characterise" and trace.job.status == "succeeded"
    assert set(read_trace(trace.normalised_file)["tier"]) == {"NIW"} and trace.span_s == 32.5
    with pytest.raises(TypeError):
        services.import_trace_file(path, team=cast.owner.team, colour="red")


def test_the_characterisation_job_fails_cleanly_when_the_trace_is_gone(cast):
    trace_id = upload(cast.owner.api, NATIVE).json()["id"]
    Trace.objects.filter(pk=trace_id).delete()
    job = Job.objects.create(team=cast.owner.team, kind="trace.characterise", params={"trace_id": trace_id})
    from planner.jobs.tasks import execute

    assert execute(job.pk) == "failed"
    job.refresh_from_db()
    assert "no longer exists" in job.last_error["message"]


def test_the_import_trace_command_prints_one_json_object(db, tmp_path):
    out = io.StringIO()
    call_command("import_trace", str(AZURE_CODE), "--json", "--tier", "IW-F:0.72,NIW:0.28", "--seed", "1", stdout=out)
    body = json.loads(out.getvalue())
    assert {"id", "requests", "span_s", "input_tokens", "output_tokens", "format"} <= set(body)
    assert (body["requests"], body["input_tokens"], body["output_tokens"], body["format"]) == (
        8819,
        18_059_974,
        245_896,
        "azure",
    )
    assert body["span_s"] == pytest.approx(3435.948056)
    assert body["characterised"] is True


def test_the_synth_trace_command_writes_a_trace_that_imports(db, tmp_path):
    out = io.StringIO()
    target = tmp_path / "day.parquet"
    call_command("synth_trace", str(FIXTURES / "sageserve_day.json"), "--out", str(target), "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["requests"] == len(read_trace(target)) and body["regions"] == ["us-central", "us-east", "us-west"]
    csv_target = tmp_path / "day.csv.gz"
    call_command("synth_trace", str(FIXTURES / "sageserve_day.json"), "--out", str(csv_target), stdout=io.StringIO())
    imported = io.StringIO()
    call_command("import_trace", str(csv_target), "--json", stdout=imported)
    assert json.loads(imported.getvalue())["requests"] == body["requests"]


def test_the_format_field_of_an_upload_is_checked_against_the_file(cast):
    ok = upload(cast.owner.api, NATIVE, format="native")
    assert ok.status_code == 202 and cast.owner.api.get(ok["Location"]).json()["format"] == "native"
    wrong = upload(cast.owner.api, NATIVE, name="other.csv", format="azure", rate="2")
    assert "missing column" in failure(wrong)["message"]


def test_the_trace_status_command_says_pending_ready_and_failed_with_the_reason(cast, monkeypatch):
    import planner.jobs.services as job_services
    from planner.jobs.tasks import execute

    monkeypatch.setattr(job_services, "dispatch", lambda job_id: True)  # no worker has picked the jobs up yet
    good = upload(cast.owner.api, NATIVE).json()
    bad = upload(cast.owner.api, "arrival_s,input_tokens,output_tokens\n0,1,1\n1,abc,1\n", name="bad.csv").json()
    assert good["status"] == bad["status"] == "pending"

    def status(pk):
        out = io.StringIO()
        try:
            call_command("trace_status", str(pk), "--json", stdout=out)
        except SystemExit as exc:
            assert exc.code == 1
        return json.loads(out.getvalue())

    assert status(good["id"])["status"] == "pending" and status(good["id"])["job"]["kind"] == "trace.normalise"
    assert execute(good["job"]["id"]) == "succeeded" and execute(bad["job"]["id"]) == "failed"
    assert status(good["id"])["status"] == "ready" and status(good["id"])["requests"] == 4
    failed = status(bad["id"])
    assert failed["status"] == "failed" and failed["status_reason"]["line"] == 3
    assert failed["status_reason"]["where"].startswith("bad.csv: ")
    with pytest.raises(SystemExit):
        call_command("trace_status", str(bad["id"]), stdout=(text := io.StringIO()))
    assert "how to fix:" in text.getvalue() and "failed" in text.getvalue()


def test_a_pending_upload_says_its_format_is_detected_when_normalised_then_shows_the_detected_one(cast, monkeypatch):
    import planner.jobs.services as job_services
    from planner.jobs.tasks import execute

    monkeypatch.setattr(job_services, "dispatch", lambda job_id: True)  # no worker has picked the job up yet
    sent = upload(cast.owner.api, NATIVE).json()
    assert sent["status"] == "pending" and sent["format"] == "auto"
    page = Client()
    page.force_login(cast.owner.user)
    for url in (f"/traces/{sent['id']}/", "/traces/"):
        html = page.get(url).content.decode()
        assert "detected when normalised" in html and "<td>auto</td>" not in html, url
    assert execute(sent["job"]["id"]) == "succeeded"
    assert cast.owner.api.get(f"/api/traces/{sent['id']}/").json()["format"] == "native"
    assert "<td>native</td>" in page.get(f"/traces/{sent['id']}/").content.decode()


def test_a_cancelled_normalisation_leaves_a_failed_trace_not_a_pending_one(cast, monkeypatch):
    import planner.jobs.services as job_services

    monkeypatch.setattr(job_services, "dispatch", lambda job_id: True)
    body = upload(cast.owner.api, NATIVE).json()
    assert cast.owner.api.post(f"/api/jobs/{body['job']['id']}/cancel/").status_code in (200, 202)
    after = cast.owner.api.get(f"/api/traces/{body['id']}/").json()
    assert after["status"] == "failed" and "cancelled" in after["status_reason"]["message"]
    refused = cast.owner.api.post(f"/api/traces/{body['id']}/characterise/")
    assert refused.status_code == 409 and "not ready" in refused.json()["error"]["message"]
    forecast = cast.owner.api.post("/api/forecasts/", {"trace": body["id"]}, format="json")
    assert forecast.status_code == 400 and "not ready" in json.dumps(forecast.json())
