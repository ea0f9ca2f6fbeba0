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


def _plain(code: str, env: dict | None = None) -> dict:
    """The last line of ``python -c code`` (no Django) as JSON."""
    env, extra = {**os.environ, "PYTHONPATH": str(ROOT)}, env or {}
    env.pop("OPENBLAS_NUM_THREADS", None)
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_importing_the_engine_package_loads_no_numerical_library():
    # the light CLI sets its process up (one BLAS thread) after the package is imported and before numpy loads
    loaded = _plain("import json, sys, simulations.engine\n"
                    "print(json.dumps([m for m in ('numpy', 'pyarrow', 'pydantic') if m in sys.modules]))")
    assert loaded == []


def test_the_light_cli_runs_one_blas_thread_and_skips_pyarrow_filesystems(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = tmp_path / "hour.parquet"
    pq.write_table(pa.table({"arrival_s": [0.0, 1.0, 2.5], "input_tokens": [100, 200, 300],
                             "output_tokens": [10, 20, 30]}), trace)
    scenario = str(ROOT / "fixtures" / "scenarios" / "code_anchor.json")
    probe = (f"import gc, json, os, sys, runpy; sys.argv = ['run', {scenario!r}, '--trace', {str(trace)!r}, '--json']\n"
             "try:\n    runpy.run_module('simulations.engine.run', run_name='__main__')\n"
             "except SystemExit as exc:\n    code = exc.code\n"
             "print(json.dumps({'code': code, 'blas': os.environ.get('OPENBLAS_NUM_THREADS'),\n"
             "                  'frozen': gc.get_freeze_count() > 0, 'fs': 'pyarrow.fs' in sys.modules}))")
    out = _plain(probe)
    assert out == {"code": 0, "blas": "1", "frozen": True, "fs": False}
    assert _plain(probe, {"OPENBLAS_NUM_THREADS": "2"})["blas"] == "2"  # an explicit setting wins
