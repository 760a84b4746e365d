"""Inter-annotator agreement of a dataset's (or campaign's) submitted annotations, and per-clip matching for review.

Loads the rows and hands them to the plain-Python computation in metrics_bridge/agreement/annotation_agreement.py
with X-ACE's phrase encoder and the tag library's antonyms.
"""

from functools import lru_cache

from annotation.models import AnnotationCampaign, Clip, Dataset
from annotation.selectors import submitted_annotation_documents
from metrics_bridge.agreement.annotation_agreement import AgreementReport, annotation_agreement, matched_events
from metrics_bridge.scoring.xace.scorer import TagLibrary
from metrics_bridge.selectors import attribute_tag_library
from metrics_bridge.services.phrase_vectors import cached_phrase_vectors


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
