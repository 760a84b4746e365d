"""The demo corpus: a simulated study's clips, captions, accounts and annotation campaigns.

Everything comes from the scenes of demo/scenes.py and is keyed by names (dataset, clip
external ids, system names, usernames, campaign names), so running it again changes nothing that is already as
described. Judgements (pairs, campaigns, simulated raters) are built by demo.judgements on top of this,
and the `demo` command ties the steps together.
"""

import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from accounts.roles import ADMIN, ANNOTATOR, RATER, REVIEWER
from annotation.models import AnnotationCampaign
from annotation.services.annotation_campaigns import annotation_campaign_create, annotation_task_next
from annotation.services.annotation_reviews import review_draft_save, review_open, review_publish
from annotation.services.annotation_tasks import task_draft_save, task_submit
from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from corpus.services.audio import clip_attach_audio
from demo.audio import demo_sound_write
from demo.scene_data import SYSTEMS
from demo.scenes import (
    annotator_draft,
    demo_scenes,
    gold_draft,
    scene_by_id,
    scene_references,
    system_caption,
)

DEMO_DATASET = "demo"
DEMO_DESCRIPTION = (
    "A simulated study made by manage.py demo: synthesized sounds, reference captions written from templates, "
    "seven simulated captioning systems of graded quality, and simulated raters and annotators."
)
# username -> roles; staff=True for the admin.
DEMO_ACCOUNTS = {"admin": (ADMIN,), "annotator": (ANNOTATOR,), "reviewer": (REVIEWER,), "rater": (RATER,)}
SIMULATED_ANNOTATORS = ("sim-annotator-1", "sim-annotator-2", "sim-annotator-3")
SIMULATED_REVIEWER = "sim-reviewer"
ANNOTATION_STUDY = "demo-annotation-study"
ANNOTATION_STUDY_CLIPS = 12
GOLD_PUBLISHED = 10  # of the study's clips; the others wait for the demo reviewer
DEMO_ANNOTATION_CAMPAIGN = "demo-annotation"  # the demo annotator's own campaign
DEMO_ANNOTATION_CLIPS = 8


@dataclass(frozen=True)
class DemoAccount:
    username: str
    roles: tuple[str, ...]
    # The new password, or "" when the account existed and its password was left alone.
    password: str


def demo_accounts_ensure(*, reset_passwords: bool = False) -> list[DemoAccount]:
    """Create admin / annotator / reviewer / rater with random passwords; existing ones keep theirs unless reset."""
    user_model = get_user_model()
    accounts = []
    with transaction.atomic():
        for username, roles in DEMO_ACCOUNTS.items():
            user, created = user_model.objects.get_or_create(username=username)
            password = ""
            if created or reset_passwords:
                password = secrets.token_urlsafe(9)
                user.set_password(password)
            if ADMIN in roles:
                user.is_staff = user.is_superuser = True
            user.save()
            user.groups.add(*Group.objects.filter(name__in=roles))
            accounts.append(DemoAccount(username=username, roles=roles, password=password))
    return accounts


def simulated_users_ensure(*, usernames, role: str) -> list:
    """Accounts of simulated people: they cannot sign in (no usable password), they only hold the demo's work."""
    user_model = get_user_model()
    group = Group.objects.get(name=role)
    users = []
    for username in usernames:
        user, created = user_model.objects.get_or_create(username=username, defaults={"first_name": "Simulated"})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        user.groups.add(group)
        users.append(user)
    return users


@transaction.atomic
def demo_corpus_ensure() -> Dataset:
    """The `demo` dataset: a clip per scene, five references and a caption per simulated system (audio not yet)."""
    dataset, _ = Dataset.objects.get_or_create(name=DEMO_DATASET, defaults={"description": DEMO_DESCRIPTION})
    systems = {
        name: CaptioningSystem.objects.get_or_create(name=name, defaults={"description": description})[0]
        for name, (description, _error, _rate) in SYSTEMS.items()
    }
    for scene in demo_scenes():
        clip, _ = Clip.objects.get_or_create(
            dataset=dataset, external_id=scene.external_id, defaults={"file_name": f"{scene.external_id}.wav"}
        )
        for position, text in enumerate(scene_references(scene.external_id)):
            _caption_ensure(
                lookup={"clip": clip, "role": Caption.Role.REFERENCE, "position": position},
                values={
                    "text": text,
                    "author_kind": Caption.AuthorKind.HUMAN,
                    "source_label": f"person_{position + 1}",
                },
            )
        for system_name, system in systems.items():
            _caption_ensure(
                lookup={"clip": clip, "role": Caption.Role.CANDIDATE, "system": system},
                values={
                    "text": system_caption(scene.external_id, system_name).text,
                    "author_kind": Caption.AuthorKind.MACHINE,
                    "source_label": system_name,
                },
            )
    return dataset


