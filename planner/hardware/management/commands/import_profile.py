"""python manage.py import_profile FILE [--team TEAM] [--json] [fit options]

FILE is a catalogue JSON file or a perf_model.csv-format table (one deployment fitted per
model/hardware/tensor_parallel group). All or nothing: on any error nothing is stored.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from planner.accounts.models import Team
from planner.catalogue.errors import ProfileError
from planner.catalogue.perfcsv import TIME_UNITS, TOKEN_TIME_MODES
from planner.hardware.services import import_profile


class Command(BaseCommand):
    help = "Import a hardware profile: a catalogue JSON file or a perf_model.csv-format table (fits deployments)."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--team", help="team that will own the entries (default: the only team, if one)")
        parser.add_argument("--user", help="username recorded as creator (optional)")
        parser.add_argument("--time-unit", choices=TIME_UNITS, default="auto")
        parser.add_argument(
            "--token-time",
            choices=TOKEN_TIME_MODES,
            default="auto",
            help="per_token: token_time per decode iteration; total: for token_size tokens",
        )
        parser.add_argument("--split", choices=["rows", "configs"], default="rows")
        parser.add_argument("--holdout", type=float, default=0.2)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--loss", choices=["l1", "l2"], default="l1")
        parser.add_argument(
            "--prefill-form",
            choices=["contract", "rich"],
            default="contract",
            help="rich adds c_sq*sum(prompt^2) + c_req*prompts to the prefill fit",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def _fail(self, opts, error: dict):
        if opts["json"]:
            self.stdout.write(json.dumps({"ok": False, "error": error}))
        text = error["message"] + (f" (at {error['where']})" if error["where"] else "")
        raise CommandError(text + (f". Fix: {error['hint']}" if error["hint"] else ""))

    def handle(self, *args, **opts):
        path = Path(opts["file"])
        if not path.is_file():
            self._fail(opts, {"message": f"no such file: {path}", "where": "FILE", "hint": "give the path of a file"})
        if opts["team"]:
            team = Team.objects.filter(name=opts["team"]).first()
            if team is None:
                self._fail(
                    opts,
                    {
                        "message": f"no team {opts['team']!r}",
                        "where": "--team",
                        "hint": "create it (manage.py create_user USER --team TEAM; the password is read from a prompt or --password-stdin) or name an existing one",
                    },
                )
        else:
            teams = list(Team.objects.all()[:2])
            if len(teams) != 1:
                self._fail(
                    opts,
                    {
                        "message": "--team is required" if teams else "there is no team yet",
                        "where": "--team",
                        "hint": "pass --team NAME",
                    },
                )
            team = teams[0]
        user = None
        if opts["user"]:
            user = get_user_model().objects.filter(username=opts["user"]).first()
        fit_opts = {
            "time_unit": opts["time_unit"],
            "token_time": opts["token_time"],
            "split": opts["split"],
            "holdout": opts["holdout"],
            "seed": opts["seed"],
            "loss": opts["loss"],
            "prefill_form": opts["prefill_form"],
        }
        try:
            summary = import_profile(team, user, path.read_bytes(), filename=path.name, **fit_opts)
        except ProfileError as exc:
            self._fail(opts, exc.as_dict())
        summary = {"ok": True, "team": team.name, "file": str(path), **summary}
        if opts["json"]:
            self.stdout.write(json.dumps(summary))
            return
        for key in ("gpu_types", "models"):
            for e in summary[key]:
                self.stdout.write(f"{key[:-1]} {e['name']} ({'created' if e['created'] else 'updated'})")
        for d in summary["deployments"]:
            line = f"deployment {d['name']} #{d['id']} ({'created' if d['created'] else 'updated'})"
            held = d.get("heldout")
            if held and held["prompt_time"]["n"] and held["token_time"]["n"]:
                pt, tt = held["prompt_time"], held["token_time"]
                line += (
                    f": held-out prompt_time median {pt['median_ape']:.1%} p90 {pt['p90_ape']:.1%}, "
                    f"token_time median {tt['median_ape']:.1%} p90 {tt['p90_ape']:.1%}"
                )
            self.stdout.write(line)
