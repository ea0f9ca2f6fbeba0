from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from planner.accounts.access import visible_to
from planner.jobs.api.serializers import JobSerializer
from planner.jobs.models import Job
from planner.jobs.services import cancel_job


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    """Jobs of the caller's team: status, progress and errors of every piece of long work."""

    serializer_class = JobSerializer
    filterset_fields = ["kind", "status", "parent"]
    ordering_fields = ["created", "finished", "progress"]

    def get_queryset(self):
        return visible_to(self.request.user, Job.objects.all())

    @extend_schema(request=None, responses={200: JobSerializer, 409: JobSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        job = self.get_object()
        cancelled = cancel_job(job)
        return Response(JobSerializer(job).data, status=status.HTTP_200_OK if cancelled else status.HTTP_409_CONFLICT)