def _caption_ensure(*, lookup: dict, values: dict) -> None:
    """Create the caption, or save the fields that differ from `values` and nothing else.

    update_or_create saves every time: the new updated_at made each start of ./scripts/run look like new data to the
    dashboards' fingerprints, so the demo's dashboards and the benchmark (minutes of a worker) were computed again.
    """
    caption, created = Caption.objects.get_or_create(**lookup, defaults=values)
    changed = [field for field, value in values.items() if getattr(caption, field) != value]
    if not created and changed:
        for field in changed:
            setattr(caption, field, values[field])
        caption.save(update_fields=[*changed, "updated_at"])


def demo_audio_ensure(*, dataset: Dataset) -> int:
    """Synthesize each clip's sound and store it through the audio ingestion; returns how many clips changed."""
    changed = 0
    names = [scene.external_id for scene in demo_scenes()]
    with tempfile.TemporaryDirectory(prefix="demo-audio-") as folder:
        for clip in Clip.objects.filter(dataset=dataset, external_id__in=names).select_related("dataset"):
            path = demo_sound_write(name=clip.external_id, folder=Path(folder))
            changed += clip_attach_audio(clip=clip, file=path, file_name=path.name)
    return changed


def _clips(dataset: Dataset) -> list[Clip]:
    return list(Clip.objects.filter(dataset=dataset).order_by("external_id"))


def demo_annotation_study_ensure(*, dataset: Dataset) -> AnnotationCampaign:
    """Three simulated annotators annotate the first clips independently, each with their own habits; a simulated
    reviewer publishes the gold graph of most of them, leaving the rest for the demo reviewer. Left alone once made."""
    existing = AnnotationCampaign.objects.filter(name=ANNOTATION_STUDY).first()
    if existing is not None:
        return existing
    annotators = simulated_users_ensure(usernames=SIMULATED_ANNOTATORS, role=ANNOTATOR)
    (simulated_reviewer,) = simulated_users_ensure(usernames=[SIMULATED_REVIEWER], role=REVIEWER)
    demo_reviewer = get_user_model().objects.get(username="reviewer")
    clips = _clips(dataset)[:ANNOTATION_STUDY_CLIPS]
    with transaction.atomic():
        campaign = annotation_campaign_create(
            name=ANNOTATION_STUDY,
            dataset=dataset,
            clips=clips,
            annotators=annotators,
            reviewers=[simulated_reviewer, demo_reviewer],
            annotations_per_clip=len(annotators),
            seed=1,
            instructions="Simulated study: every event you hear, its source, how it sounds, and what comes when.",
        )
        for number, annotator in enumerate(annotators):
            while (task := annotation_task_next(campaign=campaign, annotator=annotator)) is not None:
                draft = annotator_draft(scene_by_id(task.clip.external_id), number)
                saved = task_draft_save(task=task, annotator=annotator, base_version=task.draft_version, draft=draft)
                task_submit(task=task, annotator=annotator, base_version=saved.version, confirm_warnings=True)
        for clip in clips[:GOLD_PUBLISHED]:
            review = review_open(campaign=campaign, clip=clip, reviewer=simulated_reviewer)
            draft = gold_draft(scene_by_id(clip.external_id))
            saved = review_draft_save(review=review, reviewer=simulated_reviewer, base_version=0, draft=draft)
            review_publish(
                review=review, reviewer=simulated_reviewer, base_version=saved.version, confirm_warnings=True
            )
    return campaign


def demo_annotation_campaign_ensure(*, dataset: Dataset) -> AnnotationCampaign:
    """A campaign for the demo annotator (one annotation per clip, clips the simulated study left out), reviewed
    by the demo reviewer; left alone when it exists."""
    existing = AnnotationCampaign.objects.filter(name=DEMO_ANNOTATION_CAMPAIGN).first()
    if existing is not None:
        return existing
    users = get_user_model().objects
    clips = _clips(dataset)[ANNOTATION_STUDY_CLIPS : ANNOTATION_STUDY_CLIPS + DEMO_ANNOTATION_CLIPS]
    return annotation_campaign_create(
        name=DEMO_ANNOTATION_CAMPAIGN,
        dataset=dataset,
        clips=clips,
        annotators=[users.get(username="annotator")],
        reviewers=[users.get(username="reviewer")],
        annotations_per_clip=1,
        instructions=(
            "Name every sound event you hear, who or what makes it, how it sounds, and what comes before what."
        ),
    )
