"""Inter-annotator agreement of a dataset's (or campaign's) submitted annotations, and per-clip matching for review.

Loads the rows and hands them to the plain-Python computation in metrics_bridge/agreement/annotation_agreement.py
with X-ACE's phrase encoder and the tag library's antonyms.
"""

import hashlib
import json
from functools import lru_cache

from django.db.models import Count, Max, Q, Sum

from annotation.models import AnnotationCampaign, ExpertAnnotation
from annotation.selectors import submitted_annotation_documents
from corpus.models import Clip, Dataset
from metrics_bridge.agreement.annotation_agreement import AgreementReport, annotation_agreement, matched_events
from metrics_bridge.scoring.xace.scorer import TagLibrary
from metrics_bridge.selectors.scoring_inputs import attribute_tag_library
from metrics_bridge.services.evaluation.dashboard_cache import (
    CacheState,
    cached_payload,
    cached_state,
    computation_begin,
    computation_fail,
    computation_request,
)
from metrics_bridge.services.evaluation.phrase_vectors import cached_phrase_vectors

SUBMITTED = Q(status=ExpertAnnotation.Status.SUBMITTED)


def _antonyms():
    # Memoised: the matching asks about the same attribute pairs over and over (~500k lookups on AudioCaps-F).
    return lru_cache(maxsize=200_000)(TagLibrary(attribute_tag_library()).are_antonyms)


def dataset_annotation_agreement(*, dataset: Dataset, campaign: AnnotationCampaign | None = None) -> AgreementReport:
    documents = submitted_annotation_documents(dataset=dataset, campaign=campaign)
    submissions = {str(clip_id): by_annotator for clip_id, by_annotator in documents.items()}
    return annotation_agreement(submissions, encoder=cached_phrase_vectors, antonyms=_antonyms())


def clip_annotation_matching(*, campaign: AnnotationCampaign, clip: Clip) -> dict:
    """Matched events and per-factor agreement of the clip's submitted annotations in the campaign."""
    documents = submitted_annotation_documents(dataset=campaign.dataset, campaign=campaign).get(clip.pk, {})
    if not documents:
        return {"annotators": [], "groups": [], "factors": {}, "pairs": []}
    return matched_events(documents, encoder=cached_phrase_vectors, antonyms=_antonyms())


# --- Stored for the pages ------------------------------------------------------------------------------
# The agreement embeds every phrase with Sentence-BERT (the model loads in seconds, the first embeddings take
# longer): a worker computes it (metrics_bridge.tasks.agreement.compute_annotation_agreement) per state of the submitted
# annotations, and the pages read the stored result (services/dashboard_cache.py), as the dashboards do.


def _annotations(*, dataset: Dataset, campaign: AnnotationCampaign | None):
    annotations = ExpertAnnotation.objects.filter(clip__dataset=dataset)
    return annotations.filter(campaign=campaign) if campaign is not None else annotations


def annotation_agreement_key(*, dataset: Dataset, campaign: AnnotationCampaign | None = None) -> str:
    return f"annotation-agreement:campaign:{campaign.pk}" if campaign else f"annotation-agreement:dataset:{dataset.pk}"


def annotation_fingerprint(*, dataset: Dataset, campaign: AnnotationCampaign | None = None) -> str:
    """Changes whenever an annotation of the dataset (or campaign) is added, edited, submitted or deleted."""
    row = (
        _annotations(dataset=dataset, campaign=campaign)
        .order_by()
        .aggregate(n=Count("pk"), ids=Sum("pk"), last=Max("updated_at"), submitted=Count("pk", filter=SUBMITTED))
    )
    return hashlib.sha256(json.dumps([str(row[key]) for key in sorted(row)]).encode()).hexdigest()


def annotation_agreement_state(*, dataset: Dataset, campaign: AnnotationCampaign | None = None) -> CacheState:
    """The stored agreement (payload: the JSON the page and the review overview read) and its computation."""
    return cached_state(
        key=annotation_agreement_key(dataset=dataset, campaign=campaign),
        fingerprint=annotation_fingerprint(dataset=dataset, campaign=campaign),
    )


def annotation_agreement_request(*, dataset: Dataset, campaign: AnnotationCampaign | None, enqueue) -> bool:
    """Have a worker compute the agreement when it is stale and not on its way (enqueue() sends the task)."""
    return computation_request(
        key=annotation_agreement_key(dataset=dataset, campaign=campaign),
        fingerprint=annotation_fingerprint(dataset=dataset, campaign=campaign),
        enqueue=enqueue,
    )


def annotation_agreement_compute(*, dataset_id: int, campaign_id: int | None) -> str:
    """A worker's computation of the stored agreement: "done", "gone" or "failed" (recorded for the page)."""
    campaign = AnnotationCampaign.objects.filter(pk=campaign_id).first() if campaign_id else None
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None or (campaign_id and campaign is None):
        return "gone"
    key = annotation_agreement_key(dataset=dataset, campaign=campaign)
    computation_begin(key=key)

    def build() -> dict:
        report = dataset_annotation_agreement(dataset=dataset, campaign=campaign)
        return {**report.summary(), "per_annotator": report.per_annotator}

    try:
        cached_payload(key=key, fingerprint=annotation_fingerprint(dataset=dataset, campaign=campaign), build=build)
    except Exception as error:  # recorded for the page, which reports it instead of waiting
        computation_fail(key=key, error=f"{type(error).__name__}: {error}")
        return "failed"
    return "done"
