"""Crowd studies for the tests: small corpora published as studies, and a participant walking the path over HTTP."""

import re
import secrets
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ratings.models import AssignmentItem, HeadphoneCheck
from ratings.models_study import Participant, Study
from ratings.services.campaigns import campaign_setup
from ratings.services.studies import study_publish
from tests.ratings.campaign_data import clip_audio_attach, corpus_build, headphone_pass_give

ITEM_URL = re.compile(r"/ratings/items/([a-z0-9]+)/$")
QUESTIONNAIRE = [
    {"key": "age_band", "label": "Your age", "choices": ["18-24", "25-34", "35+"], "required": True},
    {"key": "device", "label": "Headphone model", "choices": [], "required": False},
]


@pytest.fixture
def study_media(settings, tmp_path):
    """Clip audio (and the rater copies) in the test's own directory (use: pytest.mark.usefixtures)."""
    settings.MEDIA_ROOT = tmp_path / "media"


def prolific_id() -> str:
    return secrets.token_hex(12)


def mturk_worker_id() -> str:
    return "A" + secrets.token_hex(6).upper()


def pairwise_study(
    *, name: str = "crowd-pairs", clip_count: int = 6, judgements: int = 2, hc: int = 6, gold: int = 4, **settings
) -> Study:
    """A pairwise campaign (`hc` HC pairs to cover, `gold` gold HI pairs as checks) published as a study."""
    dataset, clips, _ = corpus_build(name=f"{name}-data", clip_count=clip_count)
    for clip in clips:
        clip_audio_attach(clip)
    campaign = campaign_setup(
        name=name,
        dataset=dataset,
        task_type="pairwise",
        judgements_per_item=judgements,
        split_counts={"HC": hc, "HI": gold},
        gold_from_hi=True,
        title="Sound descriptions",
    )
    defaults = {
        "consent_text": "You agree to listen.",
        "questionnaire": QUESTIONNAIRE,
        "screens": Study.Screens.NONE,
        "items_per_participant": 3,
        "attention_checks": 2,
        "reward": 2,
        "exclude_same_answer": False,
    }
    return study_publish(campaign=campaign, **{**defaults, **settings})


def thumbs_study(*, name: str = "crowd-thumbs", clip_count: int = 8, judgements: int = 2, **settings) -> Study:
    dataset, clips, systems = corpus_build(name=f"{name}-data", clip_count=clip_count)
    for clip in clips:
        clip_audio_attach(clip)
    campaign = campaign_setup(
        name=name,
        dataset=dataset,
        task_type="thumbs",
        judgements_per_item=judgements,
        clips=clips[: clip_count - 2],  # two clips outside the campaign: catch captions can come from them too
        systems=systems[:2],
        human_captions_per_clip=1,
        title="Rate descriptions",
    )
    defaults = {
        "consent_text": "You agree to listen.",
        "questionnaire": [],
        "screens": Study.Screens.NONE,
        "items_per_participant": 3,
        "attention_checks": 1,
        "exclude_same_answer": False,
    }
    return study_publish(campaign=campaign, **{**defaults, **settings})


def arrival_url(study: Study, **params) -> str:
    return f"{reverse('study:entry', kwargs={'slug': study.slug})}?{urlencode(params)}"


def prolific_arrive(study: Study, pid: str | None = None, *, client: Client | None = None, address="10.0.0.1"):
    """A browser arriving from Prolific; returns (client, response of the arrival)."""
    client = client or Client(REMOTE_ADDR=address)
    pid = pid or prolific_id()
    response = client.get(arrival_url(study, PROLIFIC_PID=pid, STUDY_ID="a" * 24, SESSION_ID="b" * 24))
    return client, response


def participant_of(client: Client) -> Participant:
    return Participant.objects.get(user_id=int(client.session["_auth_user_id"]))


def practice_audio_play(client: Client, study: Study, *, seconds_ago: float = 30.0) -> None:
    """Play the practice sound (the server records when it sent it), then let its length pass (moved back in time)."""
    response = client.get(reverse("study:practice_audio", kwargs={"slug": study.slug}))
    assert response.status_code == 200 and response["Content-Type"] == "audio/wav"
    participant = participant_of(client)
    earlier = timezone.now() - timedelta(seconds=seconds_ago)
    assert Participant.objects.filter(pk=participant.pk, practice_audio_served_at__isnull=False).update(
        practice_audio_served_at=earlier
    )


