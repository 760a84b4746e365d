"""Platform actions against fakes that speak each wire format: a Prolific HTTP server on loopback (method, path,
auth header and JSON body checked) and botocore's Stubber for MTurk (the expected parameters asserted).

What is checked: the preview lists the actions the pay decisions call for (and nothing else); sending logs them;
a second send sends nothing twice; a platform refusal is shown with its message (never a 5xx); RETURNED on
Prolific frees the participant's slots at once."""

import io
import json
import threading
from datetime import timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from botocore.stub import Stubber
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ratings.models_platforms import PlatformAction
from ratings.models_study import Participant, StudySlot
from ratings.platforms import mturk
from ratings.platforms.actions import actions_plan, actions_send, plan_digest, prolific_link_set, prolific_sync
from ratings.services.study_exclusion import participant_exclude
from tests.ratings.study_data import (
    answer_share,
    arrival_url,
    headphone_fail,
    mturk_worker_id,
    participant_of,
    prolific_arrive,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)
from tests.ratings.study_data import pairwise_study as make_pairwise_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]
TOKEN = "test-token-123"
PROLIFIC_STUDY = "c" * 24


def _good_side(item) -> str:
    gold = item.pair.gold_choice
    if not gold:
        return "left"
    return "left" if (gold == "a") == item.a_on_left else "right"


