"""One study recruiting on Prolific and MTurk at once: one link, one set of slots, each participant on their own
platform's terms (arrival, end, code, pay CSV, platform actions).

The expected values are written out here from the platforms' documented behaviour (Prolific's completion URL,
MTurk's externalSubmit form, which endings return the HIT), not read back from the code.
"""

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from ratings.crowd_platforms import ArrivalError, arrival_platform
from ratings.models_study import Participant
from ratings.platforms.actions import PlanError, actions_plan
from ratings.services.studies import study_settings_update
from ratings.services.study_report import study_pay_csv
from ratings.services.study_shares import StudySetupError
from tests.ratings.study_data import (
    answer_share,
    arrival_url,
    participant_of,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)
from tests.ratings.study_data import pairwise_study as make_pairwise_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]

SUBMIT_TO = "https://workersandbox.mturk.com"
PROLIFIC_PID = "a1" * 12


def _mturk(worker: str, assignment: str) -> dict:
    return {"workerId": worker, "assignmentId": assignment, "hitId": "3HITBOTH00000001", "turkSubmitTo": SUBMIT_TO}


def _prolific(pid: str = PROLIFIC_PID) -> dict:
    return {"PROLIFIC_PID": pid, "STUDY_ID": "b2" * 12, "SESSION_ID": "c3" * 12}


def _arrive(study, params: dict, address: str) -> tuple[Client, Participant]:
    client = Client(REMOTE_ADDR=address)
    response = client.get(arrival_url(study, **params))
    assert response.status_code in (200, 302), response.content[:300]
    return client, participant_of(client)


def _right_side(item) -> str:
    """HC pairs on the left; gold pairs on the clip's own caption, so nobody is excluded (and their slots stay)."""
    if not item.pair.gold_choice:
        return "left"
    return "left" if (item.pair.gold_choice == "a") == item.a_on_left else "right"


def _both(**settings):
    defaults = {"platforms": ["prolific", "mturk"], "reward_currency": "USD", "questionnaire": []}
    return make_pairwise_study(clip_count=12, judgements=2, **{**defaults, **settings})


def test_the_link_parameters_name_the_platform_among_the_studys():
    both = ["prolific", "mturk"]
    assert arrival_platform(both, _prolific()) == "prolific"
    assert arrival_platform(both, _mturk("AWORKER0001", "3ASSIGN00000001")) == "mturk"
    assert arrival_platform(both, {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}) == "mturk", "MTurk's preview"
    assert arrival_platform(both, {}) == ""
    assert arrival_platform(both, {"pid": "panel-7"}) == "", "a panel id names nobody in a study not on a panel"
    assert arrival_platform(["generic"], {"pid": "panel-7"}) == "generic"
    with pytest.raises(ArrivalError, match="prolific and mturk"):
        arrival_platform(both, {**_prolific(), **_mturk("AWORKER0001", "3ASSIGN00000001")})


def test_one_link_takes_participants_from_both_platforms_into_the_same_slots_and_each_ends_on_its_own(settings):
    settings.STUDY_ARRIVALS_PER_ADDRESS = 100
    study = _both()
    slots = study.slots.count()
    client_p, from_prolific = _arrive(study, _prolific(), "10.1.0.1")
    client_m, from_mturk = _arrive(study, _mturk("AWORKER0001", "3ASSIGN00000001"), "10.1.0.2")
    assert (from_prolific.platform, from_mturk.platform) == ("prolific", "mturk")
    assert from_mturk.platform_data == {
        "assignmentId": "3ASSIGN00000001",
        "hitId": "3HITBOTH00000001",
        "turkSubmitTo": SUBMIT_TO,
    }
    # Prolific's ids leave the address bar; MTurk's frame gets the landing with the externalSubmit form at once.
    landing = client_m.get(arrival_url(study, **_mturk("AWORKER0001", "3ASSIGN00000001")))
    assert landing.status_code == 200 and f"{SUBMIT_TO}/mturk/externalSubmit" in landing.content.decode()
    assert "2.00 USD" in landing.content.decode(), "the study's one reward, in the currency MTurk pays"
    for client, participant in ((client_p, from_prolific), (client_m, from_mturk)):
        walk_to_items(client, study)
        answer_share(client, participant, side_for=_right_side)
        client.get(reverse("study:items", kwargs={"slug": study.slug}))
    taken = set(study.slots.filter(participant__isnull=False).values_list("participant__platform", flat=True))
    assert taken == {"prolific", "mturk"} and study.slots.count() == slots, "one set of slots, shared"

    end_p = client_p.get(reverse("study:end", kwargs={"slug": study.slug})).content.decode()
    end_m = client_m.get(reverse("study:end", kwargs={"slug": study.slug})).content.decode()
    completion = f"https://app.prolific.com/submissions/complete?cc={study.completion_code}"
    assert completion in end_p and "externalSubmit" not in end_p and "taken back to Prolific" in end_p
    assert f"{SUBMIT_TO}/mturk/externalSubmit" in end_m and "app.prolific.com" not in end_m
    assert 'name="assignmentId" value="3ASSIGN00000001"' in end_m


