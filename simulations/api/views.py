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
                                  mode=ser.validated_data["mode"], name=ser.validated_data.get("name", ""))
        run.refresh_from_db()
        return Response(SimulationRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        """The full result (summary, per-tier latencies and SLO attainment, usage, timelines, scaling events)."""
        run = self.get_object()
        if run.result is None:
            return Response({"error": {"message": f"run #{run.pk} has no results yet (status {run.status})",
                                       "where": "run", "hint": "poll the run or its job until it succeeds"},
                             "detail": "no results yet"}, status=status.HTTP_409_CONFLICT)
        return Response(run.result)
