from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from planner.accounts.access import team_required
from planner.capacity import selectors
from planner.capacity.api.serializers import CapacitySearchCreateSerializer, CapacitySearchSerializer
from planner.capacity.core.spec import SpecError
from planner.capacity.services import start_search
from planner.input_errors import input_error, scenario_error


class CapacitySearchViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Capacity searches of the caller's team: the cheapest fleet per strategy meeting the SLOs, and the answer."""

    serializer_class = CapacitySearchSerializer
    ordering_fields = ["created"]

    def get_queryset(self):
        return selectors.searches_for(self.request.user)

    @extend_schema(request=CapacitySearchCreateSerializer, responses={201: CapacitySearchSerializer})
    def create(self, request, *args, **kwargs):
        from simulations.engine import ScenarioError

        ser = CapacitySearchCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        data = ser.validated_data
        team = team_required(request.user)
        try:
            search = start_search(team=team, user=request.user, scenario=data["scenario"], spec=data.get("spec") or {},
                                  name=data.get("name", ""))
        except ScenarioError as exc:
            raise scenario_error(exc) from None
        except SpecError as exc:
            raise input_error(f"spec.{exc.where}" if exc.where != "spec" else "spec", exc.message, exc.hint) from None
        search.refresh_from_db()
        return Response(CapacitySearchSerializer(search).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: OpenApiResponse(description="the decision: what to run, cost band, SLO "
                                                            "probabilities, rejected alternative, sensitivity")})
    @action(detail=True, methods=["get"], url_path="answer")
    def answer(self, request, pk=None):
        search = self.get_object()
        return Response({"id": search.pk, "status": search.status, "answer": search.answer or None})

    @extend_schema(responses={(200, "text/csv"): OpenApiResponse(description="candidates x KPIs with bands")})
    @action(detail=True, methods=["get"], url_path="csv")
    def export_csv(self, request, pk=None):
        search = self.get_object()
        resp = HttpResponse(selectors.export_csv(search), content_type="text/csv")
        resp["Content-Disposition"] = f'attachment; filename="capacity-search-{search.pk}.csv"'
        return resp

    @extend_schema(responses={(200, "application/pdf"): OpenApiResponse(description="the decision: page 1 the card")})
    @action(detail=True, methods=["get"], url_path="pdf")
    def export_pdf(self, request, pk=None):
        from rest_framework.exceptions import ValidationError

        search = self.get_object()
        if not search.answer:
            raise ValidationError({"search": f"no answer yet (status {search.status}); the report needs one"})
        resp = HttpResponse(selectors.export_pdf(search), content_type="application/pdf")
        resp["Content-Disposition"] = f'attachment; filename="capacity-search-{search.pk}.pdf"'
        return resp
