from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from planner.accounts.access import team_required
from planner.input_errors import scenario_error
from planner.optimizer.scenario import ScenarioError
from planner.plans.api.serializers import (
    CapacityPlanCreateSerializer,
    CapacityPlanListSerializer,
    CapacityPlanSerializer,
)
from planner.plans.exports import plan_csv
from planner.plans.selectors import plans_for
from planner.plans.services import create_plan


class CapacityPlanViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Multi-period capacity plans of the caller's team. POST a scenario; a job solves it."""

    ordering_fields = ["created", "total_cost"]

    def get_queryset(self):
        return plans_for(self.request.user)

    def get_serializer_class(self):
        if self.action == "create":
            return CapacityPlanCreateSerializer
        if self.action == "list":
            return CapacityPlanListSerializer
        return CapacityPlanSerializer

    @extend_schema(request=CapacityPlanCreateSerializer, responses={201: CapacityPlanSerializer})
    def create(self, request, *args, **kwargs):
        incoming = CapacityPlanCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        team = team_required(request.user)
        try:
            plan = create_plan(
                team=team, user=request.user, scenario=data["scenario"], name=data["name"], hours=data["hours"]
            )
        except ScenarioError as exc:
            raise scenario_error(exc) from None
        plan.refresh_from_db()
        return Response(CapacityPlanSerializer(plan).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def csv(self, request, pk=None):
        plan = self.get_object()
        if not plan.result:
            return Response(
                {
                    "error": {
                        "message": "the plan has no result yet",
                        "where": "plan",
                        "hint": "wait for its job to finish",
                    }
                },
                status=status.HTTP_409_CONFLICT,
            )
        response = HttpResponse(plan_csv(plan.result), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="plan-{plan.pk}.csv"'
        return response
