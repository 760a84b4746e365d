"""The practice sound counts on the items' listening clock: the practice answer is refused until the sound was
sent and its listening time (`listening_seconds_for`, as for an item's clip) has passed since."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from ratings.models_study import Participant
from ratings.services.listening import listening_seconds_for
from ratings.services.study_practice import PRACTICE_SECONDS
from tests.ratings.study_data import (
    pairwise_study,
    participant_of,
    prolific_arrive,
    study_media,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]


def test_the_practice_answer_waits_for_the_sound_like_an_item(settings):
    settings.MUST_LISTEN_SECONDS = 0  # the whole sound, as for a clip
    study = pairwise_study()
    client, _ = prolific_arrive(study)
    slug = {"slug": study.slug}
    client.post(reverse("study:entry", kwargs=slug))
    client.post(reverse("study:consent", kwargs=slug), {"decision": "agree"})
    client.post(reverse("study:questionnaire", kwargs=slug), {"age_band": "25-34"})
    answer = {"side": "left", "precision_1": "5"}

    unplayed = client.post(reverse("study:instructions", kwargs=slug), answer)
    assert unplayed.status_code == 400 and "has not been played yet" in unplayed.content.decode()

    assert client.get(reverse("study:practice_audio", kwargs=slug)).status_code == 200
    required = listening_seconds_for(PRACTICE_SECONDS)
    assert required == PRACTICE_SECONDS > 1
    too_soon = client.post(reverse("study:instructions", kwargs=slug), answer)
    assert too_soon.status_code == 400 and f"needs {required:.1f} s of listening" in too_soon.content.decode()
    participant = participant_of(client)
    assert participant.practice_done_at is None

    Participant.objects.filter(pk=participant.pk).update(
        practice_audio_served_at=timezone.now() - timedelta(seconds=required + 0.5)
    )
    heard = client.post(reverse("study:instructions", kwargs=slug), answer)
    assert heard.status_code == 200
    participant.refresh_from_db()
    assert participant.practice_done_at is not None
