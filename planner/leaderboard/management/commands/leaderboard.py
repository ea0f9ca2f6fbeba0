"""manage.py leaderboard: regenerate docs/leaderboard.md and docs/results/leaderboard.json (docs/leaderboard.md)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from planner.leaderboard import store
from planner.leaderboard.core import publish, rules, run


def _list(text: str | None, cast=str):
    return [cast(x) for x in text.split(",") if x.strip()] if text else None


class Command(BaseCommand):
    help = ("Run every strategy on the leaderboard's public traces at matched SLO (rules: "
            "planner/leaderboard/core/rules.py) and write docs/leaderboard.md and docs/results/leaderboard.json")

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=run.default_workers(), help="processes (default 2)")
        parser.add_argument("--traces", help=f"comma-separated subset of {', '.join(rules.TRACES)}")
        parser.add_argument("--seeds", help="comma-separated seeds (default: the rules' five)")
        parser.add_argument("--strategies", help="comma-separated subset of the strategies")
        parser.add_argument("--limit-s", type=float, help="cut every window at this many seconds (a reduced board)")
        parser.add_argument("--out", help="results JSON (default docs/results/leaderboard.json)")
        parser.add_argument("--doc", help="markdown (default docs/leaderboard.md); with --out only, none is written "
                                          "unless given")
        parser.add_argument("--from-partial", action="store_true",
                            help="build the board from an interrupted run's partial file (complete traces only)")
        parser.add_argument("--render-only", action="store_true",
                            help="re-render the markdown from the results JSON, simulate nothing")

    def handle(self, *args, **o):
        out = Path(o["out"]) if o["out"] else store.results_path()
        doc = Path(o["doc"]) if o["doc"] else (None if o["out"] else store.doc_path())
        if o["render_only"]:
            if not out.is_file():
                raise CommandError(f"{out} does not exist: run the command without --render-only first")
            publish.rerender(out, doc or store.doc_path())
            self.stdout.write(f"wrote {doc or store.doc_path()}")
            return
        if o["from_partial"]:
            partial = out.with_suffix(".partial.jsonl")
            if not partial.is_file():
                raise CommandError(f"{partial} does not exist: no interrupted run to build from")
            board = publish.from_partial(partial, workers=o["workers"])
            publish.write(board, out, doc)
            self.stdout.write(f"wrote {out}" + (f" and {doc}" if doc else "") + "; traces left out: "
                              + (", ".join(board["meta"]["partial"]) or "none"))
            return
        strategies = _list(o["strategies"])
        for s in strategies or []:
            if s not in rules.STRATEGIES:
                raise CommandError(f"--strategies: unknown {s!r}; one of {', '.join(rules.STRATEGIES)}")
        try:
            seeds = _list(o["seeds"], int)
        except ValueError:
            raise CommandError("--seeds: give integers, e.g. 1,2,3") from None
        if o["workers"] < 1:
            raise CommandError("--workers: at least 1")
        started = time.monotonic()

        def progress(i, n):
            if sys.stderr.isatty() or i == n or i % 10 == 0:
                self.stderr.write(f"  {i}/{n} groups of runs, {time.monotonic() - started:.0f} s")

        partial = out.with_suffix(".partial.jsonl")
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text("")

        def sink(runs):  # every finished group, so a long run interrupted still shows what it did
            with partial.open("a") as f:
                f.writelines(json.dumps(r) + "\n" for r in runs)

        try:
            board = publish.generate(traces=_list(o["traces"]), seeds=seeds, strategies=strategies,
                                     limit_s=o["limit_s"], workers=o["workers"], progress=progress, sink=sink)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        publish.write(board, out, doc)
        partial.unlink(missing_ok=True)
        m = board["meta"]
        self.stdout.write(f"{m['runs']} runs, {m['wall_s']:.0f} s wall, {m['cpu_s']:.0f} CPU-s; digest "
                          f"{board['digest']}")
        self.stdout.write(f"wrote {out}" + (f" and {doc}" if doc else ""))
        for row in board["overall"]:
            med = "-" if row["median_saving_pct"] is None else f"{row['median_saving_pct']:+.1f} %"
            self.stdout.write(f"  {row['strategy']:18s} matched {row['matched']}/{row['traces']}  median saving "
                              f"{med:>9s}  mean rank {row['mean_rank']:.1f}")
