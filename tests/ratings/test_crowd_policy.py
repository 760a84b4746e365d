"""Crowd studies and the platforms' rules: crowd-only campaigns from the form, MTurk endings that return the HIT,
rules as instructional or performance with their pay action, numbers that agree (coverage, exports, pay CSV),
end pages, and THumBS check items that look like every other item."""

import csv
import io
import json
import re
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from ratings.models import AssignmentItem, Campaign, PairwiseVote, campaign_rater_code
from ratings.models_study import AttentionCheck, Participant, Study
from ratings.selectors import campaign_included_votes
from ratings.services.studies import study_publish
from ratings.services.study_exclusion import exclusion_findings
from ratings.services.study_export import study_fense_items, study_thumbs_csv
from ratings.services.study_report import ParticipantRow, study_pay_csv, study_summary
from ratings.services.study_shares import StudySetupError, study_coverage
from tests.ratings.campaign_data import clip_audio_attach, corpus_build
from tests.ratings.rater_api import api_rows
from tests.ratings.study_data import (
    answer_share,
    arrival_url,
    headphone_fail,
    item_answer_post,
    mturk_worker_id,
    participant_of,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    thumbs_study,
    walk_to_items,
)
from tests.ratings.study_data import pairwise_study as make_pairwise_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]
SUBMIT_TO = "https://workersandbox.mturk.com"


def _gold_side(item) -> str:
    return "left" if (item.pair.gold_choice == "a") == item.a_on_left else "right"


def _good_side(item) -> str:
    return _gold_side(item) if item.pair.gold_choice else "left"


def _failing(count: int):
    """A side chooser that answers the first `count` gold pairs of the share wrongly, every other one right."""
    failed = []

    def side(item) -> str:
        if item.pair.gold_choice and len(failed) < count:
            failed.append(item.pk)
            return {"left": "right", "right": "left"}[_gold_side(item)]
        return _good_side(item)

    return side


def _finish(client: Client, participant: Participant, study: Study, side_for) -> Participant:
    answer_share(client, participant, side_for=side_for)
    client.get(reverse("study:items", kwargs={"slug": study.slug}))
    participant.refresh_from_db()
    return participant


def _pay_rows(study: Study, key: str) -> dict[str, dict]:
    return {
        row[key]: row for row in csv.DictReader(io.StringIO(study_pay_csv(study=study, platform=study.platforms[0])))
    }


# --- Crowd-only campaigns from the campaign form -----------------------------------------------------------


def test_a_crowd_only_campaign_is_created_from_the_form_and_published_as_a_study(client, make_user):
    dataset, clips, systems = corpus_build(name="crowd-form-data", clip_count=8)
    for clip in clips:
        clip_audio_attach(clip)
    rater = make_user("inhouse", "rater")
    client.force_login(make_user("organiser", staff=True))
    data = {
        "name": "crowd-form",
        "dataset": dataset.pk,
        "task_type": "pairwise",
        "seed": "0",
        "judgements_per_item": "5",
        "count_hc": "6",
        "count_hi": "3",
        "gold_from_hi": "on",
    }
    url = reverse("ratings:campaign_create")
    # Without crowd-only, five judgements per item still need five in-house raters.
    refused = client.post(url, data)
    assert refused.status_code == 400 and "5 judgements per item need at least 5 raters" in refused.content.decode()
    # Crowd-only means no in-house raters: ticking one is refused by name.
    mixed = client.post(url, {**data, "crowd_only": "on", "raters": [rater.pk]})
    assert mixed.status_code == 400 and "a crowd-only campaign has no in-house raters" in mixed.content.decode()
    assert not Campaign.objects.filter(name="crowd-form").exists()
    response = client.post(url, {**data, "crowd_only": "on"})
    assert response.status_code == 302, response.content.decode()[:2000]
    campaign = Campaign.objects.get(name="crowd-form")
    assert campaign.judgements_per_item == 5 and not campaign.assignments.exists()
    assert campaign.pairs.filter(split="HI").exclude(gold_choice="").count() == 3
    # The HI pairs' donor clips are never items, so no participant of the study hears them.
    donors = set(campaign.pairs.filter(split="HI").values_list("caption_b__copied_from__clip_id", flat=True))
    assert donors and not donors & set(campaign.pairs.filter(split="HC").values_list("clip_id", flat=True))
    publish = client.get(reverse("ratings:study_publish", args=[campaign.pk]))
    assert publish.status_code == 200
    study = study_publish(campaign=campaign, consent_text="Consent.", screens="none", attention_checks=2)
    assert study.slots.count() == 6 * 5
    participant_client, _ = prolific_arrive(study)
    assert len(share_items(walk_to_items(participant_client, study))) > 0


