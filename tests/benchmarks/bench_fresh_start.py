"""A fresh start: clone the repository into a temporary folder, run `make run` there and time it to the first page.

    python tests/benchmarks/bench_fresh_start.py [--repo PATH] [--port 8000] [--keep]

`make run` installs into a new .venv (pip, from whatever index or wheel mirror pip is configured with), migrates
SQLite, loads the demo data and serves; the clock stops at the first ``GET /login/`` answered 200. The server is
stopped and the clone removed afterwards (``--keep`` keeps it). Prints one JSON object as its last line: seconds to
the first page, the engine build the demo started on, and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _first_page(url: str, proc: subprocess.Popen, limit_s: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if proc.poll() is not None:
            return None
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                if response.status == 200:
                    return time.monotonic() - t0
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=str(ROOT), help="what to clone (default: this checkout's repository)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--limit-s", type=float, default=900.0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="planner-fresh-"))
    clone = folder / "planner"
    subprocess.run(["git", "clone", "-q", args.repo, str(clone)], check=True)
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    load_before = os.getloadavg()[0]
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "DATABASE_URL", "REDIS_URL",
                                                             "DJANGO_SETTINGS_MODULE", "PLANNER_DATA_DIR"}}
    log = open(folder / "make-run.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(["make", "run", f"PORT={args.port}"], cwd=clone, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        seconds = _first_page(f"http://127.0.0.1:{args.port}/login/", proc, args.limit_s)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
    text = (folder / "make-run.log").read_text(errors="replace")
    build_line = next((ln for ln in text.splitlines() if ln.startswith("engine build:")), "engine build: (none)")
    result = {"bench": "fresh_start", "commit": commit, "make_run_to_first_page_s": round(seconds, 1) if seconds else None,
              "engine_at_start": build_line, "load_before": round(load_before, 2),
              "load_after": round(os.getloadavg()[0], 2), "clone": str(clone) if args.keep else None}
    if seconds is None:
        print(text[-3000:])
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
