import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of
from planner.backtests.core.replicas import ReplicaFileError
from planner.backtests.models import Backtest
from planner.backtests.selectors import backtests_for, deployment_checks
from planner.backtests.services import check_backtest, start_backtest
from planner.comparisons.core.bundles import bundle_names, get_bundle
from planner.comparisons.core.variants import STRATEGIES, VariantError
from planner.comparisons.selectors import load_fixture, scenario_fixtures
from simulations.engine import ScenarioError

MAX_UPLOAD = 20_000_000


def _context(request, form=None, error=None):
    return {"backtests": backtests_for(request.user)[:200], "fixtures": scenario_fixtures(),
            "strategies": STRATEGIES, "bundles": [(n, get_bundle(n).description) for n in bundle_names()],
            "form": form or {"fixture": "industry_burst"}, "error": error}


@login_required
def backtest_list(request):
    return render(request, "backtests/list.html", _context(request))


def _scenario_from(post) -> dict:
    text = (post.get("scenario_json") or "").strip()
    if text:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioError("scenario", f"is not JSON: {exc.msg} (line {exc.lineno})") from None
        if not isinstance(value, dict):
            raise ScenarioError("scenario", "must be a JSON object")
        return value
    try:
        return load_fixture(post.get("fixture", ""))
    except KeyError:
        raise ScenarioError("scenario", "pick a bundled scenario or paste one") from None


def _csv_from(request, field: str = "replicas") -> str:
    upload = request.FILES.get(f"{field}_file")
    if upload is not None:
        if upload.size > MAX_UPLOAD:
            raise ReplicaFileError(field, f"the file is larger than {MAX_UPLOAD:,} bytes")
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ReplicaFileError(field, "is not UTF-8 text (a CSV file)") from None
    return request.POST.get(f"{field}_csv", "")


def _float(post, name):
    text = (post.get(name) or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ScenarioError(name, f"{text!r} is not a number") from None


def _seeds(post) -> list[int]:
    text = (post.get("seeds") or "").strip()
    try:
        seeds = [int(x) for x in text.replace(",", " ").split()]
    except ValueError:
        raise ScenarioError("seeds", f"{text!r}: give whole numbers like 1 2 3") from None
    if len(seeds) > 10 or any(s < 0 for s in seeds):
        raise ScenarioError("seeds", "at most 10 seeds, each >= 0")
    return seeds


@login_required
@require_POST
def backtest_create(request):
    team = team_of(request.user)
    post = request.POST
    try:
        if team is None:
            raise ScenarioError("team", "your user belongs to no team")
        scenario = _scenario_from(post)
        gap = _float(post, "max_gap_s")
        recorded, alternatives, measured = check_backtest(
            team=team, scenario=scenario, replicas_csv=_csv_from(request), origin=(post.get("origin") or "").strip()
            or None, strategies=post.getlist("strategies"), bundles=post.getlist("bundles"),
            max_gap_s=gap if gap is not None else 900.0, latency_csv=_csv_from(request, "latency"))
        bt = start_backtest(team=team, user=request.user, scenario=scenario, recorded=recorded,
                            alternatives=alternatives, name=post.get("name", ""), startup_s=_float(post, "startup_s"),
                            measured=measured, seeds=_seeds(post))
    except ScenarioError as exc:
        return render(request, "backtests/list.html", _context(request, post, f"scenario.{exc.field}: {exc.message}"),
                      status=400)
    except ReplicaFileError as exc:
        return render(request, "backtests/list.html", _context(request, post, str(exc)), status=400)
    except VariantError as exc:
        return render(request, "backtests/list.html", _context(request, post, str(exc)), status=400)
    messages.info(request, f"Back-test #{bt.pk} queued.")
    return redirect("backtests:detail", pk=bt.pk)


def _figure(result: dict, endpoint: str) -> dict:
    """Plotly JSON: the recorded replicas and each run's active instances on one endpoint."""
    t_min = [x / 60 for x in result["t"]]
    data = [{"x": t_min, "y": result["recorded"][endpoint], "name": "recorded", "mode": "lines",
             "line": {"shape": "hv", "width": 3, "color": "#222"}}]
    for r in result["runs"]:
        data.append({"x": t_min, "y": r["active"].get(endpoint, []), "name": r["key"], "mode": "lines",
                     "line": {"shape": "hv", "dash": "dot" if r["key"] == "as-run" else "solid"}})
    layout = {"title": {"text": f"{endpoint}: replicas recorded and replayed"},
              "xaxis": {"title": {"text": "minutes from the window's start"}},
              "yaxis": {"title": {"text": "instances (serving + starting)"}}, "height": 360}
    return {"data": data, "layout": layout}


@login_required
def backtest_detail(request, pk: int):
    bt = get_for_user_or_404(request.user, Backtest.objects.select_related("job"), pk=pk)
    result = bt.result or {}
    rows = []
    for r in result.get("runs", []):
        errs = r.get("replica_error", {})
        att, d_att = r.get("attainment"), r.get("attainment_delta")
        band = (result.get("bands") or {}).get(r["key"]) or {}
        rows.append({**r, "band_gpu": band.get("gpu_hours_delta"),
                     "band_att": [100 * x for x in band["attainment_delta"]] if band.get("attainment_delta") else None,
                     "mae": max((e["mae"] for e in errs.values()), default=0.0),
                     "match_pct": 100 * min((e["match_share"] for e in errs.values()), default=1.0),
                     "attainment_pct": None if att is None else 100 * att,
                     "attainment_delta_pts": None if d_att is None else 100 * d_att})
    figures = {ep.replace("/", "-"): _figure(result, ep) for ep in result.get("recorded", {})} if result else {}
    return render(request, "backtests/detail.html", {"bt": bt, "result": result, "rows": rows, "figures": figures,
                                                      "scenario_json": json.dumps(bt.scenario, indent=1),
                                                      "checks": deployment_checks(bt.team, bt.scenario)})
