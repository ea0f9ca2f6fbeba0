"""Catalogue API. Lists show the caller's team entries plus the built-ins; built-ins are read-only
(403 with a hint to copy); another team's entries are 404."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.accounts.access import team_of
from planner.api.parsers import FormParser, MultiPartParser
from planner.catalogue.errors import ProfileError
from planner.hardware import services
from planner.hardware.api.serializers import (
    DeploymentListSerializer,
    DeploymentSerializer,
    GpuTypeSerializer,
    ImportSummarySerializer,
    ModelProfileSerializer,
    ProfileUploadSerializer,
)
from planner.hardware.selectors import deployments_for, gpus_for, models_for

UPLOAD_MAX_BYTES = getattr(settings, "HARDWARE_UPLOAD_MAX_BYTES", 20 * 1024 * 1024)


def _invalid(exc: ProfileError) -> ValidationError:
    return ValidationError({"error": exc.as_dict()})


class _CatalogueViewSet(viewsets.ModelViewSet):
    save = None  # service function (team, user, data, instance=None)

    def perform_create(self, serializer):
        try:
            serializer.instance = type(self).save(
                team_of(self.request.user), self.request.user, serializer.to_service_dict()
            )
        except ProfileError as exc:
            raise _invalid(exc) from None

    def perform_update(self, serializer):
        try:
            serializer.instance = type(self).save(
                team_of(self.request.user),
                self.request.user,
                serializer.to_service_dict(),
                instance=serializer.instance,
            )
        except ProfileError as exc:
            raise _invalid(exc) from None

    def update(self, request, *args, **kwargs):
        services._require_editable(team_of(request.user), self.get_object())
        return super().update(request, *args, **kwargs)

    def perform_destroy(self, instance):
        try:
            services.delete_entry(team_of(self.request.user), instance)
        except ProfileError as exc:
            raise _invalid(exc) from None


class GpuTypeViewSet(_CatalogueViewSet):
    """GPU types with prices per cloud/region (USD per GPU-hour, each with source and date)."""

    serializer_class = GpuTypeSerializer
    filterset_fields = ["name", "vendor", "builtin"]
    ordering_fields = ["name", "memory_gb"]
    save = staticmethod(services.save_gpu)

    def get_queryset(self):
        return gpus_for(self.request.user)

    @extend_schema(request=None, responses={201: GpuTypeSerializer})
    @action(detail=True, methods=["post"])
    def copy(self, request, pk=None):
        """An editable copy in the caller's team (prices included)."""
        gpu = services.copy_gpu(team_of(request.user), request.user, self.get_object())
        return Response(GpuTypeSerializer(gpu, context={"request": request}).data, status=status.HTTP_201_CREATED)


class ModelProfileViewSet(_CatalogueViewSet):
    """Model profiles: parameters, layers, KV-cache bytes per token, weight size."""

    serializer_class = ModelProfileSerializer
    filterset_fields = ["name", "builtin"]
    ordering_fields = ["name", "parameters_billion"]
    save = staticmethod(services.save_model)

    def get_queryset(self):
        return models_for(self.request.user)


class DeploymentViewSet(_CatalogueViewSet):
    """Deployments (model x GPU x tensor-parallel degree): latency model, KV capacity, theta, start-up
    times, prices. Filter by model, gpu, tp, basis, estimated, builtin."""

    filterset_fields = {
        "model__name": ["exact"],
        "gpu__name": ["exact"],
        "tp": ["exact"],
        "basis": ["exact"],
        "estimated": ["exact"],
        "builtin": ["exact"],
    }
    ordering_fields = ["name", "theta_tps", "kv_capacity_tokens", "tp"]
    save = staticmethod(services.save_deployment)

    def get_queryset(self):
        return deployments_for(self.request.user)

    def get_serializer_class(self):
        return DeploymentListSerializer if self.action == "list" else DeploymentSerializer

    @extend_schema(responses={200: OpenApiResponse(description="the engine's deployment spec (contract dict)")})
    @action(detail=True, methods=["get"], url_path="engine-spec")
    def engine_spec(self, request, pk=None):
        """The contract dict the simulation engine consumes (times in seconds)."""
        try:
            return Response(self.get_object().engine_spec())
        except ProfileError as exc:
            raise _invalid(exc) from None

    @extend_schema(request=None, responses={201: DeploymentSerializer})
    @action(detail=True, methods=["post"])
    def copy(self, request, pk=None):
        """An editable copy in the caller's team (how a team changes a built-in)."""
        dep = services.copy_deployment(team_of(request.user), request.user, self.get_object())
        return Response(DeploymentSerializer(dep, context={"request": request}).data, status=status.HTTP_201_CREATED)


class ProfileImportView(APIView):
    """Upload a catalogue JSON file or a perf_model.csv-format table (fits one deployment per
    model/hardware/tensor_parallel group). All or nothing: a bad file stores nothing."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": ProfileUploadSerializer},
        responses={201: ImportSummarySerializer, 400: OpenApiResponse(description="error with where/hint")},
    )
    def post(self, request):
        form = ProfileUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        if upload.size > UPLOAD_MAX_BYTES:
            raise _invalid(
                ProfileError(
                    f"the file is {upload.size} bytes; the limit is {UPLOAD_MAX_BYTES}",
                    where="file",
                    hint="split it per model",
                )
            )
        opts = {k: form.validated_data[k] for k in ("time_unit", "token_time", "split", "holdout", "seed", "loss", "prefill_form")}
        try:
            summary = services.import_profile(
                team_of(request.user), request.user, upload.read(), filename=upload.name or "", **opts
            )
        except ProfileError as exc:
            raise _invalid(exc) from None
        return Response(summary, status=status.HTTP_201_CREATED)
