"""Test-wide settings: jobs run inline, files go to a temporary data dir."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("JOBS_RUNNER", "inline")
os.environ.setdefault("PLANNER_DATA_DIR", tempfile.mkdtemp(prefix="planner-test-"))
