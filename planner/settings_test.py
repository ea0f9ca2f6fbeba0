"""Settings for the test suite: jobs run inline at commit and files go to a temporary directory.

Integration tests (``-m integration``) run with ``JOBS_RUNNER=celery`` plus ``DATABASE_URL`` and
``REDIS_URL`` in the environment, so the same suite exercises PostgreSQL, Redis and a real worker.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads; see manage.py
os.environ.setdefault("JOBS_RUNNER", "inline")
# Tests run with DEBUG off, like production; the key only signs test sessions (subprocesses inherit it).
os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-any-deployment-0123456789")
if "PLANNER_DATA_DIR" not in os.environ:
    _tmp = tempfile.mkdtemp(prefix="planner-test-")
    os.environ["PLANNER_DATA_DIR"] = _tmp
    atexit.register(shutil.rmtree, _tmp, ignore_errors=True)

from planner.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
# No `collectstatic` before tests: pages name the source files (the hashed manifest is for `make serve`).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405  (WhiteNoise warns about a missing folder)
# Many tests log in from 127.0.0.1 within a minute; the rate-limit tests (planner/accounts/tests) put the
# production rates back.
LOGIN_RATE_PER_IP = LOGIN_RATE_PER_USERNAME = "10000/min"
# Parallel test processes (pytest-xdist) inherit one PLANNER_DATA_DIR: each keeps its own cache folder, so one
# process's rate-limit counters or cache.clear() never reach another's tests.
if os.environ.get("PYTEST_XDIST_WORKER") and CACHES["default"]["BACKEND"].endswith("FileBasedCache"):  # noqa: F405
    CACHES = {"default": {**CACHES["default"],  # noqa: F405
                          "LOCATION": f"{CACHES['default']['LOCATION']}-{os.environ['PYTEST_XDIST_WORKER']}"}}  # noqa: F405
