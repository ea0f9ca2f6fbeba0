import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from planner.accounts.models import Membership
from planner.accounts.services import create_user


class Command(BaseCommand):
    help = "Create a user in a team (the team is created if new) and print the API token."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--team", required=True)
        parser.add_argument("--owner", action="store_true", help="make the user the team's owner")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        if get_user_model().objects.filter(username=opts["username"]).exists():
            raise CommandError(f"user {opts['username']!r} exists already; pick another name")
        role = Membership.Role.OWNER if opts["owner"] else Membership.Role.MEMBER
        user, token = create_user(opts["username"], opts["password"], opts["team"], role=role)
        if opts["json"]:
            self.stdout.write(json.dumps({"id": user.pk, "username": user.username, "team": opts["team"], "token": token}))
        else:
            self.stdout.write(f"created {user.username} in team {opts['team']}; API token: {token}")
