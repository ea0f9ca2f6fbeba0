from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from planner.accounts.access import team_of
from planner.opscale.spec import SpecError
from planner.opscaling.api.serializers import (
    OperatorPlanCreateSerializer,
    OperatorPlanListSerializer,
    OperatorPlanSerializer,
)
from planner.opscaling.selectors import operator_plans_for
from planner.opscaling.services import create_operator_plan


def _error(message: str, where: str, hint: str, code=status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"error": {"message": message, "where": where, "hint": hint}}, status=code)


class OperatorPlanViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Operator-level plans of the caller's team. POST a spec naming one of your traces; a job computes it."""

    ordering_fields = ["created"]

    def get_queryset(self):
        return operator_plans_for(self.request.user)

    def get_serializer_class(self):
        if self.action == "create":
            return OperatorPlanCreateSerializer
        if self.action == "list":
            return OperatorPlanListSerializer
        return OperatorPlanSerializer

    @extend_schema(request=OperatorPlanCreateSerializer, responses={201: OperatorPlanSerializer})
    def create(self, request, *args, **kwargs):
        incoming = OperatorPlanCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        team = team_of(request.user)
        if team is None:
            return _error("your user belongs to no team", "team", "ask an administrator")
        try:
            plan = create_operator_plan(
                team=team, user=request.user, spec=incoming.validated_data["spec"], name=incoming.validated_data["name"]
            )
        except SpecError as exc:
            return _error(exc.message, f"spec.{exc.field}", "see docs/opscale.md for the spec")
        plan.refresh_from_db()
        return Response(OperatorPlanSerializer(plan).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={(200, "application/pdf"): OpenApiTypes.BINARY, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def pdf(self, request, pk=None):
        from planner.opscale.report import build_pdf

        plan = self.get_object()
        if not plan.result:
            return _error(
                "the plan has no result yet", "operator_plan", "wait for its job to finish", status.HTTP_409_CONFLICT
            )
        response = HttpResponse(
            build_pdf(plan.result, f"Operator-level plan #{plan.pk}: {plan.name}"), content_type="application/pdf"
        )
        response["Content-Disposition"] = f'attachment; filename="operator-plan-{plan.pk}.pdf"'
        return response
