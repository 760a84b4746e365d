"""API representations of metric runs and scores (for annotators, reviewers and admins; never raters)."""

from rest_framework import serializers

from corpus.models import Dataset
from metrics_bridge.models import MetricRun, MetricScore
from metrics_bridge.services.runs.plans import GOLD_MARK


class MetricRunSerializer(serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    progress = serializers.FloatField(read_only=True)

    class Meta:
        model = MetricRun
        fields = [
            "id",
            "dataset",
            "metrics",
            "status",
            "chunks_total",
            "chunks_done",
            "progress",
            "error",
            "unavailable",
            "requested_by",
            "created_at",
            "finished_at",
        ]


class MetricRunInputSerializer(serializers.Serializer):
    dataset = serializers.SlugRelatedField(slug_field="name", queryset=Dataset.objects.all())
    metrics = serializers.ListField(
        child=serializers.CharField(max_length=50),
        required=False,
        allow_empty=False,
        help_text="Metric names, e.g. ['BLEU_4', 'ROUGE_L']; omitted: every metric available here",
    )


class MetricScoreSerializer(serializers.ModelSerializer):
    reference_set = serializers.SlugRelatedField(slug_field="key", read_only=True)

    class Meta:
        model = MetricScore
        fields = ["id", "metric", "version", "caption", "reference_set", "value", "details", "run", "created_at"]

    def to_representation(self, score: MetricScore) -> dict:
        data = super().to_representation(score)
        context = score.reference_set.context
        scored_against_gold = GOLD_MARK in context and not context.endswith(f"{GOLD_MARK}none")
        if scored_against_gold and self.context.get("hide_gold_details"):
            # X-ACE's explanation lists the gold annotation's nodes: annotators must not see others' annotations.
            data["details"] = {
                "hidden": "this explanation shows the clip's gold annotation (reviewers and admins see it)"
            }
        return data
