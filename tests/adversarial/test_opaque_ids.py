"""Attack: read database ids off what a participant is handed. The MTurk "enter" link's token is signed, not
encrypted, so its payload is readable by whoever holds it: against the old main it decoded to
{"participant": 43}, the participant's row number (how many took part before, and a handle on the others)."""

import base64
import json
import zlib

import pytest
from django.core import signing
from django.test import Client
from django.urls import reverse

from ratings.views_study import ENTER_SALT, enter_token
from tests.ratings.study_data import (
    arrival_url,
    mturk_worker_id,
    participant_of,
    study_media,  # noqa: F401 (a fixture)
)
from tests.ratings.study_data import pairwise_study as make_pairwise_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]
SUBMIT_TO = "https://workersandbox.mturk.com"


def _readable_payload(token: str) -> str:
    """What anyone can read from a signed token without the key: its base64 (zlib-compressed) payload."""
    payload = token.split(":")[0]
    compressed = payload.startswith(".")
    data = base64.urlsafe_b64decode(payload.lstrip(".") + "=" * (-len(payload.lstrip(".")) % 4))
    return (zlib.decompress(data) if compressed else data).decode()


def test_the_mturk_enter_token_carries_no_database_id():
    study = make_pairwise_study(name="opaque-enter", platforms=["mturk"], reward_currency="USD", judgements=1)
    client = Client(REMOTE_ADDR="10.50.0.1")
    arrived = client.get(
        arrival_url(study, workerId=mturk_worker_id(), assignmentId="A" * 22, hitId="H" * 20, turkSubmitTo=SUBMIT_TO)
    )
    assert arrived.status_code == 200
    participant = participant_of(client)
    token = enter_token(participant)
    readable = _readable_payload(token)
    assert "participant" not in readable and f":{participant.pk}" not in readable, readable
    assert json.loads(readable) == {"user": participant.user.get_username()}
    # The link still signs a fresh browser in as that participant.
    other = Client(REMOTE_ADDR="10.50.0.2")
    entered = other.get(reverse("study:enter", kwargs={"slug": study.slug, "token": token}))
    assert entered.status_code == 302 and participant_of(other) == participant
    # A token in the old form, even correctly signed, names nobody now; a forged one is refused as before.
    old_form = signing.dumps({"participant": participant.pk}, salt=ENTER_SALT, compress=True)
    assert Client().get(reverse("study:enter", kwargs={"slug": study.slug, "token": old_form})).status_code == 404
    forged = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    assert Client().get(reverse("study:enter", kwargs={"slug": study.slug, "token": forged})).status_code == 404


def test_an_enter_token_signs_in_only_under_its_own_study():
    """The token names an account; the link's study must be that participant's (the read takes both), and a link
    to no study is not found."""
    study = make_pairwise_study(name="opaque-own", platforms=["mturk"], reward_currency="USD", judgements=1)
    other_study = make_pairwise_study(name="opaque-other", platforms=["mturk"], reward_currency="USD", judgements=1)
    client = Client(REMOTE_ADDR="10.50.1.1")
    arrived = client.get(
        arrival_url(study, workerId=mturk_worker_id(), assignmentId="B" * 22, hitId="H" * 20, turkSubmitTo=SUBMIT_TO)
    )
    assert arrived.status_code == 200
    token = enter_token(participant_of(client))

    elsewhere = Client(REMOTE_ADDR="10.50.1.2")
    assert elsewhere.get(reverse("study:enter", kwargs={"slug": other_study.slug, "token": token})).status_code == 404
    assert "_auth_user_id" not in elsewhere.session
    assert Client().get(reverse("study:enter", kwargs={"slug": "no-such-study", "token": token})).status_code == 404
    own = elsewhere.get(reverse("study:enter", kwargs={"slug": study.slug, "token": token}))
    assert own.status_code == 302 and participant_of(elsewhere).study == study
