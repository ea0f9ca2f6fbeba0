"""Start-up stays light: setting Django up imports none of the heavy libraries, which load on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "scipy", "statsmodels", "plotly", "pulp", "highspy", "reportlab", "celery", "kombu")


def _fresh(code: str) -> dict:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="planner.settings", DEBUG="true")
    prelude = "import json, sys, django\ndjango.setup()\n"
    out = subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_django_setup_imports_no_heavy_library():
    loaded = _fresh(f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    assert loaded == [], f"loaded at start-up: {loaded}"


def test_job_handlers_are_found_on_first_look_up():
    out = _fresh("from planner.jobs.registry import get_handler, known_kinds\n"
                 "before = 'pandas' in sys.modules\n"
                 "h = get_handler('trace.characterise')\n"
                 "print(json.dumps({'before': before, 'kinds': known_kinds(), 'handler': h.__module__}))")
    assert out["before"] is False
    assert out["handler"] == "planner.traces.jobs"
    assert {"trace.characterise", "simulation.run", "comparisons.variant", "capacity.search"} <= set(out["kinds"])


def test_simulate_command_skips_the_system_checks():
    from simulations.management.commands.simulate import Command

    assert Command.requires_system_checks == []
