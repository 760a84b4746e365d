"""What the annotation app's checks need from this layer: events of one gold annotation that the review's
matching rule calls one sound (annotation/services/gold_duplicates.py; registered in MetricsBridgeConfig.ready)."""

from metrics_bridge.agreement.annotation_agreement import duplicate_events
from metrics_bridge.services.evaluation.phrase_vectors import cached_phrase_vectors


def gold_duplicate_pairs(document: dict) -> list[dict]:
    """Pairs of the AudioCaps-F document's events naming one sound (phrases embedded once, kept in the database)."""
    return duplicate_events(document, encoder=cached_phrase_vectors)
