from __future__ import annotations

from django.db.models import Prefetch
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from forecasts import services
from forecasts.api.serializers import (
    ForecastRunCreateSerializer,
    ForecastRunListSerializer,
    ForecastRunSerializer,
    ForecastSeriesDetailSerializer,
)
from forecasts.models import ForecastRun, ForecastSeries
from planner.accounts.access import team_required, visible_to
from planner.traces.models import Trace


class ForecastRunViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    """Forecast runs of the caller's team: per-series forecasts, intervals, backtests and leaderboards.

    POST starts a run (a parent job that fans out one job per series); GET /<id>/ returns the
    series table with each leaderboard; GET /<id>/series/<series_id>/ the full stored result.
    """

    filterset_fields = ["trace"]
    ordering_fields = ["created"]

    def get_queryset(self):
        qs = ForecastRun.objects.select_related("job", "trace")
        if self.action == "retrieve":
            qs = qs.prefetch_related(Prefetch("series", ForecastSeries.objects.select_related("job").defer("result")))
        return visible_to(self.request.user, qs)

    def get_serializer_class(self):
        if self.action == "create":
            return ForecastRunCreateSerializer
        if self.action == "list":
            return ForecastRunListSerializer
        return ForecastRunSerializer

    @extend_schema(request=ForecastRunCreateSerializer, responses={201: ForecastRunSerializer})
    def create(self, request):
        team = team_required(request.user)
        ser = ForecastRunCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        trace = visible_to(request.user, Trace.objects.all()).filter(pk=ser.validated_data["trace"]).first()
        if trace is None:
            raise ValidationError(
                {"trace": f"no trace #{ser.validated_data['trace']} in your team; list yours at /api/traces/"}
            )
        if not trace.is_ready:
            raise ValidationError({"trace": f"trace #{trace.pk} is {trace.current_status()[0]}, not ready; wait until "
                                            "its status is ready"})
        run = services.create_run(trace=trace, team=team, user=request.user, params=ser.to_params())
        run = ForecastRun.objects.select_related("job").prefetch_related("series__job").get(pk=run.pk)
        return Response(ForecastRunSerializer(run).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        services.delete_run(instance)

    @extend_schema(responses={200: ForecastSeriesDetailSerializer})
    @action(detail=True, methods=["get"], url_path=r"series/(?P<series_id>\d+)")
    def series(self, request, pk=None, series_id=None):
        run = self.get_object()  # the team check: another team's run is a 404
        series = ForecastSeries.objects.select_related("job").filter(run=run, pk=series_id).first()
        if series is None:
            raise Http404("no such series in this run")
        return Response(ForecastSeriesDetailSerializer(series).data)
