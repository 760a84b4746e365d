"""What the annotation app's checks need from this layer: events of one gold annotation that the review's
matching rule calls one sound (annotation/services/gold_duplicates.py; registered in MetricsBridgeConfig.ready)."""

from metrics_bridge.agreement.annotation_agreement import duplicate_events_many
from metrics_bridge.services.evaluation.phrase_vectors import cached_phrase_vectors


def gold_duplicate_pairs(documents: list[dict]) -> list[list[dict]]:
    """Pairs of each AudioCaps-F document's events naming one sound (the phrases of all documents embedded in
    one batch, kept in the database)."""
    return duplicate_events_many(documents, encoder=cached_phrase_vectors)
