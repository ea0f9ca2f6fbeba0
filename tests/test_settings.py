"""The effective Celery and environment settings (a misspelled CELERY_ name is silently ignored)."""

import os
import subprocess
import sys

from planner.celery import app


def test_celery_reads_its_settings_from_django():
    conf = app.conf
    assert conf.task_serializer == "json" and conf.result_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.task_time_limit == 4 * 3600 and conf.task_soft_time_limit == 4 * 3600 - 60
    assert conf.result_expires.total_seconds() == 24 * 3600 if hasattr(conf.result_expires, "total_seconds") else conf.result_expires == 24 * 3600
    assert conf.task_acks_late is True and conf.worker_prefetch_multiplier == 1


def test_the_run_job_task_is_registered_with_the_app():
    app.loader.import_default_modules()
    assert "planner.jobs.run_job" in app.tasks


def _settings_in_subprocess(env: dict, expr: str) -> subprocess.CompletedProcess:
    code = f"import django, os; os.environ['DJANGO_SETTINGS_MODULE']='planner.settings'; django.setup(); from django.conf import settings as s; print({expr})"
    full_env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "JOBS_RUNNER"}}
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, check=False)


def test_with_nothing_set_the_planner_uses_sqlite_and_runs_jobs_in_process():
    out = _settings_in_subprocess({}, "s.DATABASES['default']['ENGINE'], s.JOBS_RUNNER, s.CELERY_TASK_ALWAYS_EAGER")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "django.db.backends.sqlite3 thread True"


def test_database_and_redis_urls_switch_to_postgres_and_a_celery_worker():
    out = _settings_in_subprocess(
        {"DATABASE_URL": "postgres://u@127.0.0.1:5432/x", "REDIS_URL": "redis://127.0.0.1:6379/3"},
        "s.DATABASES['default']['ENGINE'], s.JOBS_RUNNER, s.CELERY_BROKER_URL, s.CELERY_TASK_ALWAYS_EAGER",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "django.db.backends.postgresql celery redis://127.0.0.1:6379/3 False"


def test_a_bad_boolean_setting_fails_loudly():
    out = _settings_in_subprocess({"DEBUG": "maybe"}, "s.DEBUG")
    assert out.returncode != 0 and "DEBUG='maybe' is not a boolean" in out.stderr


def test_healthz_checks_the_database_and_says_which_simulator_build_runs(client, db):
    from simulations.engine import BUILD

    body = client.get("/healthz").json()
    assert body["ok"] is True and body["engine_build"] == BUILD["kind"] in ("compiled", "python")
    assert body["engine_build_reason"]
    if os.environ.get("PLANNER_ENGINE_BUILD") == "compiled":
        assert body["engine_build"] == "compiled"  # CI: the benchmarked build is the one the service runs
