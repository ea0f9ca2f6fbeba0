"""Load the bundled demo data: a demo team and user, the public traces, a synthetic SageServe-like day.

Idempotent: running it again keeps what is there. The built-in hardware catalogue is synced by
`migrate` itself (planner.hardware's post_migrate hook).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from planner.accounts.models import Membership
from planner.accounts.services import create_user
from planner.traces.models import Trace
from planner.traces.services import DuplicateTrace, import_trace_file, synthesise_trace

FIXTURES = Path(settings.BASE_DIR) / "fixtures"
DEMO_TRACES = [
    ("Azure code 2023 (1 h, public)", FIXTURES / "traces" / "azure_code_2023.csv", {"region": "eastus", "model": "llama2-70b", "tier": "IW-F"}),
    ("Mooncake synthetic (public)", FIXTURES / "traces" / "mooncake_synthetic.jsonl", {"region": "westus", "model": "llama2-70b", "tier": "IW-N"}),
]


class Command(BaseCommand):
    help = "Create the demo team/user (demo / demo-planner) and load the demo traces."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo-planner")
        parser.add_argument("--team", default="Demo fleet")
        parser.add_argument("--no-synth", action="store_true", help="skip the synthetic SageServe-like day")

    def handle(self, *args, **opts):
        User = get_user_model()
        user = User.objects.filter(username=opts["username"]).first()
        if user is None:
            user, token = create_user(opts["username"], opts["password"], opts["team"], role=Membership.Role.OWNER)
            self.stdout.write(f"created user {user.username} (password {opts['password']}), API token {token}")
        team = user.membership.team
        for name, path, assign in DEMO_TRACES:
            if Trace.objects.filter(team=team, name=name).exists():
                continue
            try:
                trace = import_trace_file(path, team=team, user=user, name=name, **assign)
            except DuplicateTrace:
                continue
            self.stdout.write(f"imported {name}: {trace.requests} requests")
        if not opts["no_synth"]:
            spec = catalogue_named(json.loads((FIXTURES / "workloads" / "sageserve_day.json").read_text()))
            try:
                trace = synthesise_trace(spec, team=team, user=user, name="SageServe-like day (synthetic)", seed=7)
                self.stdout.write(f"synthesised {trace.name}: {trace.requests} requests")
            except DuplicateTrace:
                pass
        self.stdout.write(self.style.SUCCESS(f"demo data ready: log in as {opts['username']} at /login/"))


def catalogue_named(spec: dict) -> dict:
    """The SageServe-like day's spec with its models under the hardware catalogue's names (model-a -> llama2-70b,
    ..., the renaming demo_day.json applies), so the demo trace's regions and models map onto catalogue deployments
    in the comparison builder and every page speaks of the same models."""
    rename = json.loads((FIXTURES / "scenarios" / "demo_day.json").read_text())["workload"]["rename"]["model"]

    def walk(node):
        if isinstance(node, dict):
            return {_renamed(k, rename): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return _renamed(node, rename) if isinstance(node, str) else node

    return walk(spec)


def _renamed(text: str, rename: dict) -> str:
    head, sep, tail = text.partition("|")  # per-(model, tier) keys read "model-c|NIW"
    return rename.get(head, head) + sep + tail
