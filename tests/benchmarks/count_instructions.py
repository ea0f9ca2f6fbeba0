"""Instructions of the compiled event loop (``Simulator._run``) on the benchmark cases, counted by valgrind.

    python tests/benchmarks/count_instructions.py                       # fleet80, fleet8 and a 100k bench-day slice
    python tests/benchmarks/count_instructions.py --cases day --requests 200000 --root ../other-checkout

CPU time on a shared or virtual host varies by 15-40 % from one run of the same build to the next, more than most
engine changes; an instruction count does not (valgrind's callgrind counts the same total for the same binary and
inputs whatever else the machine does; string hashing is fixed, PYTHONHASHSEED=0). Each case runs in its own process under ``valgrind --tool=callgrind
--collect-atstart=no --toggle-collect=<Simulator._run>``: only the loop's instructions are counted, not the imports,
the workload build or the result. Cases: ``fleet80`` / ``fleet8`` (bench_month.py's fleet case: the code trace's hour
x10 on 80 instances, and the same requests time-stretched x10 on 8; ``ratio_80_over_8`` is the per-request ratio,
the instruction view of the 80-vs-8 goal) and ``day`` (bench_simulate.py's bench-day slice of ``--requests``).
``--root`` counts another checkout's engine (its own compiled build). Needs valgrind and a compiled engine. The last
line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CASE = r'''
import json, sys
root, case, requests = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root)
sys.path.insert(0, root + "/tests/benchmarks")
from simulations.engine import BUILD
if BUILD["kind"] != "compiled":
    raise SystemExit("the engine is not compiled here: run python -m simulations.engine.build")
from simulations.engine.simulator.loop import Simulator
if case.startswith("fleet"):
    from bench_month import fleet_case
    n = int(case[5:])
    sc, w = fleet_case(n, 10, 1.0 if n == 80 else 10.0)
else:
    from bench_simulate import _load
    from simulations.engine import build_workload, parse_scenario
    d = _load("bench_day.json")
    syn = d["workload"]["synthetic"]
    scale = requests / syn["total_requests"]
    syn["duration_s"] *= scale
    syn["peak_hour"] = syn["duration_s"] / 3600 / 2
    syn["total_requests"] = requests
    d.setdefault("engine", {})["mode"] = "fast"
    sc = parse_scenario(d)
    w = build_workload(sc)
sim = Simulator(sc, w)
sim.run()
print(json.dumps({"requests": len(w), "events": sim.state.events}))
'''


def loop_symbol(root: Path) -> str:
    """The C name of the compiled ``Simulator._run`` (Cython numbers its functions)."""
    libs = sorted((root / "simulations" / "engine" / "_compiled" / "simulator").glob("loop*.so"))
    if not libs:
        raise SystemExit(f"no compiled engine under {root}: run python -m simulations.engine.build there")
    names = subprocess.run(["nm", str(libs[0])], capture_output=True, text=True, check=True).stdout
    found = re.findall(r"\b(__pyx_pf_\w+_9Simulator_\d+_run)$", names, flags=re.M)
    if len(found) != 1:
        raise SystemExit(f"cannot tell Simulator._run's symbol in {libs[0]}: {found}")
    return found[0]


def count(root: Path, case: str, requests: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={loop_symbol(root)}",
               f"--callgrind-out-file={out}", sys.executable, "-c", CASE, str(root), case, str(requests)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root,
                              env=dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0"))
        if proc.returncode:
            raise SystemExit(f"{case} failed under valgrind:\n{proc.stderr[-3000:]}")
        collected = re.search(r"Collected : (\d+)", proc.stderr)
        run = json.loads(proc.stdout.strip().splitlines()[-1])
    instructions = int(collected.group(1))
    return {**run, "instructions": instructions, "per_request": round(instructions / run["requests"], 1)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="fleet80,fleet8,day", help="comma-separated: fleet80, fleet8, day")
    ap.add_argument("--requests", type=int, default=100_000, help="day: requests of the bench-day slice")
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose engine is counted (default: this one)")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt install valgrind)")
    root = Path(args.root).resolve()
    res: dict = {"root": str(root)}
    for case in [c.strip() for c in args.cases.split(",") if c.strip()]:
        if case not in ("fleet80", "fleet8", "day"):
            raise SystemExit(f"unknown case {case!r}: use fleet80, fleet8 or day")
        res[case] = count(root, case, args.requests)
        print(f"{case}: {res[case]['instructions']:,} instructions, {res[case]['per_request']:,} a request",
              file=sys.stderr)
    if "fleet80" in res and "fleet8" in res:
        res["ratio_80_over_8"] = round(res["fleet80"]["per_request"] / res["fleet8"]["per_request"], 3)
    return res


if __name__ == "__main__":
    print(json.dumps(main()))