def test_endings_follow_the_participants_platform(settings):
    """Declining consent: Prolific takes the no-consent code; MTurk asks to return the HIT (no code to submit)."""
    settings.STUDY_ARRIVALS_PER_ADDRESS = 100
    study = _both()
    ends = {}
    for name, params, address in (
        ("prolific", _prolific("d4" * 12), "10.2.0.1"),
        ("mturk", _mturk("AWORKER0002", "3ASSIGN00000002"), "10.2.0.2"),
    ):
        client, _ = _arrive(study, params, address)
        assert client.post(reverse("study:entry", kwargs={"slug": study.slug})).status_code == 302
        client.post(reverse("study:consent", kwargs={"slug": study.slug}), {"decision": "decline"})
        ends[name] = client.get(reverse("study:end", kwargs={"slug": study.slug})).content.decode()
    assert study.no_consent_code in ends["prolific"] and "Prolific" in ends["prolific"]
    assert study.no_consent_code not in ends["mturk"] and "return" in ends["mturk"].lower()


def test_pay_csvs_and_platform_plans_hold_only_their_own_platforms_participants(settings, make_user):
    settings.STUDY_ARRIVALS_PER_ADDRESS = 100
    study = _both()
    people = [
        _arrive(study, _prolific("e5" * 12), "10.3.0.1"),
        _arrive(study, _mturk("AWORKER0003", "3ASSIGN00000003"), "10.3.0.2"),
    ]
    for client, participant in people:
        walk_to_items(client, study)
        answer_share(client, participant, side_for=_right_side)
        client.get(reverse("study:items", kwargs={"slug": study.slug}))

    prolific_rows = list(csv.DictReader(io.StringIO(study_pay_csv(study=study, platform="prolific"))))
    mturk_rows = list(csv.DictReader(io.StringIO(study_pay_csv(study=study, platform="mturk"))))
    assert [(r["platform"], r["participant_id"], r["action"]) for r in prolific_rows] == [
        ("prolific", "e5" * 12, "approve")
    ]
    assert [(r["WorkerId"], r["AssignmentId"], r["Approve"]) for r in mturk_rows] == [
        ("AWORKER0003", "3ASSIGN00000003", "x")
    ]
    assert [a.participant_id for a in actions_plan(study=study, platform="mturk")] == ["AWORKER0003"]
    assert [a.participant_id for a in actions_plan(study=study, platform="prolific")] == ["e5" * 12]
    with pytest.raises(PlanError, match="does not recruit on"):
        actions_plan(study=_both(name="prolific-only", platforms=["prolific"]), platform="mturk")

    admin = Client()
    admin.force_login(make_user("pay-admin", staff=True))
    url = reverse("ratings:study_pay_export", args=[study.pk])
    mturk_file = admin.get(url, {"platform": "mturk"})
    assert mturk_file.status_code == 200 and "AWORKER0003" in mturk_file.content.decode()
    assert "e5" * 12 not in mturk_file.content.decode()
    assert 'filename="crowd-pairs-mturk-pay.csv"' in mturk_file["Content-Disposition"]
    assert admin.get(url, {"platform": "generic"}).status_code == 404

    detail = admin.get(reverse("ratings:study_detail", args=[study.pk])).content.decode()
    assert 'id="study-link-prolific"' in detail and 'id="study-link-mturk"' in detail
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in detail
    assert 'data-pay-csv="prolific"' in detail and 'data-pay-csv="mturk"' in detail
    assert 'data-count="arrivals_prolific">1<' in detail and 'data-count="arrivals_mturk">1<' in detail
    platform_page = admin.get(reverse("ratings:study_platform", args=[study.pk])).content.decode()
    assert 'id="prolific-link"' in platform_page and 'id="mturk-hit"' in platform_page
    assert 'id="planned-prolific"' in platform_page and 'id="planned-mturk"' in platform_page
    assert 'id="id_prolific_bonus_text"' in platform_page and 'id="id_mturk_bonus_text"' in platform_page


def test_a_platform_participants_came_from_cannot_be_dropped(settings):
    settings.STUDY_ARRIVALS_PER_ADDRESS = 100
    study = _both()
    _arrive(study, _mturk("AWORKER0004", "3ASSIGN00000004"), "10.4.0.1")
    with pytest.raises(StudySetupError, match="participants came from mturk"):
        study_settings_update(study=study, platforms=["prolific"], reward_currency="GBP")
    assert study_settings_update(study=study, platforms=["mturk"]).platforms == ["mturk"], "Prolific had nobody"