class FakeProlific:
    """Prolific's API on loopback: answers (status, JSON) per (method, path); records every request."""

    def __init__(self):
        self.routes: dict[tuple[str, str], tuple[int, dict]] = {}
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append(
                    {"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                status, data = fake.routes.get((self.command, self.path), (404, {"error": {"detail": "Not found."}}))
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer  # noqa: N815 (http.server's names)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/api/v1/"

    def posts(self, path: str) -> list[dict]:
        return [r for r in self.requests if r["method"] == "POST" and r["path"] == path]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def prolific_api(monkeypatch):
    fake = FakeProlific()
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.url)
    yield fake
    fake.close()


def _admin(make_user) -> Client:
    client = Client()
    client.force_login(make_user("organiser", staff=True))
    return client


def _completed(study, number: int, pid: str):
    client, _ = prolific_arrive(study, pid, address=f"10.40.0.{number}")
    participant = walk_to_items(client, study)
    answer_share(client, participant, side_for=_good_side)
    client.get(reverse("study:items", kwargs={"slug": study.slug}))
    participant.refresh_from_db()
    assert participant.status == "completed"
    return participant


def _prolific_study_with_people():
    study = make_pairwise_study(name="platform-prolific", clip_count=12, judgements=3)
    pids = {name: f"{number:024x}" for number, name in enumerate(("good", "careless", "poor", "leaver"), start=1)}
    people = {name: _completed(study, n, pids[name]) for n, name in enumerate(("good", "careless", "poor"), start=1)}
    participant_exclude(
        participant=people["careless"], reasons=["failed 2 instructional checks"], codes=["instructional"]
    )
    participant_exclude(participant=people["poor"], reasons=["data quality"], codes=["admin_quality"])
    client, _ = prolific_arrive(study, pids["leaver"], address="10.40.0.9")
    people["leaver"] = walk_to_items(client, study)
    prolific_link_set(study=study, prolific_study_id=PROLIFIC_STUDY)
    return study, people


def _submissions(people, statuses):
    results = [
        {"id": f"{index:024x}"[::-1], "participant_id": people[name].platform_id, "status": statuses[name]}
        for index, name in enumerate(statuses, start=1)
    ]
    return 200, {"results": results, "_links": {"next": {"href": None}}}


def test_prolific_sync_preview_send_retry_and_refusal(prolific_api, make_user):
    study, people = _prolific_study_with_people()
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    statuses = {
        "good": "AWAITING REVIEW",
        "careless": "AWAITING REVIEW",
        "poor": "AWAITING REVIEW",
        "leaver": "RETURNED",
    }
    prolific_api.routes[("GET", f"/api/v1/studies/{PROLIFIC_STUDY}/submissions/")] = _submissions(people, statuses)
    held = StudySlot.objects.filter(participant=people["leaver"]).count()
    assert held > 0

    # Sync: RETURNED frees the leaver's slots at once, through the same service as the leave button.
    assert admin.post(url, {"action": "sync"}).status_code == 302
    request = prolific_api.requests[-1]
    assert (request["method"], request["auth"]) == ("GET", f"Token {TOKEN}")
    people["leaver"].refresh_from_db()
    assert (people["leaver"].status, people["leaver"].stage) == ("returned", "finished")
    assert StudySlot.objects.filter(participant=people["leaver"]).count() == 0

    # Preview: approve the good and the performance-excluded participant, reject the instructional failure only.
    planned = actions_plan(study=study, platform=study.platforms[0])
    by_pid = {action.participant_id: action for action in planned}
    assert {pid: a.action for pid, a in by_pid.items()} == {
        people["good"].platform_id: "approve",
        people["poor"].platform_id: "approve",
        people["careless"].platform_id: "reject",
    }
    assert all(action.sendable for action in planned)
    reject = by_pid[people["careless"].platform_id]
    assert reject.params["rejection_category"] == "FAILED_CHECK" and len(reject.params["message"]) >= 100
    page = admin.get(url).content.decode()
    assert page.count('class="planned-action"') == 3 and "Send 3 actions" in page

    sid = {name: s["id"] for name, s in zip(statuses, _submissions(people, statuses)[1]["results"], strict=True)}
    for name in ("good", "poor", "careless"):
        prolific_api.routes[("POST", f"/api/v1/submissions/{sid[name]}/transition/")] = (200, {"status": "APPROVED"})
    # The platform refuses the rejection (its 4xx): shown with its message, the others go through.
    prolific_api.routes[("POST", f"/api/v1/submissions/{sid['careless']}/transition/")] = (
        400,
        {"error": {"status": 400, "title": "Bad request", "detail": "Rejection message is too short."}},
    )
    response = admin.post(url, {"action": "send", "digest": plan_digest(planned)}, follow=True)
    assert response.status_code == 200
    assert "Prolific answered 400: Rejection message is too short." in response.content.decode()
    approve = prolific_api.posts(f"/api/v1/submissions/{sid['good']}/transition/")
    assert [r["body"] for r in approve] == [{"action": "APPROVE"}] and approve[0]["auth"] == f"Token {TOKEN}"
    sent_reject = prolific_api.posts(f"/api/v1/submissions/{sid['careless']}/transition/")
    assert sent_reject[0]["body"] == {
        "action": "REJECT", "message": reject.params["message"], "rejection_category": "FAILED_CHECK",
    }  # fmt: skip
    log = PlatformAction.objects.filter(study=study)
    assert log.filter(succeeded=True, action="approve").count() == 2
    failed = log.get(action="reject")
    assert (failed.succeeded, failed.response_status) == (False, 400) and "too short" in failed.error

    # Retry: only the refused rejection goes again; the approvals are done and never sent twice.
    prolific_api.routes[("POST", f"/api/v1/submissions/{sid['careless']}/transition/")] = (200, {"status": "REJECTED"})
    planned = actions_plan(study=study, platform=study.platforms[0])
    assert sum(action.sendable for action in planned) == 1
    assert admin.post(url, {"action": "send", "digest": plan_digest(planned)}).status_code == 302
    assert len(prolific_api.posts(f"/api/v1/submissions/{sid['good']}/transition/")) == 1
    assert len(prolific_api.posts(f"/api/v1/submissions/{sid['careless']}/transition/")) == 2
    before = len(prolific_api.requests)
    planned = actions_plan(study=study, platform=study.platforms[0])
    assert not any(action.sendable for action in planned)
    assert admin.post(url, {"action": "send", "digest": plan_digest(planned)}).status_code == 302
    assert len(prolific_api.requests) == before


def test_a_send_after_the_plan_changed_is_refused(prolific_api, make_user):
    study, people = _prolific_study_with_people()
    statuses = {"good": "AWAITING REVIEW"}
    prolific_api.routes[("GET", f"/api/v1/studies/{PROLIFIC_STUDY}/submissions/")] = _submissions(people, statuses)
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    stale = plan_digest(actions_plan(study=study, platform=study.platforms[0]))
    admin.post(url, {"action": "sync"})
    response = admin.post(url, {"action": "send", "digest": stale})
    assert response.status_code == 400 and "the plan changed since the preview" in response.content.decode()
    assert (
        not prolific_api.posts("/api/v1/submissions/bonus-payments/")
        and not PlatformAction.objects.filter(action="approve").exists()
    )


def test_prolific_bonuses_are_made_then_paid_once(prolific_api, make_user):
    study, people = _prolific_study_with_people()
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    good = people["good"].platform_id
    form = {"bonus_text": f"{good},1.50\n", "bonus_reason": "Careful listening"}
    preview = admin.post(url, {**form, "action": "preview_bonuses"})
    assert preview.status_code == 200 and "1.50" in preview.content.decode()
    prolific_api.routes[("POST", "/api/v1/submissions/bonus-payments/")] = (201, {"id": "bulk123", "amount": 150})
    prolific_api.routes[("POST", "/api/v1/bulk-bonus-payments/bulk123/pay/")] = (
        400,
        {"error": {"detail": "Insufficient funds in workspace."}},
    )
    planned = actions_plan(study=study, platform=study.platforms[0], **form)
    answer = admin.post(url, {**form, "action": "send", "digest": plan_digest(planned)}, follow=True)
    assert "Insufficient funds in workspace." in answer.content.decode()
    made = prolific_api.posts("/api/v1/submissions/bonus-payments/")
    assert [r["body"] for r in made] == [{"study_id": PROLIFIC_STUDY, "csv_bonuses": f"{good},1.50"}]
    # Retry after the refused payment: the batch already made is paid, not made again.
    prolific_api.routes[("POST", "/api/v1/bulk-bonus-payments/bulk123/pay/")] = (202, {})
    planned = actions_plan(study=study, platform=study.platforms[0], **form)
    admin.post(url, {**form, "action": "send", "digest": plan_digest(planned)})
    assert len(prolific_api.posts("/api/v1/submissions/bonus-payments/")) == 1
    assert len(prolific_api.posts("/api/v1/bulk-bonus-payments/bulk123/pay/")) == 2
    bonus = [a for a in actions_plan(study=study, platform=study.platforms[0], **form) if a.action == "bonus"]
    assert len(bonus) == 1 and bonus[0].done_at is not None


def test_prolific_pause_and_a_bad_bonus_line(prolific_api, make_user):
    study, _ = _prolific_study_with_people()
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    prolific_api.routes[("POST", f"/api/v1/studies/{PROLIFIC_STUDY}/transition/")] = (200, {"status": "PAUSED"})
    assert admin.post(url, {"action": "pause"}).status_code == 302
    assert prolific_api.posts(f"/api/v1/studies/{PROLIFIC_STUDY}/transition/")[0]["body"] == {"action": "PAUSE"}
    bad = admin.post(url, {"action": "preview_bonuses", "bonus_text": "nobody,1.00"})
    assert bad.status_code == 400 and "bonuses line 1: &#x27;nobody&#x27; is not a participant" in bad.content.decode()


def test_without_a_token_prolific_actions_say_so(monkeypatch, make_user):
    monkeypatch.delenv("PROLIFIC_API_TOKEN", raising=False)
    study = make_pairwise_study(name="platform-no-token")
    prolific_link_set(study=study, prolific_study_id=PROLIFIC_STUDY)
    response = _admin(make_user).post(reverse("ratings:study_platform", args=[study.pk]), {"action": "sync"})
    assert response.status_code == 400 and "PROLIFIC_API_TOKEN is not set" in response.content.decode()


# --- MTurk --------------------------------------------------------------------------------------------------


@pytest.fixture
def mturk_stub(monkeypatch):
    client = boto3.client("mturk", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    stubber = Stubber(client)
    monkeypatch.setattr(mturk, "mturk_client", lambda: client)
    with stubber:
        yield stubber


def _mturk_worker(study, number: int, assignment: str):
    client = Client(REMOTE_ADDR=f"10.41.0.{number}")
    params = {"workerId": mturk_worker_id(), "assignmentId": assignment, "hitId": "H" * 30}
    client.get(arrival_url(study, **params, turkSubmitTo="https://workersandbox.mturk.com"))
    participant = walk_to_items(client, study)
    answer_share(client, participant, side_for=_good_side)
    client.get(reverse("study:items", kwargs={"slug": study.slug}))
    return participant_of(client)


def test_mturk_approve_reject_bonus_once(mturk_stub, make_user):
    study = make_pairwise_study(
        name="platform-mturk", platforms=["mturk"], reward_currency="USD", questionnaire=[], clip_count=12, judgements=3
    )
    good, careless = _mturk_worker(study, 1, "A" * 30), _mturk_worker(study, 2, "B" * 30)
    participant_exclude(participant=careless, reasons=["failed 2 instructional checks"], codes=["instructional"])
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    form = {"bonus_text": f"{good.platform_id},0.75", "bonus_reason": "Thanks for careful work"}
    planned = actions_plan(study=study, platform=study.platforms[0], **form)
    assert [(a.action, a.target_id) for a in planned] == [
        ("approve", "A" * 30),
        ("reject", "B" * 30),
        ("bonus", good.platform_id),
    ]
    bonus_token = planned[2].key
    mturk_stub.add_response(
        "approve_assignment", {}, {"AssignmentId": "A" * 30, "RequesterFeedback": "Thank you for taking part."}
    )
    mturk_stub.add_client_error(
        "reject_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted",
        http_status_code=400,
        expected_params={"AssignmentId": "B" * 30, "RequesterFeedback": planned[1].params["RequesterFeedback"]},
    )
    mturk_stub.add_response(
        "send_bonus",
        {},
        {
            "WorkerId": good.platform_id, "BonusAmount": "0.75", "AssignmentId": "A" * 30,
            "Reason": "Thanks for careful work", "UniqueRequestToken": bonus_token,
        },
    )  # fmt: skip
    page = admin.post(url, {**form, "action": "send", "digest": plan_digest(planned)}, follow=True)
    assert page.status_code == 200
    assert "MTurk refused reject_assignment: This operation can be called with a status of: Submitted" in (
        page.content.decode()
    )
    mturk_stub.assert_no_pending_responses()
    # Retry: only the refused rejection is sent again.
    mturk_stub.add_response(
        "reject_assignment", {}, {"AssignmentId": "B" * 30, "RequesterFeedback": planned[1].params["RequesterFeedback"]}
    )
    planned = actions_plan(study=study, platform=study.platforms[0], **form)
    assert [a.action for a in planned if a.sendable] == ["reject"]
    admin.post(url, {**form, "action": "send", "digest": plan_digest(planned)})
    mturk_stub.assert_no_pending_responses()
    assert PlatformAction.objects.filter(study=study, succeeded=True).count() == 3


def test_mturk_hit_is_previewed_then_created_once(mturk_stub, make_user, settings):
    settings.ALLOWED_HOSTS = ["eval.example.org"]
    study = make_pairwise_study(name="platform-hit", platforms=["mturk"], reward_currency="USD")
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    form = {
        "title": "Rate sound descriptions", "description": "Listen and choose", "keywords": "audio",
        "reward": "2.50", "max_assignments": "20", "duration_minutes": "60", "lifetime_hours": "48",
        "auto_approval_days": "3", "approval_rate_min": "95", "locales": "US GB",
        "excluded_qualification_id": "3EARLIERQUALIFICATION0000000",
    }  # fmt: skip
    secure = {"secure": True, "HTTP_HOST": "eval.example.org"}
    preview = admin.post(url, {**form, "action": "hit_preview"}, **secure)
    assert preview.status_code == 200 and "ExternalQuestion" in preview.content.decode()
    arrival = f"https://eval.example.org/study/{study.slug}/"
    expected = {
        "Title": "Rate sound descriptions", "Description": "Listen and choose", "Keywords": "audio",
        "Reward": "2.50", "MaxAssignments": 20, "AssignmentDurationInSeconds": 3600,
        "LifetimeInSeconds": 48 * 3600, "AutoApprovalDelayInSeconds": 3 * 86400,
        "Question": mturk.external_question(arrival),
        "QualificationRequirements": [
            {"QualificationTypeId": "000000000000000000L0", "Comparator": "GreaterThanOrEqualTo",
             "IntegerValues": [95], "ActionsGuarded": "DiscoverPreviewAndAccept"},
            {"QualificationTypeId": "00000000000000000071", "Comparator": "In",
             "LocaleValues": [{"Country": "US"}, {"Country": "GB"}], "ActionsGuarded": "DiscoverPreviewAndAccept"},
            {"QualificationTypeId": "3EARLIERQUALIFICATION0000000", "Comparator": "DoesNotExist",
             "ActionsGuarded": "DiscoverPreviewAndAccept"},
        ],
        "UniqueRequestToken": f"mturk:create_hit:{study.pk}",
    }  # fmt: skip
    assert f"<ExternalURL>{arrival}</ExternalURL>" in expected["Question"]
    mturk_stub.add_response(
        "create_hit", {"HIT": {"HITId": "HIT" + "1" * 27, "HITTypeId": "TYPE" + "2" * 26}}, expected
    )
    assert admin.post(url, {**form, "action": "hit_create"}, **secure).status_code == 302
    mturk_stub.assert_no_pending_responses()
    again = admin.post(url, {**form, "action": "hit_create"}, **secure)
    assert again.status_code == 400 and "made once" in again.content.decode()


def test_prolific_screen_outs_go_as_one_bulk_with_the_payment(prolific_api, make_user):
    study = make_pairwise_study(
        name="platform-screen", clip_count=12, judgements=3, screens="antiphase", screen_attempts=1
    )
    prolific_link_set(study=study, prolific_study_id=PROLIFIC_STUDY)
    screened = []
    for number in (1, 2):
        client, _ = prolific_arrive(study, f"{number:024x}", address=f"10.42.0.{number}")
        slug = study.slug
        client.post(reverse("study:entry", kwargs={"slug": slug}))
        client.post(reverse("study:consent", kwargs={"slug": slug}), {"decision": "agree"})
        client.post(reverse("study:questionnaire", kwargs={"slug": slug}), {"age_band": "25-34"})
        client.get(reverse("study:headphones", kwargs={"slug": slug}))
        headphone_fail(participant_of(client).user.headphone_checks.get())
        client.get(reverse("study:headphones", kwargs={"slug": slug}))
        screened.append(participant_of(client))
    assert [p.status for p in screened] == [Participant.Status.SCREENED_OUT] * 2
    people = {"one": screened[0], "two": screened[1]}
    statuses = {"one": "AWAITING REVIEW", "two": "AWAITING REVIEW"}
    prolific_api.routes[("GET", f"/api/v1/studies/{PROLIFIC_STUDY}/submissions/")] = _submissions(people, statuses)
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    admin.post(url, {"action": "sync"})
    without_pay = actions_plan(study=study, platform=study.platforms[0])
    assert [a.action for a in without_pay] == ["screen_out", "screen_out"]
    assert all("enter the screen-out payment" in a.blocked for a in without_pay)
    planned = actions_plan(study=study, platform=study.platforms[0], screen_out_pay=Decimal("0.50"))
    assert all(a.sendable for a in planned)
    path = f"/api/v1/submissions/bulk-screen-out/{PROLIFIC_STUDY}/"
    prolific_api.routes[("POST", path)] = (202, {})
    form = {"screen_out_pay": "0.50", "action": "send", "digest": plan_digest(planned)}
    assert admin.post(url, form).status_code == 302
    ids = [s["id"] for s in _submissions(people, statuses)[1]["results"]]
    assert [r["body"] for r in prolific_api.posts(path)] == [{"submission_ids": ids, "bonus_per_submission": 0.5}]
    again = plan_digest(actions_plan(study=study, platform=study.platforms[0], screen_out_pay=Decimal("0.50")))
    assert admin.post(url, {**form, "digest": again}).status_code == 302
    assert len(prolific_api.posts(path)) == 1  # done: never screened out twice


def test_admission_control_pauses_and_starts_again_at_sync(prolific_api, make_user):
    study, people = _prolific_study_with_people()
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    route = ("GET", f"/api/v1/studies/{PROLIFIC_STUDY}/submissions/")
    transition = f"/api/v1/studies/{PROLIFIC_STUDY}/transition/"
    prolific_api.routes[("POST", transition)] = (200, {"status": "PAUSED"})
    prolific_api.routes[route] = _submissions(people, {"good": "AWAITING REVIEW", "leaver": "ACTIVE"})
    # One participant in progress (the leaver): a limit of 2 leaves the study running, 1 pauses it.
    assert admin.post(url, {"action": "limit", "active_limit": "2"}).status_code == 302
    assert not prolific_api.posts(transition)
    assert admin.post(url, {"action": "limit", "active_limit": "1"}).status_code == 302
    assert [r["body"] for r in prolific_api.posts(transition)] == [{"action": "PAUSE"}]
    admin.post(url, {"action": "sync"})  # still one in progress: nothing more
    assert len(prolific_api.posts(transition)) == 1
    prolific_api.routes[route] = _submissions(people, {"good": "AWAITING REVIEW", "leaver": "RETURNED"})
    admin.post(url, {"action": "sync"})
    assert [r["body"] for r in prolific_api.posts(transition)] == [{"action": "PAUSE"}, {"action": "START"}]


def test_mturk_qualification_for_earlier_workers(mturk_stub, make_user):
    study = make_pairwise_study(
        name="platform-qual", platforms=["mturk"], reward_currency="USD", questionnaire=[], clip_count=12, judgements=3
    )
    worker = _mturk_worker(study, 3, "D" * 30)
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    mturk_stub.add_response(
        "create_qualification_type",
        {"QualificationType": {"QualificationTypeId": "3QUAL" + "0" * 25}},
        {
            "Name": f"Took part in platform-qual ({study.slug[:8]})",
            "Description": "Workers who took part in this study: later studies keep them out.",
            "QualificationTypeStatus": "Active",
        },
    )
    assert admin.post(url, {"action": "create_qualification"}).status_code == 302
    planned = [a for a in actions_plan(study=study, platform=study.platforms[0]) if a.action == "qualify"]
    assert [a.target_id for a in planned] == [worker.platform_id]
    mturk_stub.add_response(
        "approve_assignment", {}, {"AssignmentId": "D" * 30, "RequesterFeedback": "Thank you for taking part."}
    )
    mturk_stub.add_response(
        "associate_qualification_with_worker",
        {},
        {
            "QualificationTypeId": "3QUAL" + "0" * 25,
            "WorkerId": worker.platform_id,
            "IntegerValue": 1,
            "SendNotification": False,
        },
    )
    admin.post(url, {"action": "send", "digest": plan_digest(actions_plan(study=study, platform=study.platforms[0]))})
    mturk_stub.assert_no_pending_responses()
    assert not any(a.sendable for a in actions_plan(study=study, platform=study.platforms[0]))


def test_the_sync_command_frees_returned_slots_and_names_refusals(prolific_api):
    study, people = _prolific_study_with_people()
    route = ("GET", f"/api/v1/studies/{PROLIFIC_STUDY}/submissions/")
    prolific_api.routes[route] = _submissions(people, {"leaver": "TIMED-OUT"})
    out = io.StringIO()
    call_command("sync_platforms", stdout=out)
    assert out.getvalue().strip() == "platform-prolific: 1 submissions, 1 freed"
    people["leaver"].refresh_from_db()
    assert people["leaver"].status == "timed_out" and not StudySlot.objects.filter(participant=people["leaver"])
    prolific_api.routes[route] = (403, {"error": {"detail": "Invalid token."}})
    with pytest.raises(CommandError, match="platform-prolific: Prolific answered 403: Invalid token."):
        call_command("sync_platforms", "--campaign", "platform-prolific")


def test_an_action_another_send_is_sending_is_not_sent_again(prolific_api):
    study, people = _prolific_study_with_people()
    statuses = {"good": "AWAITING REVIEW"}
    prolific_api.routes[("GET", f"/api/v1/studies/{PROLIFIC_STUDY}/submissions/")] = _submissions(people, statuses)
    prolific_sync(study=study)
    good = people["good"].platform_id
    (approve,) = [
        action for action in actions_plan(study=study, platform=study.platforms[0]) if action.participant_id == good
    ]
    path = f"/api/v1/submissions/{approve.target_id}/transition/"
    prolific_api.routes[("POST", path)] = (200, {"status": "APPROVED"})
    # Another send claimed it (pending) and has not recorded the answer: this send skips it.
    claim = PlatformAction.objects.create(
        study=study, platform="prolific", action="approve", target_id=approve.target_id, idempotency_key=approve.key,
        pending=True,
    )  # fmt: skip
    (blocked,) = [
        action for action in actions_plan(study=study, platform=study.platforms[0]) if action.participant_id == good
    ]
    assert "being sent since" in blocked.blocked
    report = actions_send(study=study, planned=[approve])
    assert (report.sent, len(report.skipped)) == ([], 1) and not prolific_api.posts(path)
    # A claim left by a send that died is released after a while, marked failed with what to check; then it goes.
    PlatformAction.objects.filter(pk=claim.pk).update(created_at=timezone.now() - timedelta(minutes=16))
    report = actions_send(study=study, planned=actions_plan(study=study, platform=study.platforms[0]))
    assert [entry.succeeded for entry in report.sent] == [True] and len(prolific_api.posts(path)) == 1
    claim.refresh_from_db()
    assert not claim.pending and "check on the platform" in claim.error


def test_mturk_sync_rejects_a_worker_who_submitted_a_hit_they_were_asked_to_return(mturk_stub, make_user):
    study = make_pairwise_study(
        name="platform-msync", platforms=["mturk"], reward_currency="USD", questionnaire=[], clip_count=12, judgements=3
    )
    done = _mturk_worker(study, 4, "E" * 30)
    decliner = Client(REMOTE_ADDR="10.41.0.5")
    params = {"workerId": mturk_worker_id(), "assignmentId": "F" * 30, "hitId": "H" * 30}
    decliner.get(arrival_url(study, **params, turkSubmitTo="https://workersandbox.mturk.com"))
    decliner.post(reverse("study:entry", kwargs={"slug": study.slug}))
    decliner.post(reverse("study:consent", kwargs={"slug": study.slug}), {"decision": "decline"})
    assert participant_of(decliner).status == "no_consent"
    assert [a.action for a in actions_plan(study=study, platform=study.platforms[0])] == [
        "approve"
    ]  # not synced: the decliner is not planned
    mturk_stub.add_response(
        "list_assignments_for_hit",
        {
            "Assignments": [
                {"AssignmentId": "E" * 30, "AssignmentStatus": "Approved"},
                {"AssignmentId": "F" * 30, "AssignmentStatus": "Submitted"},
            ],
            "NumResults": 2,
        },
        {"HITId": "H" * 30, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]},
    )
    admin = _admin(make_user)
    url = reverse("ratings:study_platform", args=[study.pk])
    assert admin.post(url, {"action": "mturk_sync"}).status_code == 302
    mturk_stub.assert_no_pending_responses()
    planned = {a.target_id: a for a in actions_plan(study=study, platform=study.platforms[0])}
    assert planned["E" * 30].blocked == "MTurk says the assignment is Approved (last sync), not Submitted"
    reject = planned["F" * 30]
    assert (reject.action, reject.sendable) == ("reject", True)
    assert reject.params["RequesterFeedback"].startswith("No work was done (declined consent)")
    assert done.platform_id not in [a.participant_id for a in planned.values() if a.sendable]
    mturk_stub.add_client_error(
        "list_assignments_for_hit", service_error_code="RequestError", service_message="Hit does not exist."
    )
    refused = admin.post(url, {"action": "mturk_sync"})
    assert refused.status_code == 400 and "MTurk refused list_assignments_for_hit: Hit does not exist." in (
        refused.content.decode()
    )


def test_only_admins_reach_the_platform_page(prolific_api, make_user):
    study = make_pairwise_study(name="platform-roles")
    prolific_link_set(study=study, prolific_study_id=PROLIFIC_STUDY)
    url = reverse("ratings:study_platform", args=[study.pk])
    assert Client().post(url, {"action": "pause"}).status_code in (302, 403)
    rater = Client()
    rater.force_login(make_user("rater-1", "rater"))
    assert rater.post(url, {"action": "pause"}).status_code == 403
    assert not prolific_api.requests and not PlatformAction.objects.exists()
    assert _admin(make_user).get(url).status_code == 200
