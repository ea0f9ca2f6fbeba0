from __future__ import annotations

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from planner.accounts.access import team_required, visible_to
from planner.api.parsers import FormParser, JSONParser, MultiPartParser
from planner.traces import selectors, services
from planner.traces.api.filters import TraceFilter
from planner.traces.api.serializers import (
    TraceListSerializer,
    TraceSerializer,
    TraceSynthSerializer,
    TraceUploadSerializer,
)
from planner.traces.models import Trace


def _error(exc: services.TraceInputError) -> Response:
    return Response({"error": exc.as_dict(), "detail": str(exc)}, status=exc.status)


def _team(request):
    team = team_required(request.user)
    return team


class TraceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Traces of the caller's team. Upload with multipart POST; characterisation runs as a job."""

    filterset_class = TraceFilter
    ordering_fields = ["created", "name", "requests", "span_s"]
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    def get_queryset(self):
        return visible_to(self.request.user, Trace.objects.select_related("job"))

    def get_serializer_class(self):
        if self.action == "list":
            return TraceListSerializer
        if self.action == "create":
            return TraceUploadSerializer
        if self.action == "synthesise":
            return TraceSynthSerializer
        return TraceSerializer

    @extend_schema(
        request={"multipart/form-data": TraceUploadSerializer},
        responses={202: TraceSerializer, 400: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT, 413: OpenApiTypes.OBJECT},
    )
    def create(self, request, *args, **kwargs):
        """Store the file and queue its normalisation: 202 at once with the ``pending`` trace, its ``trace.normalise``
        job and a Location to poll; the trace's ``status`` becomes ``ready`` or ``failed`` (``status_reason`` says
        what, where in the file and how to fix it)."""
        ser = TraceUploadSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        data = dict(ser.validated_data)
        upload = data.pop("file")
        options = {k: data.pop(k) for k in ("time_scale", "rate", "jitter_s", "seed") if k in data}
        try:
            trace = services.import_upload(
                upload,
                team=_team(request),
                user=request.user,
                name=data.get("name") or None,
                fmt=data.get("format", "auto"),
                options=options,
                description=data.get("description", ""),
                region=data.get("region"),
                model=data.get("model"),
                tier=data.get("tier"),
            )
        except services.TraceInputError as exc:
            return _error(exc)
        trace = Trace.objects.select_related("job").get(pk=trace.pk)
        return Response(TraceSerializer(trace).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": f"/api/traces/{trace.pk}/"})

    def perform_destroy(self, instance):
        services.delete_trace(instance)

    @extend_schema(
        request=TraceSynthSerializer,
        responses={201: TraceSerializer, 400: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT},
    )
    @action(detail=False, methods=["post"], parser_classes=[JSONParser])
    def synthesise(self, request):
        """Generate a workload from a synthesiser spec and store it as a trace."""
        ser = TraceSynthSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        spec = ser.validated_data["spec"]
        token_trace = ser.validated_data.get("token_trace")
        if token_trace is not None and isinstance(spec, dict):
            spec = services.with_token_trace(spec, token_trace)
        try:
            trace = services.synthesise_trace(
                spec,
                team=_team(request),
                user=request.user,
                name=ser.validated_data.get("name") or None,
                seed=ser.validated_data.get("seed"),
            )
        except services.TraceInputError as exc:
            return _error(exc)
        trace.refresh_from_db()
        return Response(TraceSerializer(trace).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: TraceSerializer, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def characterise(self, request, pk=None):
        """Queue the characterisation job again (409 while the trace is not ready)."""
        try:
            trace = services.characterise_again(self.get_object(), user=request.user)
        except services.TraceInputError as exc:
            return _error(exc)
        trace.refresh_from_db()
        return Response(TraceSerializer(trace).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def characterisation(self, request, pk=None):
        """Summary plus the 1-min and 15-min series and token CDFs (404 until the job has finished)."""
        trace = self.get_object()
        data = selectors.characterisation_data(trace)
        if data is None or trace.characterisation is None:
            raise NotFound("not characterised yet; see the trace's job for progress")
        return Response({"summary": trace.characterisation, **data})

    @extend_schema(
        parameters=[OpenApiParameter("kind", str, enum=["normalised", "original"])],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
    )
    @action(detail=True, methods=["get"])
    def download(self, request, pk=None):
        """The normalised Parquet file (default) or the original upload."""
        trace = self.get_object()
        kind = request.query_params.get("kind", "normalised")
        if kind not in ("normalised", "original"):
            raise ValidationError({"kind": "use normalised or original"})
        path = trace.normalised_file if kind == "normalised" else trace.original_path
        if path is None or not path.exists():
            raise NotFound(f"the {kind} file is missing")
        name = f"trace-{trace.pk}.parquet" if kind == "normalised" else trace.original_name or path.name
        return FileResponse(open(path, "rb"), as_attachment=True, filename=name)
