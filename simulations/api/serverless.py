"""POST /api/serverless/ {spec}: validate a serverless scenario and run it as a ``serverless.run`` job on the workers.

The answer (202) is the job; GET /api/jobs/<id>/ gives its status and, once succeeded, the metrics per system in
``result``. Bad specs get the one error shape with a 400 naming the field.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.accounts.access import team_required
from planner.input_errors import input_error
from planner.jobs.api.serializers import JobSerializer
from planner.jobs.services import create_job
from simulations.engine.serverless.spec import SpecError, parse


class ServerlessRunView(APIView):
    @extend_schema(request=OpenApiTypes.OBJECT, responses={202: JobSerializer, 400: OpenApiTypes.OBJECT})
    def post(self, request):
        team = team_required(request.user)
        body = request.data.get("spec", request.data) if isinstance(request.data, dict) else request.data
        try:
            spec = parse(body)
        except SpecError as exc:
            raise input_error(f"spec.{exc.where}" if exc.where else "spec", exc.message, exc.hint) from None
        job = create_job(team=team, user=request.user, kind="serverless.run", params={"spec": spec.model_dump()})
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