# --- MTurk: declined, full and screened out return the HIT ---------------------------------------------------


def _worker(study: Study, number: int) -> tuple[Client, str]:
    client = Client(REMOTE_ADDR=f"10.40.0.{number}")
    assignment = f"A{number:02d}" + "X" * 20
    response = client.get(
        arrival_url(study, workerId=mturk_worker_id(), assignmentId=assignment, hitId="H" * 20, turkSubmitTo=SUBMIT_TO)
    )
    assert response.status_code == 200
    return client, assignment


def _status(client: Client, participant: Participant) -> dict:
    from ratings.views_study import enter_token

    url = reverse("study:status", kwargs={"slug": participant.study.slug, "token": enter_token(participant)})
    return json.loads(client.get(url).content)


def test_mturk_workers_who_decline_find_the_study_full_or_are_screened_out_return_the_hit():
    study = make_pairwise_study(
        name="mturk-endings",
        platforms=["mturk"],
        reward_currency="USD",
        judgements=1,
        items_per_participant=50,
        screens="antiphase",
        screen_attempts=1,
    )
    slug = study.slug
    screened, screened_assignment = _worker(study, 4)
    _screen_out(screened, study)
    declined, declined_assignment = _worker(study, 2)
    declined.post(reverse("study:entry", kwargs={"slug": slug}))
    declined.post(reverse("study:consent", kwargs={"slug": slug}), {"decision": "decline"})

    done, done_assignment = _worker(study, 1)
    finished = _finish(done, walk_to_items(done, study), study, _good_side)  # takes every slot: the study is full
    assert finished.status == "completed"
    page = done.get(reverse("study:end", kwargs={"slug": slug})).content.decode()
    assert f'action="{SUBMIT_TO}/mturk/externalSubmit"' in page and study.completion_code in page
    full, full_assignment = _worker(study, 3)  # arrives when every slot is taken: full at once

    for client, status, code in (
        (declined, "no_consent", study.no_consent_code),
        (full, "full", study.full_code),
        (screened, "screened_out", study.screen_out_code),
    ):
        participant = participant_of(client)
        assert participant.status == status
        end = client.get(reverse("study:end", kwargs={"slug": slug}))
        page = end.content.decode()
        assert end.status_code == 200 and "Please return the HIT" in page, status
        assert "externalSubmit" not in page and 'name="assignmentId"' not in page, status
        assert code not in page and "study_end.js" not in page, status
        # The MTurk frame polls this: finished, no code, return the HIT (its script then never submits).
        assert _status(client, participant) == {"finished": True, "code": "", "return_hit": True}, status
    assert _status(done, finished) == {"finished": True, "code": study.completion_code, "return_hit": False}

    rows = _pay_rows(study, "AssignmentId")
    assert (rows[done_assignment]["action"], rows[done_assignment]["Approve"]) == ("approve", "x")
    for assignment, status in (
        (declined_assignment, "no_consent"),
        (full_assignment, "full"),
        (screened_assignment, "screened_out"),
    ):
        row = rows[assignment]
        assert row["status"] == status
        assert (row["action"], row["Approve"], row["completion_code"]) == ("return", "", "")
        # Not approved; should the worker submit the HIT anyway, the upload rejects it (no auto-approval).
        assert row["Reject"].startswith("No work was done (") and "the HIT was to be returned" in row["Reject"]


def _screen_out(client: Client, study: Study) -> None:
    slug = study.slug
    client.post(reverse("study:entry", kwargs={"slug": slug}))
    client.post(reverse("study:consent", kwargs={"slug": slug}), {"decision": "agree"})
    client.post(reverse("study:questionnaire", kwargs={"slug": slug}), {"age_band": "25-34"})
    client.get(reverse("study:headphones", kwargs={"slug": slug}))
    headphone_fail(participant_of(client).user.headphone_checks.get())
    client.get(reverse("study:headphones", kwargs={"slug": slug}))


