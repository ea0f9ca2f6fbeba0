from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from planner.input_errors import input_error
from planner.leaderboard import store
from planner.leaderboard.core.report import COMMAND


@extend_schema(parameters=[
    OpenApiParameter("trace", str, description="only this trace's table (e.g. azure-code)"),
    OpenApiParameter("runs", bool, description="true: include every simulation's figures")],
    responses={200: dict}, summary="The policy leaderboard at matched SLO (docs/leaderboard.md)")
@api_view(["GET"])
def leaderboard(request):
    """The published board: rules, overall ranking, per-trace rows with intervals over seeds, the runs' digest."""
    board = store.load()
    if board is None:
        raise NotFound({"error": {"message": "the leaderboard has not been generated on this server",
                                  "where": "docs/results/leaderboard.json", "hint": f"run `{COMMAND}`"}})
    runs = str(request.query_params.get("runs", "false")).lower()
    if runs not in ("true", "false", "1", "0"):
        raise input_error("query string: runs", f"{runs!r} is not a boolean", "use runs=true or runs=false")
    out = board if runs in ("true", "1") else store.without_runs(board)
    trace = request.query_params.get("trace")
    if trace is not None:
        names = [t["trace"] for t in board["traces"]]
        if trace not in names:
            raise input_error("query string: trace", f"no trace {trace!r} on the board",
                              f"use one of {', '.join(names)}")
        out = {**out, "traces": [t for t in out["traces"] if t["trace"] == trace]}
        if "runs" in out:
            out["runs"] = [r for r in out["runs"] if r["trace"] == trace]
    return Response(out)
