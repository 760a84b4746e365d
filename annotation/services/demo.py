"""The demo corpus: synthetic clips with written captions, demo accounts and a few expert annotations.

Everything is keyed by names (dataset, clip external ids, system names, usernames), so running
it again updates nothing that is already as described. Judgements (pairs, campaigns) are built by
ratings.services.demo on top of this, and the `demo` command ties the steps together.
"""

import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from accounts.roles import ADMIN, ANNOTATOR, RATER, REVIEWER
from annotation.models import Caption, CaptioningSystem, Clip, Dataset, ExpertAnnotation
from annotation.services.audio import clip_attach_audio
from annotation.services.demo_audio import SOUNDS, demo_sound_write
from annotation.services.expert_annotations import expert_annotation_save, expert_annotation_set_status

DEMO_DATASET = "demo"
GOOD_SYSTEM, GENERIC_SYSTEM, WRONG_SYSTEM = "demo-listener", "demo-generic", "demo-hallucinator"
DEMO_SYSTEMS = {
    GOOD_SYSTEM: "Demo system whose captions are accurate and specific.",
    GENERIC_SYSTEM: "Demo system whose captions are vague or too short.",
    WRONG_SYSTEM: "Demo system whose captions get events, order or fluency wrong.",
}
# username -> roles; staff=True for the admin.
DEMO_ACCOUNTS = {"admin": (ADMIN,), "annotator": (ANNOTATOR,), "reviewer": (REVIEWER,), "rater": (RATER,)}

# external id -> (five references, {system: candidate}); the clip order follows demo_audio.SOUNDS.
CAPTIONS: dict[str, tuple[list[str], dict[str, str]]] = {
    "beep-three-times": (
        [
            "A steady high beep repeats three times.",
            "A high-pitched electronic beep sounds three times with short pauses.",
            "Three identical high tones beep one after another.",
            "An electronic device beeps three times at a high pitch.",
            "A short high beep is repeated three times in a row.",
        ],
        {
            GOOD_SYSTEM: "A high-pitched beep repeats three times.",
            GENERIC_SYSTEM: "An electronic sound is heard.",
            WRONG_SYSTEM: "A dog barks twice while a car passes by.",
        },
    ),
    "noise-swell": (
        [
            "White noise swells then fades.",
            "A hissing noise grows louder and then slowly fades away.",
            "Static rises in volume and then dies down.",
            "A rushing hiss builds up gradually before fading out.",
            "Steady static noise gets louder and then quieter.",
        ],
        {
            GOOD_SYSTEM: "A hissing static noise grows louder and then fades away.",
            GENERIC_SYSTEM: "Noise is heard in the background.",
            WRONG_SYSTEM: "A woman speaks while birds chirp.",
        },
    ),
    "rising-sweep-then-hum": (
        [
            "A rising sweep followed by a low hum.",
            "A tone slides upward in pitch and then a low hum continues.",
            "An electronic whoosh rises in pitch before a deep buzzing hum.",
            "A pitch sweeps up quickly and is followed by a steady low drone.",
            "A rising electronic tone gives way to a low humming sound.",
        ],
        {
            GOOD_SYSTEM: "A tone rises in pitch and then a low hum follows.",
            GENERIC_SYSTEM: "A machine is running.",
            WRONG_SYSTEM: "A low hum is followed by a falling whistle.",
        },
    ),
    "steady-low-hum": (
        [
            "A low hum continues steadily.",
            "A deep electrical hum drones on without changing.",
            "A constant low buzzing sound like a transformer.",
            "A low-pitched drone hums steadily throughout.",
            "An electric hum stays at the same low pitch the whole time.",
        ],
        {
            GOOD_SYSTEM: "A steady low electrical hum drones on.",
            GENERIC_SYSTEM: "A sound continues.",
            WRONG_SYSTEM: "A high-pitched whistle blows repeatedly.",
        },
    ),
    "crackling-bursts": (
        [
            "Short bursts of noise crackle at random intervals.",
            "Static crackles and pops irregularly.",
            "Brief crackling noises pop on and off.",
            "Random short bursts of static crackle.",
            "Irregular pops and crackles of noise are heard.",
        ],
        {
            GOOD_SYSTEM: "Static crackles and pops at random moments.",
            GENERIC_SYSTEM: "Some noises are heard.",
            WRONG_SYSTEM: "A fire crackles while people talk and laugh loudly.",
        },
    ),
    "falling-slide": (
        [
            "A tone slides down from high to low.",
            "A whistling pitch falls steadily from high to low.",
            "A high electronic tone glides downward in pitch.",
            "A descending sweep moves from a high pitch to a low one.",
            "A falling tone drops smoothly in pitch.",
        ],
        {
            GOOD_SYSTEM: "A high tone slides down to a low pitch.",
            GENERIC_SYSTEM: "A tone is playing.",
            WRONG_SYSTEM: "A tone rises from low to high.",
        },
    ),
    "two-tone-siren": (
        [
            "Two tones alternate like a siren.",
            "A buzzy two-note alarm alternates rapidly between high and low.",
            "An electronic siren switches between two pitches over and over.",
            "Two harsh tones alternate quickly like an alarm.",
            "A high and a low buzzing note take turns repeatedly.",
        ],
        {
            GOOD_SYSTEM: "An alarm alternates quickly between two buzzing tones.",
            GENERIC_SYSTEM: "An alarm is sounding.",
            WRONG_SYSTEM: "An ambulance siren wails as it drives away into the distance.",
        },
    ),
    "beep-over-quiet-noise": (
        [
            "A quiet hiss with a single beep in the middle.",
            "Soft static plays and a one-second beep sounds halfway through.",
            "A beep sounds once over faint background noise.",
            "Faint hissing continues while a tone beeps once.",
            "Low background static with one clear beep.",
        ],
        {
            GOOD_SYSTEM: "A single beep sounds over faint static.",
            GENERIC_SYSTEM: "A beep.",
            WRONG_SYSTEM: "A beep beep sounds sounds over over the static.",
        },
    ),
}

