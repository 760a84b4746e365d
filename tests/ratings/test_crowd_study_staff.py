"""The admin's pages of a crowd study with participants at every stage of the path: every page renders (200) and
shows what happened to each participant (their outcome, their events with details, the exclude/reinstate form)."""

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ratings.models_study import Participant
from tests.ratings.study_data import (
    answer_share,
    headphone_fail,
    item_answer_post,
    participant_of,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)
from tests.ratings.study_data import pairwise_study as make_pairwise_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]


def _gold_side(item) -> str:
    gold = item.pair.gold_choice
    return "left" if (gold == "a") == item.a_on_left else "right"


def _good_side(item) -> str:
    return _gold_side(item) if item.pair.gold_choice else "left"


def _wrong_on_gold(item) -> str:
    return {"left": "right", "right": "left"}[_gold_side(item)] if item.pair.gold_choice else "left"


def _arrive(study, number: int) -> Client:
    client, response = prolific_arrive(study, address=f"10.30.0.{number}")
    assert response.status_code == 302
    return client


def _consent(client: Client, study, decision: str = "agree") -> None:
    assert client.post(reverse("study:entry", kwargs={"slug": study.slug})).status_code == 302
    assert client.post(reverse("study:consent", kwargs={"slug": study.slug}), {"decision": decision}).status_code == 302


def _finish_share(client: Client, participant: Participant, study, side_for) -> Participant:
    answer_share(client, participant, side_for=side_for)
    client.get(reverse("study:items", kwargs={"slug": study.slug}))
    participant.refresh_from_db()
    return participant


def participants_at_every_stage(study, admin_client: Client) -> dict[str, Participant]:
    """One participant per stage or ending of the path, each reached through the participant's pages."""
    people = {}
    people["arrived"] = participant_of(_arrive(study, 1))

    client = _arrive(study, 2)
    _consent(client, study)
    people["consented"] = participant_of(client)

    client = _arrive(study, 3)
    _consent(client, study, "decline")
    people["declined consent"] = participant_of(client)

    client = _arrive(study, 4)
    _consent(client, study)
    client.post(reverse("study:questionnaire", kwargs={"slug": study.slug}), {"age_band": "25-34"})
    assert client.get(reverse("study:headphones", kwargs={"slug": study.slug})).status_code == 200
    participant = participant_of(client)
    headphone_fail(participant.user.headphone_checks.get())
    client.get(reverse("study:headphones", kwargs={"slug": study.slug}))
    people["screened out"] = participant_of(client)

    client = _arrive(study, 5)
    participant = walk_to_items(client, study)
    assert item_answer_post(client, share_items(participant)[0], side=_good_side(share_items(participant)[0]))
    people["rating"] = participant

    client = _arrive(study, 6)
    walk_to_items(client, study)
    client.post(reverse("study:leave", kwargs={"slug": study.slug}))
    people["returned"] = participant_of(client)

    client = _arrive(study, 7)
    participant = walk_to_items(client, study)
    item_answer_post(client, share_items(participant)[0], side=_good_side(share_items(participant)[0]))
    Participant.objects.filter(pk=participant.pk).update(reserved_until=timezone.now() - timedelta(seconds=1))
    client.get(reverse("study:items", kwargs={"slug": study.slug}))
    people["timed out"] = participant_of(client)

    client = _arrive(study, 8)
    people["completed"] = _finish_share(client, walk_to_items(client, study), study, _good_side)

    client = _arrive(study, 9)
    people["excluded"] = _finish_share(client, walk_to_items(client, study), study, _wrong_on_gold)

    client = _arrive(study, 10)
    reinstated = _finish_share(client, walk_to_items(client, study), study, _wrong_on_gold)
    assert reinstated.is_excluded
    url = reverse("ratings:study_participant", args=[study.pk, reinstated.pk])
    assert admin_client.post(url, {"action": "reinstate"}).status_code == 302
    people["reinstated"] = reinstated

    for participant in people.values():
        participant.refresh_from_db()
    return people


EXPECTED = {
    # stage name: (status, stage, excluded, an event kind the participant page must list)
    "arrived": ("in_progress", "landing", False, "arrived"),
    "consented": ("in_progress", "questionnaire", False, "consented"),
    "declined consent": ("no_consent", "finished", False, "declined"),
    "screened out": ("screened_out", "finished", False, "screened_out_antiphase"),
    "rating": ("in_progress", "items", False, "share_reserved"),
    "returned": ("returned", "finished", False, "returned"),
    "timed out": ("timed_out", "finished", False, "timed_out"),
    "completed": ("completed", "finished", False, "completed"),
    "excluded": ("completed", "finished", True, "excluded"),
    "reinstated": ("completed", "finished", False, "reinstated"),
}


def test_every_staff_page_renders_for_participants_at_every_stage(make_user):
    study = make_pairwise_study(name="staff-pages", clip_count=12, judgements=3, screens="antiphase", screen_attempts=1)
    admin = Client()
    admin.force_login(make_user("organiser", staff=True))
    people = participants_at_every_stage(study, admin)
    assert set(people) == set(EXPECTED)
    for name, (status, stage, excluded, _) in EXPECTED.items():
        participant = people[name]
        assert (participant.status, participant.stage, participant.is_excluded) == (status, stage, excluded), name

    detail = admin.get(reverse("ratings:study_detail", args=[study.pk]))
    live = admin.get(reverse("ratings:study_live", args=[study.pk]))
    assert detail.status_code == live.status_code == 200
    for page in (detail.content.decode(), live.content.decode()):
        for participant in people.values():
            assert reverse("ratings:study_participant", args=[study.pk, participant.pk]) in page
            assert participant.platform_id in page
    assert admin.get(reverse("ratings:study_settings", args=[study.pk])).status_code == 200
    export = admin.get(reverse("ratings:study_export", args=[study.pk]), follow=True)
    assert export.status_code == 200, export.content[:300]
    assert not export.redirect_chain, [str(message) for message in export.context["messages"]]
    assert admin.get(reverse("ratings:study_list")).status_code == 200

    for name, participant in people.items():
        response = admin.get(reverse("ratings:study_participant", args=[study.pk, participant.pk]))
        assert response.status_code == 200, (name, response.status_code)
        page = response.content.decode()
        assert participant.platform_id in page and participant.outcome_label in page, name
        assert f"<td>{EXPECTED[name][3]}</td>" in page, name
        button = 'value="reinstate"' if participant.is_excluded else 'value="exclude"'
        assert button in page, name
        if participant.stage in ("items", "finished") and participant.events.filter(kind="share_reserved").exists():
            # The share event's detail ("items": the share's size) is listed, not iterated.
            assert "items: 5" in page, name
    questionnaire = admin.get(reverse("ratings:study_participant", args=[study.pk, people["completed"].pk]))
    assert "25-34" in questionnaire.content.decode()

    pay = admin.get(reverse("ratings:study_pay_export", args=[study.pk]))
    rows = list(csv.DictReader(io.StringIO(pay.content.decode())))
    assert pay.status_code == 200 and len(rows) == len(people)
    outcomes = {row["participant_id"]: row["status"] for row in rows}
    assert outcomes[people["excluded"].platform_id] == "excluded"
    assert outcomes[people["reinstated"].platform_id] == "completed"
