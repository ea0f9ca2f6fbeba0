"""python manage.py create_user USERNAME --team TEAM [--owner] [--password-stdin] [--json]

The password is read from an interactive prompt (typed twice) or, for scripts, from the first line of standard
input with --password-stdin; never from the command line, where `ps` and shell history would show it. It must
pass Django's password validators (AUTH_PASSWORD_VALIDATORS)."""

import getpass
import json
import sys

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from planner.accounts.models import Membership
from planner.accounts.services import create_user


class Command(BaseCommand):
    help = "Create a user in a team (the team is created if new) and print a new API token."
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--team", required=True)
        parser.add_argument("--owner", action="store_true", help="make the user the team's owner")
        parser.add_argument("--password-stdin", action="store_true",
                            help="read the password from the first line of standard input (for scripts)")
        parser.add_argument("--password", help="refused: a password on the command line leaks through ps and history")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        if opts["password"] is not None:
            raise CommandError("--password is not accepted (ps and shell history would show it); type it at the "
                               "prompt or pipe it: printf '%s\\n' \"$PW\" | manage.py create_user NAME --team T "
                               "--password-stdin")
        if get_user_model().objects.filter(username=opts["username"]).exists():
            raise CommandError(f"user {opts['username']!r} exists already; pick another name")
        password = self._read_password(opts)
        role = Membership.Role.OWNER if opts["owner"] else Membership.Role.MEMBER
        try:
            user, token = create_user(opts["username"], password, opts["team"], role=role)
        except ValidationError as exc:
            raise CommandError("password refused: " + " ".join(exc.messages)) from None
        if opts["json"]:
            self.stdout.write(json.dumps({"id": user.pk, "username": user.username, "team": opts["team"], "token": token}))
        else:
            self.stdout.write(f"created {user.username} in team {opts['team']}; API token: {token}")

    def _read_password(self, opts) -> str:
        stdin = opts.get("stdin") or sys.stdin
        if opts["password_stdin"]:
            password = stdin.readline().rstrip("\r\n")
        elif stdin.isatty():
            password = getpass.getpass("Password: ")
            if getpass.getpass("Password (again): ") != password:
                raise CommandError("the two passwords differ")
        else:
            raise CommandError("no terminal to prompt for the password; pipe it with --password-stdin")
        if not password:
            raise CommandError("empty password")
        return password