def test_an_mturk_study_may_opt_into_paying_screened_out_workers():
    study = make_pairwise_study(
        name="mturk-screen-pay",
        platforms=["mturk"],
        reward_currency="USD",
        screens="antiphase",
        screen_attempts=1,
        mturk_screen_out_pay=True,
    )
    client, assignment = _worker(study, 9)
    _screen_out(client, study)
    participant = participant_of(client)
    assert participant.status == "screened_out"
    page = client.get(reverse("study:end", kwargs={"slug": study.slug})).content.decode()
    assert f'action="{SUBMIT_TO}/mturk/externalSubmit"' in page and study.screen_out_code in page
    assert "Please return the HIT" not in page
    assert _status(client, participant) == {"finished": True, "code": study.screen_out_code, "return_hit": False}
    row = _pay_rows(study, "AssignmentId")[assignment]
    assert (row["action"], row["Approve"], row["completion_code"]) == ("approve", "x", study.screen_out_code)


# --- Policy: instructional or performance, thresholds at their boundary ------------------------------------


def test_performance_checks_exclude_but_pay_and_only_instructional_failures_propose_reject(make_user):
    study = make_pairwise_study(name="policy", clip_count=12, judgements=3, attention_checks=2, exclude_failed_checks=2)
    people = {}
    for number, failures in enumerate((0, 1, 2), start=1):
        client, _ = prolific_arrive(study, address=f"10.41.0.{number}")
        people[failures] = _finish(client, walk_to_items(client, study), study, _failing(failures))
    failed = {
        failures: AttentionCheck.objects.filter(rater=participant.user, passed=False).count()
        for failures, participant in people.items()
    }
    assert failed == {0: 0, 1: 1, 2: 2}
    # One failure below the threshold: included and paid; at the threshold: excluded, still paid (performance).
    assert not people[1].is_excluded and people[2].is_excluded
    assert people[2].exclusion_codes == ["gold_pair"]
    assert campaign_included_votes(campaign=study.campaign).filter(rater=people[1].user).exists()
    rows = _pay_rows(study, "participant_id")
    assert [rows[people[n].platform_id]["action"] for n in (0, 1, 2)] == ["approve", "approve", "approve"]
    assert rows[people[2].platform_id]["status"] == "excluded" and rows[people[2].platform_id]["rules"] == "gold_pair"

    # An admin marks a failed instructional check: only that proposes a rejection.
    admin = Client()
    admin.force_login(make_user("organiser", staff=True))
    url = reverse("ratings:study_participant", args=[study.pk, people[0].pk])
    bad = admin.post(url, {"action": "exclude", "reason": "x", "rule": "nonsense"}, follow=True)
    assert "is not one of" in bad.content.decode()
    people[0].refresh_from_db()
    assert not people[0].is_excluded
    admin.post(url, {"action": "exclude", "reason": "chose left on both 'choose right' items", "rule": "instructional"})
    quality = reverse("ratings:study_participant", args=[study.pk, people[1].pk])
    admin.post(quality, {"action": "exclude", "reason": "answers look random", "rule": "admin_quality"})
    rows = _pay_rows(study, "participant_id")
    assert rows[people[0].platform_id]["action"] == "reject"
    assert rows[people[1].platform_id]["action"] == "approve" and rows[people[1].platform_id]["status"] == "excluded"


def test_the_median_time_rule_keeps_a_participant_exactly_at_the_threshold():
    study = make_pairwise_study(
        name="speed", exclude_failed_checks=0, exclude_same_answer=False, exclude_median_seconds_below=20
    )
    client, _ = prolific_arrive(study)
    participant = _finish(client, walk_to_items(client, study), study, _good_side)
    items = AssignmentItem.objects.filter(assignment__rater=participant.user)
    items.update(seconds_spent=20.0)
    assert exclusion_findings(participant=participant) == []
    items.update(seconds_spent=19.9)
    assert exclusion_findings(participant=participant) == [("median_time", "median time per item 19.9 s, below 20 s")]


# --- Numbers that agree -------------------------------------------------------------------------------------


def _export_votes(study: Study) -> int:
    items = study_fense_items(study=study)
    return sum(len(entry[-1]) for item in items for key, entry in item.items() if key[:2] in ("HC", "HI", "HM", "MM"))


