"""POST /api/comparisons/ with a serverless scenario (``"kind": "serverless"``, issue 18): the systems are the
variants. Reached from ComparisonViewSet.create; the answer is the comparison (201), as for fleet strategies."""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.response import Response

from planner.accounts.access import team_required
from planner.comparisons.core.serverless import SYSTEMS, ServerlessVariantError
from planner.input_errors import input_error


class ServerlessComparisonCreateSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    scenario = serializers.JSONField(help_text='a serverless spec with "kind": "serverless" '
                                               "(simulations/engine/serverless/spec.py)")
    systems = serializers.ListField(child=serializers.ChoiceField(choices=list(SYSTEMS)), required=False,
                                    default=list, max_length=len(SYSTEMS),
                                    help_text="default sllm, sllm+c, sllm+c+s, slinfer (or the spec's systems)")
    baseline = serializers.CharField(required=False, allow_blank=True, help_text="default sllm")


def create(request) -> Response:
    from planner.comparisons.api.serializers import ComparisonSerializer
    from planner.comparisons.serverless import start_serverless_comparison
    from simulations.engine.serverless.spec import SpecError

    ser = ServerlessComparisonCreateSerializer(data=request.data)
    ser.is_valid(raise_exception=True)
    data = ser.validated_data
    team = team_required(request.user)
    try:
        comp = start_serverless_comparison(team=team, user=request.user, scenario=data["scenario"],
                                           systems=data.get("systems") or None,
                                           baseline=data.get("baseline") or None, name=data.get("name", ""))
    except SpecError as exc:
        raise input_error(f"scenario.{exc.where}" if exc.where else "scenario", exc.message, exc.hint) from None
    except ServerlessVariantError as exc:
        raise input_error(exc.field, exc.message) from None
    comp.refresh_from_db()
    return Response(ComparisonSerializer(comp).data, status=status.HTTP_201_CREATED)
