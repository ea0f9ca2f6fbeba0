from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from planner.accounts.access import team_required
from planner.comparisons import kinds, selectors
from planner.comparisons.api.serializers import (
    ComparisonCreateSerializer,
    ComparisonSerializer,
    RoutingSweepCreateSerializer,
)
from planner.input_errors import input_error
from planner.jobs.api.serializers import JobSerializer


class ComparisonViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Strategy comparisons of the caller's team: one scenario x strategies, a child job per strategy."""

    serializer_class = ComparisonSerializer
    ordering_fields = ["created"]

    def get_queryset(self):
        return selectors.comparisons_for(self.request.user)

    @extend_schema(request=ComparisonCreateSerializer, responses={201: ComparisonSerializer})
    def create(self, request, *args, **kwargs):
        """One request shape for every kind of comparison: the scenario's kind (fleet, serverless, operator-level)
        decides what its variants are (kinds.parse_request)."""
        if not isinstance(request.data, dict):
            raise input_error("request", "the body must be a JSON object", "see /api/docs/")
        ComparisonCreateSerializer(data=request.data).is_valid(raise_exception=True)  # types, as documented
        team = team_required(request.user)
        try:
            kind, req = kinds.parse_request(request.data)
            comp = kind.start(team=team, user=request.user, request=req)
        except kinds.RequestError as exc:
            raise input_error(exc.field, exc.message, exc.hint) from None
        comp.refresh_from_db()
        return Response(ComparisonSerializer(comp).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: OpenApiResponse(description="registered strategy bundles: name, strategy, "
                                                            "family, description, params, policy, engine, "
                                                            "predictor, signal, sources")})
    @action(detail=False, methods=["get"], url_path="bundles")
    def bundles(self, request):
        """Named strategy bundles a comparison can select with ``"bundles": [...]``."""
        from planner.comparisons.core.bundles import bundle_names, get_bundle

        return Response([get_bundle(n).to_dict() for n in bundle_names()])

    @extend_schema(request=RoutingSweepCreateSerializer, responses={202: JobSerializer})
    @action(detail=False, methods=["post"], url_path="routing-sweeps")
    def routing_sweep(self, request):
        """Start a routing sweep on the workers; its result (points, knees) is the job's ``result``."""
        from planner.comparisons import routing

        ser = RoutingSweepCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        data = ser.validated_data
        team = team_required(request.user)
        try:
            params = routing.clean_params(rates=data["rates"], routers=data.get("routers") or routing.routers_known(),
                                          minutes=data["minutes"], knee_attainment=data["knee_attainment"])
        except routing.SweepInputError as exc:
            raise ValidationError({exc.field: exc.message}) from None
        job = routing.start_routing_sweep(team=team, user=request.user, params=params)
        job.refresh_from_db()
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={(200, "text/csv"): OpenApiResponse(description="every number, long format")})
    @action(detail=True, methods=["get"], url_path="csv")
    def export_csv(self, request, pk=None):
        comp = self.get_object()
        resp = HttpResponse(kinds.export_csv(comp), content_type="text/csv")
        resp["Content-Disposition"] = f'attachment; filename="comparison-{comp.pk}.csv"'
        return resp

    @extend_schema(responses={(200, "application/json"): OpenApiResponse(description="every number")})
    @action(detail=True, methods=["get"], url_path="export")
    def export_json(self, request, pk=None):
        comp = self.get_object()
        resp = HttpResponse(selectors.export_json(comp), content_type="application/json")
        resp["Content-Disposition"] = f'attachment; filename="comparison-{comp.pk}.json"'
        return resp

    @extend_schema(responses={(200, "application/pdf"): OpenApiResponse(description="cost report for finance")})
    @action(detail=True, methods=["get"], url_path="pdf")
    def export_pdf(self, request, pk=None):
        comp = self.get_object()
        if not comp.summary.get("rows"):
            raise ValidationError({"comparison": f"not aggregated yet (status {comp.status}); the report needs the "
                                                 "finished savings table"})
        resp = HttpResponse(kinds.export_pdf(comp), content_type="application/pdf")
        resp["Content-Disposition"] = f'attachment; filename="comparison-{comp.pk}-cost-report.pdf"'
        return resp