def test_reinstating_after_others_judged_the_items_again_keeps_coverage_and_exports_in_agreement(make_user):
    study = make_pairwise_study(name="reinstate", clip_count=12, judgements=1, items_per_participant=6)
    careless_client, _ = prolific_arrive(study, address="10.42.0.1")
    careless = _finish(careless_client, walk_to_items(careless_client, study), study, _failing(2))
    assert careless.is_excluded
    # Their slots went back: the next participant judges the same six pairs (one judgement each is the target).
    client, _ = prolific_arrive(study, address="10.42.0.2")
    _finish(client, walk_to_items(client, study), study, _good_side)
    coverage = study_coverage(study=study)
    assert (coverage.judged, coverage.free, coverage.beyond_target) == (6, 0, 0)
    assert _export_votes(study) == 6

    admin = Client()
    admin.force_login(make_user("organiser", staff=True))
    url = reverse("ratings:study_participant", args=[study.pk, careless.pk])
    page = admin.post(url, {"action": "reinstate"}, follow=True).content.decode()
    assert "6 of this participant&#x27;s items have been judged by others" in page
    careless.refresh_from_db()
    assert careless.is_excluded, "refused: the pairs would be judged twice against a target of one"
    coverage = study_coverage(study=study)
    assert coverage.judged == _export_votes(study) == 6 and coverage.beyond_target == 0

    admin.post(url, {"action": "reinstate_beyond_target"})
    careless.refresh_from_db()
    assert not careless.is_excluded
    coverage = study_coverage(study=study)
    exported = _export_votes(study)
    assert exported == 12 and coverage.judged + coverage.beyond_target == exported
    live = admin.get(reverse("ratings:study_live", args=[study.pk])).content.decode()
    assert "6 more judgements beyond the target" in live


def test_the_pay_csv_has_the_session_and_the_participant_key_of_the_exports_and_clean_numbers():
    study = make_pairwise_study(name="keys", clip_count=12, judgements=1, items_per_participant=50)
    client, _ = prolific_arrive(study, address="10.43.0.1")
    participant = _finish(client, walk_to_items(client, study), study, _good_side)
    full_client, _ = prolific_arrive(study, address="10.43.0.2")  # every slot taken: full at arrival
    rows = _pay_rows(study, "participant_id")
    row = rows[participant.platform_id]
    assert (row["session_id"], row["study_id"]) == ("b" * 24, "a" * 24)
    key = row["participant"]
    assert key == participant.user.username
    voters = {
        name for item in study_fense_items(study=study) for k, e in item.items() if k[:2] == "HC" for name in e[-2]
    }
    assert voters == {key}, "the pairwise export names the voter by the pay CSV's key"
    full_row = rows[participant_of(full_client).platform_id]
    assert full_row["status"] == "full" and full_row["minutes"] == "0.0"
    assert all(not row["minutes"].startswith("-") for row in rows.values())

    thumbs = thumbs_study(name="keys-thumbs")
    thumbs_client, _ = prolific_arrive(thumbs, address="10.43.0.3")
    rater = walk_to_items(thumbs_client, thumbs)
    for item in share_items(rater):
        assert item_answer_post(thumbs_client, item, precision=1).status_code == 302
    thumbs_client.get(reverse("study:items", kwargs={"slug": thumbs.slug}))
    thumbs_key = _pay_rows(thumbs, "participant_id")[rater.platform_id]["participant"]
    raters = {row["rater"] for row in csv.DictReader(io.StringIO(study_thumbs_csv(study=thumbs)))}
    assert raters == {thumbs_key}


def test_money_is_shown_to_the_cent():
    study = make_pairwise_study(name="money")
    pays = ("88.59", "88.60")
    rows = [ParticipantRow(participant=Participant(status="completed"), hourly_pay=Decimal(pay)) for pay in pays]
    assert str(study_summary(rows=rows, study=study).median_hourly_pay) == "88.60"


