"""Where the light CLI's start-up CPU goes, as whole processes: the libraries' floor beside the CLI itself.

    python tests/benchmarks/bench_startup_floor.py                 # best of 9, 19,000 requests
    python tests/benchmarks/bench_startup_floor.py --repeat 15

Each step is a ``python -c`` program that does what the step before it did and one thing more, run as a child
process with the light CLI's process set-up (``OPENBLAS_NUM_THREADS=1``; ``gc.freeze()`` before exit); its CPU time
(user + system) is read with ``resource.getrusage(RUSAGE_CHILDREN)``, the steps interleaved, best of ``--repeat``:

- ``interpreter``: ``pass``
- ``numpy``: ``import numpy``
- ``parquet_reader``: and pyarrow's Parquet reader (``pyarrow._parquet``, what ``traceio`` imports)
- ``pydantic_model``: and one pydantic model built (pydantic's own imports, its plugin look-up)
- ``read_trace``: and the hour read into numpy arrays (``traceio.read_trace_arrays``)
- ``engine_imports``: and every engine module the CLI imports (the scenario schema's models, the simulator)
- ``parsed``: and the scenario parsed and its workload built from the hour
- ``light_cli``: the light CLI itself (``python -m simulations.engine.run ... --trace HOUR --json``)

``read_trace`` is the floor of the libraries a Parquet replay validated by a pydantic schema needs; the CLI adds the
engine's imports, the parse and the run. The workload is ``bench_startup.py``'s (the code trace's hour replicated to
``--requests`` requests). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_startup import write_hour  # noqa: E402

TARGET = 0.2  # the light CLI's goal, CPU-s

STEPS = {
    "interpreter": "pass",
    "numpy": "import numpy",
    "parquet_reader": "from pyarrow._parquet import ParquetReader",
    "pydantic_model": "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int\nM(x=1)",
    "read_trace": "from simulations.engine.workload.traceio import read_trace_arrays\nread_trace_arrays(TRACE)",
    "engine_imports": "from simulations.engine import parse_scenario, simulate\nimport simulations.engine.simulator.loop\n"
                      "import simulations.engine.results.metrics, simulations.engine.results.validity",
    "parsed": "import json\nfrom simulations.engine.simulator.scenario import build_workload\n"
              "s = parse_scenario(json.load(open(SCENARIO))).with_strategy(None)\nbuild_workload(s, trace=TRACE)",
}


def programs(trace: Path) -> dict[str, list[str]]:
    scenario = str(ROOT / "fixtures" / "scenarios" / "code_anchor.json")
    head = f"import gc\nTRACE = {str(trace)!r}\nSCENARIO = {scenario!r}\n"
    out, body = {}, ""
    for name, code in STEPS.items():
        body += code + "\n"
        out[name] = [sys.executable, "-c", head + body + "gc.freeze()\n"]
    out["light_cli"] = [sys.executable, "-m", "simulations.engine.run", scenario, "--trace", str(trace), "--json"]
    return out


def child_cpu(cmd: list[str], env: dict) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{cmd[-1][:200]} failed:\n{proc.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=19_000)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)
    out: dict = {"requests": args.requests, "repeat": args.repeat, "load_average_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "hour.parquet"
        write_hour(args.requests, trace)
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(Path(tmp) / "pyc"), OPENBLAS_NUM_THREADS="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        progs = programs(trace)
        for cmd in progs.values():  # warm-up: writes the bytecode cache
            child_cpu(cmd, env)
        runs: dict[str, list[float]] = {k: [] for k in progs}
        for _ in range(args.repeat):  # interleaved, so a burst of load touches every step alike
            for name, cmd in progs.items():
                runs[name].append(round(child_cpu(cmd, env), 4))
    best = {name: min(cpus) for name, cpus in runs.items()}
    previous = 0.0
    for name, cpus in runs.items():
        step = {"cpu_s_best": best[name], "runs": cpus}
        if name != "light_cli":
            step["added_cpu_s"] = round(best[name] - previous, 4)
            previous = best[name]
        out[name] = step
    out["library_floor_cpu_s"] = best["read_trace"]
    out["target_cpu_s"] = TARGET
    out["light_cli_met"] = best["light_cli"] <= TARGET
    out["load_average_end"] = os.getloadavg()
    return out


if __name__ == "__main__":
    result = main()
    for name in [*STEPS, "light_cli"]:
        step = result[name]
        added = f"  (+{step['added_cpu_s']:.3f})" if "added_cpu_s" in step else ""
        print(f"{name:16} {step['cpu_s_best']:.3f} CPU-s best{added}")
    print(json.dumps(result))
