"""Start-up cost of one small replay, as whole processes: the light CLI and ``manage.py simulate``.

    python tests/benchmarks/bench_startup.py                 # best of 5, 19,000 requests
    python tests/benchmarks/bench_startup.py --repeat 9 --requests 19000
    python tests/benchmarks/bench_startup.py --root ../other-checkout   # the same commands in another checkout

The workload is the code trace's hour replicated to ``--requests`` requests (the size of the chat trace's hour,
which is not in this repository), written once to Parquet. Each command runs as a child process; its CPU time
(user + system) is read with ``resource.getrusage(RUSAGE_CHILDREN)`` around the run, and the best of ``--repeat``
runs is reported (the minimum is the figure least disturbed by other work on a shared machine), with the median.
Bytecode is cached as it is once installed (one warm-up run each writes the cache).

- ``light_cli``: ``python -m simulations.engine.run fixtures/scenarios/code_anchor.json --trace HOUR --json``
- ``manage_py_simulate``: ``python manage.py simulate fixtures/scenarios/code_anchor.json --trace HOUR --json
  --no-save``
- ``python_baseline``: ``python -c pass``

Targets: light CLI <= 0.2 CPU-s, ``manage.py simulate`` <= 0.8 CPU-s. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TARGETS = {"light_cli": 0.2, "manage_py_simulate": 0.8}


def write_hour(n: int, path: Path) -> None:
    """The code trace's hour replicated (each copy shifted by 37.1 ms) to its first ``n`` requests, as Parquet."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simulations.engine.workload.traceio import read_trace_arrays

    cols = read_trace_arrays(ROOT / "fixtures" / "traces" / "azure_code_2023.csv")
    m = len(cols["arrival_s"])
    copies = -(-n // m)
    arr = (cols["arrival_s"][None, :] + (np.arange(copies) * 0.0371)[:, None]).ravel()
    idx = np.argsort(arr, kind="stable")[:n]
    table = pa.table({"arrival_s": arr[idx], "input_tokens": np.tile(cols["input_tokens"], copies)[idx],
                      "output_tokens": np.tile(cols["output_tokens"], copies)[idx]})
    pq.write_table(table, path)


def child_cpu(cmd: list[str], env: dict, root: Path = ROOT) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.stdout


def commands(trace: Path, root: Path) -> dict[str, list[str]]:
    scenario = str(root / "fixtures" / "scenarios" / "code_anchor.json")
    return {
        "light_cli": [sys.executable, "-m", "simulations.engine.run", scenario, "--trace", str(trace), "--json"],
        "manage_py_simulate": [sys.executable, "manage.py", "simulate", scenario, "--trace", str(trace), "--json",
                               "--no-save"],
        "python_baseline": [sys.executable, "-c", "pass"],
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=19_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose commands are measured (default: this one)")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    out: dict = {"root": str(root), "requests": args.requests, "repeat": args.repeat,
                 "load_average_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "hour.parquet"
        write_hour(args.requests, trace)
        env = dict(os.environ, DEBUG="true", PYTHONPATH=str(root), PYTHONPYCACHEPREFIX=str(Path(tmp) / "pyc"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cmds = commands(trace, root)
        for cmd in cmds.values():  # warm-up: writes the bytecode cache
            child_cpu(cmd, env, root)
        runs: dict = {k: [] for k in cmds}
        for _ in range(args.repeat):  # interleaved, so a burst of load touches every command alike
            for name, cmd in cmds.items():
                cpu, wall, stdout = child_cpu(cmd, env, root)
                runs[name].append(round(cpu, 3))
                if name != "python_baseline":
                    simulated = json.loads(stdout)["requests_simulated"]
                    if simulated != args.requests:
                        raise SystemExit(f"{name} simulated {simulated} requests, not {args.requests}")
    for name, cpus in runs.items():
        out[name] = {"cpu_s_best": min(cpus), "cpu_s_median": statistics.median(cpus), "runs": cpus}
        if name in TARGETS:
            out[name]["target_cpu_s"] = TARGETS[name]
            out[name]["met"] = min(cpus) <= TARGETS[name]
    out["load_average_end"] = os.getloadavg()
    return out


if __name__ == "__main__":
    print(json.dumps(main()))
