"""POST /api/serverless/ {spec}: validate a serverless scenario and run it as a ``serverless.run`` job on the workers.

The answer (202) is the job; GET /api/jobs/<id>/ gives its status and, once succeeded, the metrics per system in
``result``. Bad specs get the one error shape with a 400 naming the field.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.accounts.access import team_required
from planner.api.parsers import JSONParser
from planner.input_errors import input_error
from planner.jobs.api.serializers import JobSerializer
from planner.jobs.services import create_job
from simulations.engine.serverless.spec import SpecError, parse


class ServerlessRunRequest(serializers.Serializer):
    spec = serializers.DictField(help_text="a serverless scenario (docs/simulator.md, Serverless): systems, model, "
                                           "workload, nodes, params")


class ServerlessRunView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(request=ServerlessRunRequest, responses={202: JobSerializer, 400: OpenApiTypes.OBJECT})
    def post(self, request):
        team = team_required(request.user)
        ser = ServerlessRunRequest(data=request.data)
        ser.is_valid(raise_exception=True)
        try:
            spec = parse(ser.validated_data["spec"])
        except SpecError as exc:
            raise input_error(f"spec.{exc.where}" if exc.where else "spec", exc.message, exc.hint) from None
        job = create_job(team=team, user=request.user, kind="serverless.run", params={"spec": spec.model_dump()})
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
