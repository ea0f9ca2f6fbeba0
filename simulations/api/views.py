from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from planner.accounts.access import team_required
from simulations import selectors, services
from simulations.api.serializers import (
    SimulationRunCreateSerializer,
    SimulationRunListSerializer,
    SimulationRunSerializer,
)


class SimulationRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Simulation runs of the caller's team. POST a scenario (or a fixture name); the run is a job."""

    ordering_fields = ["created", "name"]

    def get_queryset(self):
        return selectors.runs_for(self.request.user)

    def get_serializer_class(self):
        if self.action == "list":
            return SimulationRunListSerializer
        if self.action == "create":
            return SimulationRunCreateSerializer
        return SimulationRunSerializer

    @extend_schema(request=SimulationRunCreateSerializer, responses={201: SimulationRunSerializer,
                                                                    400: OpenApiTypes.OBJECT})
    def create(self, request, *args, **kwargs):
        ser = SimulationRunCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        team = team_required(request.user)
        scenario = ser.validated_data.get("scenario")
        if not scenario:
            fixtures = services.fixture_scenarios()
            name = ser.validated_data["fixture"]
            if name not in fixtures:
                raise ValidationError({"fixture": f"unknown fixture {name!r}; known: {sorted(fixtures)}"})
            scenario = fixtures[name]
        run = services.create_run(team=team, user=request.user, scenario=scenario,
                                  strategy=ser.validated_data.get("strategy", ""),
                                  mode=ser.validated_data["mode"], name=ser.validated_data.get("name", ""),
                                  result=ser.validated_data.get("result"))
        run.refresh_from_db()
        return Response(SimulationRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        """The full result. Table mode: summary, per-tier latencies and SLO attainment, usage, timelines, scaling
        events. Streamed run (``result_mode: "streaming"``): summary, tiers (histogram percentiles within
        ``percentile_rel_error``), ``hourly`` rollups per endpoint and tier, ``chunk_s``."""
        run = self.get_object()
        if run.result is None:
            return Response({"error": {"message": f"run #{run.pk} has no results yet (status {run.status})",
                                       "where": "run", "hint": "poll the run or its job until it succeeds"},
                             "detail": "no results yet"}, status=status.HTTP_409_CONFLICT)
        return Response(run.result)

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"], url_path="hourly.csv")
    def hourly_csv(self, request, pk=None):
        """The hourly rollups of a streamed run as CSV (hour, endpoint, tier, requests, completed, mean TTFT / E2E)."""
        from simulations.streamed_views import hourly_csv_response

        run = self.get_object()
        if not run.result or not run.result.get("hourly"):
            return Response({"error": {"message": f"run #{run.pk} has no hourly rollups (status {run.status}, "
                                                  f"result mode {run.result_mode})", "where": "run",
                                       "hint": "hourly rollups are kept by streamed runs once they succeed"},
                             "detail": "no hourly rollups"}, status=status.HTTP_409_CONFLICT)
        return hourly_csv_response(run)
