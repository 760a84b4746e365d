"""A small annotation campaign for the workspace tests: clips, three annotators, a reviewer, API clients."""

from dataclasses import dataclass

from rest_framework.test import APIClient

from annotation.models import AnnotationCampaign
from annotation.services.annotation_campaigns import annotation_campaign_create
from corpus.models import Clip, Dataset


@dataclass
class Workspace:
    dataset: Dataset
    clips: list[Clip]
    campaign: AnnotationCampaign
    annotators: list
    reviewer: object


def workspace_build(
    make_user, *, clip_count: int = 3, annotator_count: int = 3, per_clip: int = 3, seed: int = 1
) -> Workspace:
    dataset = Dataset.objects.create(name="ws")
    clips = [
        Clip.objects.create(dataset=dataset, external_id=f"clip{index}", duration_seconds=10.0)
        for index in range(clip_count)
    ]
    annotators = [make_user(f"ann{index}", "annotator") for index in range(annotator_count)]
    reviewer = make_user("rev", "reviewer")
    campaign = annotation_campaign_create(
        name="ws-campaign",
        dataset=dataset,
        clips=clips,
        annotators=annotators,
        reviewers=[reviewer],
        annotations_per_clip=per_clip,
        seed=seed,
    )
    return Workspace(dataset, clips, campaign, annotators, reviewer)


def api_client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def draft_of(*events, relations=()) -> dict:
    """events: (label, sources, attributes); relations: (first index, second index, kind)."""
    return {
        "events": [
            {"id": f"e{index + 1}", "label": label, "sources": list(sources), "attributes": list(attributes)}
            for index, (label, sources, attributes) in enumerate(events)
        ],
        "relations": [{"first": f"e{a + 1}", "second": f"e{b + 1}", "kind": kind} for a, b, kind in relations],
    }
