"""The queries of a crowd participant's requests on an item, held to what they need.

Every participant request costs CPU in one of few web workers (the crowd load target: hundreds of participants
within a minute on two sync workers), and on PostgreSQL most of a request's CPU is spent building and running its
queries. The counts below are what each request needs; a new query on these paths (a repeated read, a role check a
participant cannot fail, a transaction around one statement) shows up here.
"""

import json
import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ratings.models import AssignmentItem
from tests.ratings.study_data import (
    pairwise_study,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]

# Session, the user read with their participation, study and campaign (ratings.authentication.ParticipantBackend:
# one query where the middleware and the participant gate made two), then the item. With REDIS_URL set the session
# comes from Redis (config/settings.py), not from the database.
SESSION_FROM_REDIS = settings.SESSION_ENGINE == "config.sessions"
PER_REQUEST = 2 if SESSION_FROM_REDIS else 3


@pytest.fixture
def rating_participant():
    """A participant with their share reserved, on its first item, and a client signed in as them."""
    study = pairwise_study()
    client = Client()
    prolific_arrive(study, client=client)
    participant = walk_to_items(client, study)
    return client, share_items(participant)[0]


def test_an_items_requests_read_and_write_only_what_they_need(rating_participant, django_assert_num_queries):
    client, item = rating_participant
    url = reverse("ratings:item", kwargs={"token": item.token})

    # The page: the item's clock started (one conditional UPDATE), the share's items and the pair's captions (read
    # by id alone: no join to their clip and dataset).
    with django_assert_num_queries(PER_REQUEST + 3) as page_queries:
        page = client.get(url)
    assert page.status_code == 200
    assert "caption-text" in page.content.decode()
    caption_read = next(query["sql"] for query in page_queries.captured_queries if "annotation_caption" in query["sql"])
    assert "annotation_clip" not in caption_read
    version = re.search(rb'name="version" value="(\d+)"', page.content).group(1).decode()

    # The audio: the served bytes recorded by one UPDATE on condition that the row still holds the record the request
    # read (the locked read and merge happen only when another response changed it meanwhile).
    with django_assert_num_queries(PER_REQUEST + 1):
        audio = client.get(f"{url}audio/")
        assert b"".join(audio.streaming_content)
    earlier = timezone.now() - timedelta(seconds=30)
    AssignmentItem.objects.filter(pk=item.pk).update(first_shown_at=earlier, audio_first_served_at=earlier)

    # Listening: the rater's row locked, the item's proof and the other clips' listening stretches in one read, the
    # UPDATE (BEGIN, COMMIT).
    with django_assert_num_queries(PER_REQUEST + 5):
        listened = client.post(f"{url}listened/", "{}", content_type="application/json")
    assert listened.status_code == 200, listened.content

    # The autosave: one conditional UPDATE.
    with django_assert_num_queries(PER_REQUEST + 1):
        draft = client.post(
            f"{url}draft/", json.dumps({"version": int(version), "fields": {"side": "left"}}), "application/json"
        )
    assert draft.status_code == 200, draft.content
    assert AssignmentItem.objects.get(pk=item.pk).draft == {"side": "left"}

    # The answer, in one transaction (BEGIN, COMMIT): the locked item read with the rater's previous answer time and
    # the next open item, the vote, the item, its event.
    with django_assert_num_queries(PER_REQUEST + 6):
        answer = client.post(url, {"version": version, "side": "left"})
    assert answer.status_code == 302
    assert AssignmentItem.objects.get(pk=item.pk).completed_at is not None
