from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from planner.accounts.access import team_required
from planner.backtests.api.serializers import BacktestCreateSerializer, BacktestListSerializer, BacktestSerializer
from planner.backtests.core.replicas import ReplicaFileError
from planner.backtests.selectors import backtests_for
from planner.backtests.services import check_backtest, start_backtest
from planner.comparisons.core.variants import VariantError
from planner.input_errors import input_error, scenario_error
from simulations.engine import ScenarioError


class BacktestViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      viewsets.GenericViewSet):
    """Advisory back-tests of the caller's team: a past window replayed as run and with alternative strategies."""

    ordering_fields = ["created"]

    def get_queryset(self):
        return backtests_for(self.request.user)

    def get_serializer_class(self):
        if self.action == "create":
            return BacktestCreateSerializer
        if self.action == "list":
            return BacktestListSerializer
        return BacktestSerializer

    @extend_schema(request=BacktestCreateSerializer, responses={201: BacktestSerializer})
    def create(self, request, *args, **kwargs):
        ser = BacktestCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        team = team_required(request.user)
        try:
            recorded, alternatives, measured = check_backtest(
                team=team, scenario=d["scenario"], replicas_csv=d["replicas_csv"], origin=d["origin"] or None,
                strategies=d["strategies"], bundles=d["bundles"], max_gap_s=d["max_gap_s"],
                latency_csv=d["latency_csv"])
        except ScenarioError as exc:
            raise scenario_error(exc) from None
        except ReplicaFileError as exc:
            raise input_error(exc.where, exc.message, exc.hint or "fix the replica file and send it again") from None
        except VariantError as exc:
            raise input_error(exc.field, exc.message, "see GET /api/comparisons/bundles/ and docs/backtests.md") from None
        bt = start_backtest(team=team, user=request.user, scenario=d["scenario"], recorded=recorded,
                            alternatives=alternatives, name=d["name"], startup_s=d["startup_s"], measured=measured,
                            seeds=d["seeds"])
        bt.refresh_from_db()
        return Response(BacktestSerializer(bt).data, status=status.HTTP_201_CREATED)