def walk_to_items(client: Client, study: Study) -> Participant:
    """Landing -> consent -> questionnaire -> instructions with the practice -> start: the share is reserved."""
    slug = study.slug
    assert client.post(reverse("study:entry", kwargs={"slug": slug})).status_code == 302
    assert client.post(reverse("study:consent", kwargs={"slug": slug}), {"decision": "agree"}).status_code == 302
    if study.questionnaire:
        response = client.post(reverse("study:questionnaire", kwargs={"slug": slug}), {"age_band": "25-34"})
        assert response.status_code == 302, response.content[:500]
    if study.screen_kinds:
        for kind in study.screen_kinds:
            headphone_pass_give(participant_of(client).user, kind=kind)
        assert client.get(reverse("study:headphones", kwargs={"slug": slug})).status_code == 302
    practice_audio_play(client, study)
    practice = client.post(reverse("study:instructions", kwargs={"slug": slug}), {"side": "left", "precision_1": "5"})
    assert practice.status_code == 200, practice.content[:500]
    response = client.post(reverse("study:start", kwargs={"slug": slug}))
    assert response.status_code == 302
    return participant_of(client)


def item_audio_play(client: Client, item: AssignmentItem, *, seconds_ago: float = 30.0) -> None:
    """Play the item's clip as its page does: fetch the audio through the item's own URL, so the server records
    the bytes it served (the listening proof), then let the clip's length pass (the page's showing and the record are
    moved back in time instead of waiting)."""
    response = client.get(reverse("ratings:item_audio", kwargs={"token": item.token}))
    assert response.status_code == 200, (response.status_code, response.get("Location"))
    assert b"".join(response.streaming_content)  # (the test client ends the request when the body is read)
    served = AssignmentItem.objects.filter(pk=item.pk, audio_first_served_at__isnull=False)
    earlier = timezone.now() - timedelta(seconds=seconds_ago)
    assert served.update(first_shown_at=earlier, audio_first_served_at=earlier) == 1


def item_answer_post(client: Client, item: AssignmentItem, *, side: str = "left", precision: int = 4):
    """Open the item page, play its audio, report listening and submit; returns the response."""
    url = reverse("ratings:item", kwargs={"token": item.token})
    page = client.get(url)
    assert page.status_code == 200, (page.status_code, page.get("Location"))
    version = re.search(rb'name="version" value="(\d+)"', page.content).group(1).decode()
    item_audio_play(client, item)
    listened = client.post(f"{url}listened/", "{}", content_type="application/json")
    assert listened.status_code == 200, listened.content
    if item.pair_id is not None:
        return client.post(url, {"version": version, "side": side})
    data = {"version": version, "synthesized": "no"}
    for number in range(1, len(item.caption_order) + 1):
        data.update(
            {
                f"precision_{number}": str(precision),
                f"recall_{number}": "3",
                f"fluency_{number}": "0",
                f"conciseness_{number}": "0",
                f"irrelevance_{number}": "0",
            }
        )
    return client.post(url, data)


def share_items(participant: Participant) -> list[AssignmentItem]:
    return list(
        AssignmentItem.objects.filter(
            assignment__campaign=participant.study.campaign, assignment__rater=participant.user
        ).order_by("position")
    )


def answer_share(client: Client, participant: Participant, *, side_for=None, precision_for=None) -> None:
    """Answer every item of the share in order, following the pages' redirects."""
    for item in share_items(participant):
        side = side_for(item) if side_for else "left"
        precision = precision_for(item) if precision_for else 4
        response = item_answer_post(client, item, side=side, precision=precision)
        assert response.status_code == 302, response.content[:800]


def headphone_fail(check: HeadphoneCheck) -> None:
    """Answer every trial of an attempt wrongly (all sounds played first)."""
    from ratings.services.headphone import headphone_check_submit, screen
    from tests.ratings.campaign_data import headphone_trials_play

    check = headphone_trials_play(check)
    test = screen(check.kind)
    headphone_check_submit(check=check, answers=[(test.trial_answer(trial) + 1) % 3 for trial in check.trials])
