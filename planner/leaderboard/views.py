from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from planner.leaderboard import store
from planner.leaderboard.core.report import COMMAND


@login_required
def leaderboard(request):
    """The published board: overall table, then one table per trace (docs/leaderboard.md in the browser)."""
    board = store.load()
    return render(request, "leaderboard/leaderboard.html", {"board": board, "command": COMMAND})
