from django.core.management import call_command


def test_the_openapi_schema_validates_without_warnings(tmp_path, db):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    assert "/api/jobs/" in text and "/api/auth/token/" in text


def test_the_api_docs_page_serves_swagger_from_local_static_files(client, cast):
    client.force_login(cast.owner.user)
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert b"cdn." not in page.content and b"jsdelivr" not in page.content
