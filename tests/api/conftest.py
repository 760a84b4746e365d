"""A small world for the API tests: one dataset, two systems, pairs, two campaigns, judgements, annotations, scores."""

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from pydub.generators import Sine
from rest_framework.test import APIClient

from annotation.models import ExpertAnnotation
from annotation.services.expert_annotations import expert_annotation_save
from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from corpus.services.audio import clip_attach_audio
from metrics_bridge.models import MetricRun, MetricScore, ReferenceSet
from ratings.models import Campaign, CaptionPair, PairwiseVote, ThumbsRating
from ratings.services.campaigns import campaign_add_raters, campaign_create

SYSTEM_NAMES = ("sys-alpha", "sys-beta")


@dataclass
class World:
    users: dict
    dataset: Dataset
    clips: list[Clip]
    references: dict[int, list[Caption]]
    candidates: dict[int, list[Caption]]
    pairs: dict[str, CaptionPair]
    thumbs: Campaign
    pairwise: Campaign
    ratings: dict[str, ThumbsRating]
    votes: dict[str, PairwiseVote]
    annotations: dict[str, ExpertAnnotation]
    run: MetricRun
    score: MetricScore


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # The default PBKDF2 work factor costs ~0.3 s per user; these tests make several users each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def media_root(settings, tmp_path) -> Path:
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = root
    return root


@pytest.fixture
def world(db, make_user, media_root, tmp_path) -> World:
    users = {
        "admin": make_user("boss", staff=True),
        "annotator": make_user("ann", "annotator"),
        "annotator2": make_user("ann2", "annotator"),
        "reviewer": make_user("rev", "reviewer"),
        "rater": make_user("rat", "rater"),
        "rater2": make_user("rat2", "rater"),
        "nobody": make_user("nobody"),
    }
    dataset = Dataset.objects.create(name="api-test", description="for API tests")
    systems = [CaptioningSystem.objects.create(name=name) for name in SYSTEM_NAMES]
    clips, references, candidates = [], {}, {}
    for index in range(3):
        clip = Clip.objects.create(dataset=dataset, external_id=f"clip-{index}", file_name=f"clip-{index}.wav")
        clips.append(clip)
        references[clip.pk] = [
            Caption.objects.create(
                clip=clip,
                text=f"a sound is heard {index}.{position}",
                role=Caption.Role.REFERENCE,
                author_kind=Caption.AuthorKind.HUMAN,
                position=position,
                source_label=f"human_{position + 1}",
            )
            for position in range(5)
        ]
        candidates[clip.pk] = [
            Caption.objects.create(
                clip=clip,
                text=f"a noise is heard {index}.{number}",
                role=Caption.Role.CANDIDATE,
                author_kind=Caption.AuthorKind.MACHINE,
                system=system,
                source_label=system.name,
            )
            for number, system in enumerate(systems)
        ]
    tone = tmp_path / "tone.wav"
    Sine(440, sample_rate=16000).to_audio_segment(duration=1500, volume=-6).export(tone, format="wav")
    clip_attach_audio(clip=clips[0], file=tone, file_name="clip-0.wav")
    first, second = clips[0], clips[1]
    pairs = {
        "HC": CaptionPair.objects.create(
            clip=second,
            caption_a=references[second.pk][0],
            caption_b=references[second.pk][1],
            split="HC",
            source_key="t-HC-1",
        ),
        "HM": CaptionPair.objects.create(
            clip=second,
            caption_a=references[second.pk][2],
            caption_b=candidates[second.pk][0],
            split="HM",
            source_key="t-HM-1",
        ),
        "MM": CaptionPair.objects.create(
            clip=second,
            caption_a=candidates[second.pk][0],
            caption_b=candidates[second.pk][1],
            split="MM",
            source_key="t-MM-1",
        ),
    }
    thumbs = campaign_create(
        name="t-thumbs",
        dataset=dataset,
        task_type=Campaign.TaskType.THUMBS,
        judgements_per_item=2,
        captions=[references[first.pk][0], *candidates[first.pk]],
    )
    pairwise = campaign_create(
        name="t-pairwise",
        dataset=dataset,
        task_type=Campaign.TaskType.PAIRWISE,
        judgements_per_item=1,
        pairs=list(pairs.values()),
    )
    campaign_add_raters(campaign=thumbs, raters=[users["rater"], users["rater2"]])
    campaign_add_raters(campaign=pairwise, raters=[users["rater"]])
    scores = {"precision": 4, "recall": 3, "fluency": Decimal("-0.1")}
    ratings = {
        "rater": ThumbsRating.objects.create(
            rater=users["rater"], caption=candidates[first.pk][0], campaign=thumbs, **scores
        ),
        "rater2": ThumbsRating.objects.create(
            rater=users["rater2"], caption=candidates[first.pk][1], campaign=thumbs, **scores
        ),
    }
    votes = {
        "rater": PairwiseVote.objects.create(
            rater=users["rater"], pair=pairs["HM"], campaign=pairwise, choice="a", left_side="b"
        ),
        "rater2": PairwiseVote.objects.create(rater=users["rater2"], pair=pairs["MM"], choice="none", source="import"),
    }
    annotations = {
        "annotator": expert_annotation_save(
            clip=first,
            annotator=users["annotator"],
            events=[
                {"label": "beep", "sources": ["device"], "attributes": ["Loud", "ringing-ish"]},
                {"label": "hum", "sources": [], "attributes": ["low"]},
            ],
            relations=[{"first_event": "beep", "second_event": "hum", "kind": "before"}],
        ),
        "annotator2": expert_annotation_save(
            clip=second,
            annotator=users["annotator2"],
            events=[{"label": "rain", "sources": ["sky"], "attributes": []}],
            status="submitted",
        ),
    }
    run = MetricRun.objects.create(
        dataset=dataset, metrics=["BLEU_4"], status=MetricRun.Status.DONE, requested_by=users["admin"]
    )
    reference_set = ReferenceSet.objects.create(key="k" * 64, texts=["a sound is heard 0.0"], context="test")
    score = MetricScore.objects.create(
        metric="BLEU_4",
        version="test-1",
        caption=candidates[first.pk][0],
        reference_set=reference_set,
        value=0.25,
        run=run,
    )
    return World(
        users, dataset, clips, references, candidates, pairs, thumbs, pairwise, ratings, votes, annotations, run, score
    )


@pytest.fixture
def client_for(world):
    """An API client signed in as one of the world's users (None: anonymous)."""

    def make(role: str | None) -> APIClient:
        client = APIClient()
        if role is not None:
            username = world.users[role].username
            assert client.login(username=username, password="pass-" + username)
        return client

    return make
