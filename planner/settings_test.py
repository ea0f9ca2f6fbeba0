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
if "PLANNER_DATA_DIR" not in os.environ:
    _tmp = tempfile.mkdtemp(prefix="planner-test-")
    os.environ["PLANNER_DATA_DIR"] = _tmp
    atexit.register(shutil.rmtree, _tmp, ignore_errors=True)

from planner.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
