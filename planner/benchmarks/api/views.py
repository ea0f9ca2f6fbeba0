"""Benchmarks API: upload runs, list them, start calibrations and validations, read validations."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from planner.accounts.access import team_of
from planner.benchmarks import selectors, services
from planner.benchmarks.api.serializers import (
    BenchmarkRunSerializer,
    BenchmarkUploadSerializer,
    CalibrateSerializer,
    ValidateSerializer,
    ValidationSerializer,
)
from planner.benchmarks.core.errors import BenchmarkError
from planner.hardware.selectors import deployments_for
from planner.jobs.api.serializers import JobSerializer


def _invalid(exc: BenchmarkError) -> ValidationError:
    return ValidationError({"error": exc.as_dict()})


class BenchmarkRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin,
                          viewsets.GenericViewSet):
    """Benchmark runs of the caller's team. POST (multipart ``file``) imports one; bad files get a 400 naming the
    file and field, and store nothing."""

    serializer_class = BenchmarkRunSerializer
    filterset_fields = ["model_name", "gpu_name", "tp", "source_format", "overloaded"]

    def get_queryset(self):
        return selectors.runs_for(self.request.user)

    def get_parsers(self):
        if getattr(self, "action", None) == "create":
            return [MultiPartParser(), FormParser()]
        return super().get_parsers()

    @extend_schema(request={"multipart/form-data": BenchmarkUploadSerializer},
                   responses={201: BenchmarkRunSerializer, 400: OpenApiResponse(description="error: where, hint")})
    def create(self, request):
        form = BenchmarkUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        cap = settings.BENCHMARK_UPLOAD_MAX_BYTES
        if upload.size > cap:
            raise _invalid(BenchmarkError(f"is {upload.size} bytes; the limit is {cap} (BENCHMARK_UPLOAD_MAX_BYTES)",
                                          file=upload.name or "file", hint="leave out the per-request dumps"))
        try:
            run = services.import_benchmark(
                team_of(request.user), request.user, {upload.name or "upload": upload.read()},
                name=form.validated_data["name"], gpu=form.validated_data["gpu"], engine=form.engine(),
                original_name=upload.name or "")
        except BenchmarkError as exc:
            raise _invalid(exc) from None
        return Response(BenchmarkRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=CalibrateSerializer, responses={202: JobSerializer})
    @action(detail=False, methods=["post"])
    def calibrate(self, request):
        """Start a calibration job: fit the GPU type's physics coefficients on part of the runs, score the rest,
        save a new deployment version with its held-out error."""
        form = CalibrateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        try:
            job = services.start_calibration(team_of(request.user), request.user, d["run_ids"], holdout=d["holdout"],
                                             seed=d["seed"], seeds=d["seeds"], maxiter=d["maxiter"])
        except BenchmarkError as exc:
            raise _invalid(exc) from None
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=ValidateSerializer, responses={202: JobSerializer})
    @action(detail=False, methods=["post"])
    def validate(self, request):
        """Start a validation job: re-simulate the runs with a deployment's latency model."""
        form = ValidateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        dep = deployments_for(request.user).filter(pk=d["deployment"]).first()
        if dep is None:
            raise _invalid(BenchmarkError(f"no deployment {d['deployment']} you can see", field="deployment"))
        try:
            job = services.start_validation(team_of(request.user), request.user, d["run_ids"], deployment=dep,
                                            seeds=d["seeds"])
        except BenchmarkError as exc:
            raise _invalid(exc) from None
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ValidationViewSet(viewsets.ReadOnlyModelViewSet):
    """Validations (measured vs simulated) of the caller's team; filter by ``deployment``."""

    serializer_class = ValidationSerializer
    filterset_fields = ["deployment", "kind"]

    def get_queryset(self):
        return selectors.validations_for(self.request.user)