def test_end_pages_tick_only_the_steps_passed_and_name_the_panel_plainly():
    study = make_pairwise_study(
        name="generic-end", platforms=["generic"], redirect_url="https://panel.example/done?c={code}"
    )
    client = Client(REMOTE_ADDR="10.44.0.1")
    client.get(arrival_url(study, pid="person-1"))
    client.post(reverse("study:entry", kwargs={"slug": study.slug}))
    client.post(reverse("study:consent", kwargs={"slug": study.slug}), {"decision": "decline"})
    page = client.get(reverse("study:end", kwargs={"slug": study.slug})).content.decode()
    assert study.no_consent_code in page
    assert "is-done" not in page, "a participant who declined consent passed no step"
    # What is kept is said as it is: the platform id and the choice (not "nothing").
    assert "Nothing of yours was kept" not in page
    assert "the id that the panel you came from gave you and this choice" in page and "you gave no answers" in page
    assert "taken back to the panel you came from" in page and "Any panel" not in page and "?pid=" not in page

    done, _ = prolific_arrive(study_ := make_pairwise_study(name="ticks"), address="10.44.0.2")
    participant = _finish(done, walk_to_items(done, study_), study_, _good_side)
    page = done.get(reverse("study:end", kwargs={"slug": study_.slug})).content.decode()
    steps = re.findall(r'<li class="([^"]*)"', page.split('class="study-steps"')[1].split("</ol>")[0])
    assert participant.status == "completed" and steps and set(steps) == {"is-done"}


# --- THumBS: check items look like every other item ----------------------------------------------------------


def _page_features(client: Client, item: AssignmentItem) -> dict:
    page = client.get(reverse("ratings:item", kwargs={"token": item.token})).content.decode()
    return {
        "captions": len(item.caption_order),
        "precision fields": len(re.findall(r'name="precision_\d+"', page)),
        "recall fields": len(re.findall(r'name="recall_\d+"', page)),
        "comment fields": len(re.findall(r'name="comment_\d+"', page)),
    }


def test_thumbs_check_items_show_as_many_captions_and_fields_as_the_others():
    study = thumbs_study(name="alike", clip_count=12, items_per_participant=6, attention_checks=3)
    for number in range(3):
        client, _ = prolific_arrive(study, address=f"10.45.0.{number}")
        participant = walk_to_items(client, study)
        items = share_items(participant)
        check_items = set(AttentionCheck.objects.filter(rater=participant.user).values_list("item_id", flat=True))
        assert len(check_items) == 3 and len(items) == 6
        features = {item.pk: _page_features(client, item) for item in items}
        # What the rater API gives for each item: the same keys, as many captions.
        code = campaign_rater_code(study.campaign.pk)
        api = {row["token"]: row for row in api_rows(client, "/api/assignment-items/", study=code)}
        assert set(api) == {item.token for item in items}
        for item in items:
            row = api[item.token]
            features[item.pk] |= {"api keys": tuple(sorted(row)), "api captions": len(row["captions"])}
        checked = [features[pk] for pk in check_items]
        unchecked = [value for pk, value in features.items() if pk not in check_items]
        print(f"participant {number}: check items {checked[0]}, other items {unchecked[0]}")
        assert all(value == unchecked[0] for value in checked + unchecked), features
        # The catch caption took a caption's place: the item has its clip's caption count, one of them foreign.
        for item in items:
            own = set(study.campaign.captions.filter(clip_id=item.clip_id).values_list("pk", flat=True))
            foreign = [caption for caption in item.caption_order if caption not in own]
            assert len(foreign) == (1 if item.pk in check_items else 0)
            assert len(item.caption_order) == len(own)
    assert PairwiseVote.objects.count() == 0


def test_an_mturk_study_pays_in_dollars_only():
    from ratings.services.study_policy import currency_error

    assert "MTurk pays in USD only" in currency_error(["mturk"], "GBP")
    assert currency_error(["mturk"], "usd") == ""
    assert currency_error(["prolific"], "GBP") == "" and currency_error(["generic"], "EUR") == ""
    # One reward is shown to everyone: MTurk among a study's platforms fixes the currency for all of them.
    assert "MTurk pays in USD only" in currency_error(["prolific", "mturk"], "GBP")
    assert currency_error(["prolific", "mturk"], "USD") == ""


def test_the_service_refuses_a_study_on_mturk_in_pounds_and_a_study_on_no_platform():
    with pytest.raises(StudySetupError, match="MTurk pays in USD only"):
        make_pairwise_study(name="two-in-pounds", platforms=["prolific", "mturk"], reward_currency="GBP")
    with pytest.raises(StudySetupError, match="at least one platform"):
        make_pairwise_study(name="no-platform", platforms=[])
    with pytest.raises(StudySetupError, match="unknown platform"):
        make_pairwise_study(name="odd-platform", platforms=["prolific", "preview"])
    study = make_pairwise_study(name="two-in-dollars", platforms=["mturk", "prolific"], reward_currency="USD")
    assert study.platforms == ["prolific", "mturk"], "stored in the pages' order"
