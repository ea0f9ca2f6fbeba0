from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from planner.leaderboard import store
from planner.leaderboard.core.report import COMMAND, headline


@login_required
def leaderboard(request):
    """The published board: overall table, then one table per trace (docs/leaderboard.md in the browser)."""
    board = store.load()
    headlines = [headline(t) for t in board["traces"]] if board else []
    return render(request, "leaderboard/leaderboard.html", {"board": board, "command": COMMAND,
                                                            "headlines": headlines})