# external id -> (events, relations, final status), saved as the demo annotator's work.
EXPERT_ANNOTATIONS = {
    "beep-three-times": (
        [
            {
                "label": "beep",
                "sources": ["electronic device"],
                "attributes": ["high-pitched", "repeatedly", "electronic"],
            }
        ],
        [],
        ExpertAnnotation.Status.GOLD,
    ),
    "rising-sweep-then-hum": (
        [
            {"label": "sweep", "sources": ["electronic tone"], "attributes": ["rising", "quickly"]},
            {"label": "hum", "sources": ["machine"], "attributes": ["low", "steady"]},
        ],
        [{"first_event": "sweep", "second_event": "hum", "kind": "before"}],
        ExpertAnnotation.Status.GOLD,
    ),
    "beep-over-quiet-noise": (
        [
            {"label": "static", "sources": ["noise"], "attributes": ["faint", "continuous"]},
            {"label": "beep", "sources": ["electronic device"], "attributes": ["clear"]},
        ],
        [{"first_event": "beep", "second_event": "static", "kind": "simultaneous"}],
        ExpertAnnotation.Status.SUBMITTED,  # left for the demo reviewer to accept
    ),
}


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


@transaction.atomic
def demo_corpus_ensure() -> Dataset:
    """The `demo` dataset: clips, systems, five references and three candidates per clip (audio not yet)."""
    dataset, _ = Dataset.objects.get_or_create(
        name=DEMO_DATASET,
        defaults={"description": "Synthetic tones, noise and sweeps with written captions (python manage.py demo)."},
    )
    systems = {
        name: CaptioningSystem.objects.get_or_create(name=name, defaults={"description": description})[0]
        for name, description in DEMO_SYSTEMS.items()
    }
    for external_id, (references, candidates) in CAPTIONS.items():
        clip, _ = Clip.objects.get_or_create(
            dataset=dataset, external_id=external_id, defaults={"file_name": f"{external_id}.wav"}
        )
        for position, text in enumerate(references):
            Caption.objects.update_or_create(
                clip=clip,
                role=Caption.Role.REFERENCE,
                position=position,
                defaults={
                    "text": text,
                    "author_kind": Caption.AuthorKind.HUMAN,
                    "source_label": f"demo_human_{position + 1}",
                },
            )
        for system_name, text in candidates.items():
            Caption.objects.update_or_create(
                clip=clip,
                role=Caption.Role.CANDIDATE,
                system=systems[system_name],
                defaults={"text": text, "author_kind": Caption.AuthorKind.MACHINE, "source_label": system_name},
            )
    return dataset


def demo_audio_ensure(*, dataset: Dataset) -> int:
    """Synthesize each clip's sound and store it through the audio ingestion; returns how many clips changed."""
    changed = 0
    with tempfile.TemporaryDirectory(prefix="demo-audio-") as folder:
        for clip in Clip.objects.filter(dataset=dataset, external_id__in=list(SOUNDS)).select_related("dataset"):
            path = demo_sound_write(name=clip.external_id, folder=Path(folder))
            changed += clip_attach_audio(clip=clip, file=path, file_name=path.name)
    return changed


@transaction.atomic
def demo_expert_annotations_ensure(*, dataset: Dataset) -> list[ExpertAnnotation]:
    """The demo annotator's graphs of a few clips (two gold, one submitted); already present ones are kept."""
    annotator = get_user_model().objects.get(username="annotator")
    annotations = []
    for external_id, (events, relations, status) in EXPERT_ANNOTATIONS.items():
        clip = Clip.objects.get(dataset=dataset, external_id=external_id)
        existing = ExpertAnnotation.objects.filter(clip=clip, annotator=annotator).first()
        if existing is not None:  # the demo users may have reviewed or edited it since: leave it
            annotations.append(existing)
            continue
        annotation = expert_annotation_save(
            clip=clip, annotator=annotator, events=events, relations=relations, status=ExpertAnnotation.Status.SUBMITTED
        )
        annotations.append(expert_annotation_set_status(annotation=annotation, status=status, is_admin=True))
    return annotations


DEMO_ANNOTATION_CAMPAIGN = "demo-annotation"


def demo_annotation_campaign_ensure(*, dataset: Dataset):
    """An annotation campaign over the demo clips for the demo annotator (one annotation per clip), reviewed by
    the demo reviewer; left alone when it exists."""
    from annotation.models import AnnotationCampaign
    from annotation.services.annotation_campaigns import annotation_campaign_create

    existing = AnnotationCampaign.objects.filter(name=DEMO_ANNOTATION_CAMPAIGN).first()
    if existing is not None:
        return existing
    users = get_user_model().objects
    return annotation_campaign_create(
        name=DEMO_ANNOTATION_CAMPAIGN,
        dataset=dataset,
        clips=list(Clip.objects.filter(dataset=dataset).order_by("external_id")),
        annotators=[users.get(username="annotator")],
        reviewers=[users.get(username="reviewer")],
        annotations_per_clip=1,
        instructions=(
            "Name every sound event you hear, who or what makes it, how it sounds, and what comes before what."
        ),
    )
