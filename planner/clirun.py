"""What the management commands share so that work done on the command line shows in the workspace.

``cli_team`` picks the team a command's rows belong to (``--team``, else ``--user``'s team, else the demo
user's team, else the only team, else a "Demo fleet" team); ``finished_job`` records a run that the
command already did in-process as a job row that ended, with wall-clock start and end, so its page, the
lists and the API show it like any run started in the browser.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from planner.accounts.models import Team

DEMO_USER = "demo"
DEMO_TEAM = "Demo fleet"


def add_team_arguments(parser) -> None:
    parser.add_argument("--team", default="", help="owning team (created if new); default: --user's team, "
                                                   "else the demo user's team")
    parser.add_argument("--user", default="", help="username recorded as the creator (must exist)")


def cli_team(team_name: str = "", username: str = ""):
    """(team, user) for a command's rows. An unknown --user is an error; an unknown --team is created."""
    User = get_user_model()
    user = None
    if username:
        user = User.objects.filter(username=username).select_related("membership__team").first()
        if user is None:
            raise CommandError(f"--user: no user {username!r}; create it with `manage.py create_user`")
    if team_name:
        team, _ = Team.objects.get_or_create(name=team_name)
        return team, user
    if user is not None and hasattr(user, "membership"):
        return user.membership.team, user
    demo = User.objects.filter(username=DEMO_USER).select_related("membership__team").first()
    if demo is not None and hasattr(demo, "membership"):
        return demo.membership.team, demo
    teams = list(Team.objects.all()[:2])
    if len(teams) == 1:
        return teams[0], user
    team, _ = Team.objects.get_or_create(name=DEMO_TEAM)
    return team, user


def finished_job(*, team, user, kind: str, params: dict, started: datetime, finished: datetime,
                 status: str = "succeeded", result: dict | None = None, message: str = "",
                 last_error: dict | None = None):
    """A job row for work a command did in-process (never dispatched: it has ended already)."""
    from planner.jobs.models import Job

    return Job.objects.create(team=team, created_by=user, kind=kind, params={**params, "source": "cli"},
                              status=status, progress=100.0 if status == "succeeded" else 0.0,
                              message=message[:300] or ("done (command line)" if status == "succeeded" else ""),
                              result=result or {}, last_error=last_error, started=started, finished=finished)


def csv_list(text: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``: a comma-separated option's values."""
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def int_list(text: str, option: str) -> list[int]:
    """A comma-separated option of whole numbers (``--seeds 1,2,3``); anything else is a CommandError."""
    try:
        return [int(x) for x in csv_list(text)]
    except ValueError:
        raise CommandError(f"{option}: give whole numbers like 1,2,3, not {text!r}") from None


def read_json_file(path: Path, what: str = "file") -> dict:
    """The JSON object in ``path``; a missing file or bad JSON is a CommandError naming the file."""
    if not path.exists():
        raise CommandError(f"{path}: no such {what}")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: not valid JSON ({exc})") from None
