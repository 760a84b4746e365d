"""REST endpoints of automatic metrics: metric runs and the scores they stored.

Who may use what (admins pass every check):
- metric runs and scores: annotators, reviewers and admins read; raters never (scores would
  hint at which captions are machine-written);
- starting and cancelling a run: admins.
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from accounts.permissions import ActionRolesMixin
from accounts.roles import ADMIN, ANNOTATOR, REVIEWER, user_has_role
from annotation.api_helpers import RaterLockMixin, filter_by_params
from metrics_bridge.models import MetricRun, MetricScore
from metrics_bridge.serializers import MetricRunInputSerializer, MetricRunSerializer, MetricScoreSerializer
from metrics_bridge.services.runs.runs import metric_run_cancel
from metrics_bridge.tasks.runs import start_metric_run

METRIC_READERS = (ANNOTATOR, REVIEWER)


@extend_schema(
    tags=["metrics"],
    parameters=[
        OpenApiParameter("dataset", str, description="Dataset name"),
        OpenApiParameter("status", str, enum=MetricRun.Status.values),
    ],
)
class MetricRunViewSet(ActionRolesMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Metric runs with progress. Read: annotator, reviewer, admin. Start / cancel: admin."""

    action_roles = {"list": METRIC_READERS, "retrieve": METRIC_READERS, "*": (ADMIN,)}
    serializer_class = MetricRunSerializer

    def get_queryset(self):
        queryset = MetricRun.objects.select_related("dataset", "requested_by").order_by("-created_at", "-pk")
        return filter_by_params(queryset, self.request, {"dataset": "dataset__name", "status": "status"})

    @extend_schema(request=MetricRunInputSerializer, responses={201: MetricRunSerializer})
    def create(self, request):
        """Plan a run on a dataset and queue its chunks for the Celery workers; answers at once."""
        serializer = MetricRunInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            run = start_metric_run(
                dataset=serializer.validated_data["dataset"],
                metric_names=serializer.validated_data.get("metrics"),
                requested_by=request.user,
            )
        except ValueError as error:  # unknown metric names
            raise ValidationError({"metrics": str(error)}) from None
        run.refresh_from_db()
        return Response(self.get_serializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: MetricRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop a pending or running run; chunks already scored keep their scores."""
        run = metric_run_cancel(run=self.get_object())
        return Response(self.get_serializer(run).data)


@extend_schema(
    tags=["metrics"],
    parameters=[
        OpenApiParameter("metric", str, description="Metric name, e.g. BLEU_4"),
        OpenApiParameter("version", str, description="Scorer version string"),
        OpenApiParameter("run", int, description="Metric run id"),
        OpenApiParameter("caption", int, description="Caption id"),
        OpenApiParameter("clip", int, description="Clip id"),
        OpenApiParameter("dataset", str, description="Dataset name"),
    ],
)
class MetricScoreViewSet(RaterLockMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Stored metric scores per caption and reference set. Read: annotator, reviewer, admin (rater lock applies)."""

    blinded_dataset_lookup = "caption__clip__dataset_id"

    action_roles = {"*": METRIC_READERS}
    serializer_class = MetricScoreSerializer

    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["hide_gold_details"] = not user_has_role(self.request.user, REVIEWER)
        return context

    def get_queryset(self):
        queryset = MetricScore.objects.select_related("reference_set").order_by("metric", "caption_id", "pk")
        lookups = {
            "metric": "metric",
            "version": "version",
            "run": "run_id",
            "caption": "caption_id",
            "clip": "caption__clip_id",
            "dataset": "caption__clip__dataset__name",
        }
        return filter_by_params(queryset, self.request, lookups)


def register_routes(router) -> None:
    router.register("metric-runs", MetricRunViewSet, basename="metric-run")
    router.register("metric-scores", MetricScoreViewSet, basename="metric-score")
