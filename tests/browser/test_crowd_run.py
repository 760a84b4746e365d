"""A paid crowd run from the experimenter's pages only, end to end, in headless Chromium.

The experimenter signs in, creates one crowd-only campaign with the campaign form, publishes it as one study on
Prolific and MTurk at once with the publish form (a pound reward is refused: MTurk pays dollars), links the Prolific
study and sets its admission limit, previews and creates the MTurk HIT, all on the one platform page. 25
participants (12 from Prolific, 13 from MTurk) share the study's one set of slots and reach every ending: completed,
declined consent, screened out by the headphone screen, study full, returned with the leave button, timed out,
excluded by failed instructional checks (marked by the experimenter), excluded by failed gold checks (performance:
still paid), and one failed check below the threshold (kept). At least one participant of each ending uses a real
browser; the others answer over HTTP. The experimenter then syncs, previews and sends the approvals, rejections,
screen-outs and bonuses in each platform's section of the platform page.

The fakes speak the platforms' wire formats (Prolific's REST API v1 on loopback, MTurk's JSON protocol through
the real boto3 client on loopback) and record every request: the test checks they received exactly the requests
the policy table of docs/studies.md calls for, that each platform's pay CSV holds exactly its own participants, and
that the study pages, the pay CSVs, the benchmark export and the included-votes figure agree with the answers this
test gave (counted here, not read back from the code). The admission checks (pause and start on Prolific) are Celery
tasks: they run on a real worker process, on the broker the test settings use (Redis when REDIS_URL is set, else the
embedded one), and the test waits until the worker has run every check sent before it looks at what Prolific got.
"""

import csv
import inspect
import io
import json
import os
import re
import time
from datetime import timedelta

import pytest
from celery.signals import after_task_publish
from django.utils import timezone

from ratings.models import AssignmentItem, HeadphoneCheck
from ratings.models_study import Participant, Study
from ratings.selectors import campaign_included_votes
from ratings.services.study_shares import study_coverage
from tests.browser.crowd_run import (
    FakeMTurk,
    api_answer_some,
    api_arrive,
    api_complete,
    api_decline,
    api_leave,
    browser_arrive,
    browser_fail_screen,
    browser_participant,
    browser_rate_all,
    browser_rate_until_hc,
    browser_to_items,
    enter_on_focused,
    mturk_params,
    side_chooser,
)
from tests.ratings.campaign_data import clip_audio_attach, corpus_build
from tests.ratings.study_data import headphone_fail, participant_of, study_media  # noqa: F401 (a fixture)
from tests.ratings.test_platform_actions import FakeProlific

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("study_media"),
]

PROLIFIC_STUDY = "5f" * 12
HIT_ID = "3HITFAKE0000000000000000000001"
# 18 judgements come from the named endings (8 of them from Prolific, 10 from MTurk), 21 from seven fills of 3.
HC_PAIRS, GOLD_PAIRS, JUDGEMENTS, SHARE = 13, 4, 3, 3
SLOTS = HC_PAIRS * JUDGEMENTS
FILLS = 7  # 4 from Prolific, 3 from MTurk, taking turns
TOKEN = "e2e-token"


@pytest.fixture
def platforms(monkeypatch, settings, media_root):
    prolific = FakeProlific()
    mturk = FakeMTurk()
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", prolific.url)
    monkeypatch.setenv("MTURK_ENDPOINT_URL", mturk.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
    settings.STUDY_END_REDIRECT_SECONDS = 1
    settings.STUDY_ARRIVALS_PER_ADDRESS = 100  # the browsers all come from 127.0.0.1
    # The HIT's ExternalQuestion must be https: the admin's requests say so through the trusted proxy header.
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    yield prolific, mturk
    prolific.close()
    mturk.close()


ADMISSION_TASK = "ratings.tasks.study_admission_apply"


class AdmissionChecks:
    """The admission checks sent to the worker during the run (recorded as they are published), and a wait until the
    worker has run them all (its log names each task it finished)."""

    def __init__(self, worker):
        self.worker = worker
        self.sent: list[str] = []
        after_task_publish.connect(self._published, weak=False)

    def _published(self, sender=None, headers=None, **_):
        if sender == ADMISSION_TASK:
            self.sent.append(headers["id"])

    def close(self) -> None:
        after_task_publish.disconnect(self._published)

    def settle(self, timeout: float = 120) -> None:
        """Return once the worker has run every check sent so far (a bound, not a pause: it returns as soon as the
        log shows them); a check that raised fails the test at once."""
        finished = re.compile(re.escape(ADMISSION_TASK) + r"\[([0-9a-f-]+)\] (succeeded|raised)")
        deadline = time.monotonic() + timeout
        while True:
            log = self.worker.log_path.read_text(errors="replace") if self.worker.log_path.exists() else ""
            outcome = dict(finished.findall(log))
            assert "raised" not in {outcome.get(task) for task in self.sent}, self.worker.log_tail()
            if all(task in outcome for task in self.sent):
                return
            assert self.worker.alive(), f"the worker exited:\n{self.worker.log_tail()}"
            assert time.monotonic() < deadline, f"checks not run after {timeout} s:\n{self.worker.log_tail()}"
            time.sleep(0.1)


@pytest.fixture
def admission_worker(request, platforms):
    """A Celery worker process (started after `platforms` set the fake APIs' addresses in the environment it
    inherits), on Redis when the test settings use it (REDIS_URL), else on the embedded broker."""
    factory = request.getfixturevalue("real_celery" if os.environ.get("REDIS_URL") else "embedded_celery")
    checks = AdmissionChecks(factory())
    yield checks
    checks.close()
    try:
        checks.settle(timeout=30)
    except AssertionError:  # the test failed already (with the worker's log): the factory stops the worker as usual
        return
    # Idle once every check ran: stopped at once (Celery's warm shutdown of an idle worker waits out a broker poll
    # and its pool, seconds for nothing), as the temporary worker of compute_metrics is.
    checks.worker.kill()


@pytest.fixture(autouse=True)
def _playwright_calls_without_module_scans():
    """Playwright's sync API records its caller's stack (inspect.stack) on every call. A frame of no file on disk
    (runpy's `<frozen runpy>` under `python -m pytest`, execnet's `<string>` in an xdist worker) makes inspect look
    through every loaded module for its file, on each call: about 11 ms a call with this test's ~1900 modules, a
    thousand calls. Naming those frames' module once makes each call cheap; the stack Playwright records is the same."""
    for frame in inspect.stack(0):
        if not os.path.exists(frame.filename):
            inspect.modulesbyfile.setdefault(frame.filename, "__main__")
    yield


def _corpus():
    dataset, clips, _ = corpus_build(name="e2e-sounds", clip_count=20)
    for clip in clips:
        # Each browser participant hears every clip of its share to the end (the listening rule), two dozen clips in
        # all: short clips keep that real without the run waiting for it.
        clip_audio_attach(clip, seconds=0.4)
    return dataset


def _campaign_create(page, base: str, name: str, dataset) -> None:
    page.goto(f"{base}/ratings/staff/campaigns/new/")
    page.fill("#id_name", name)
    page.fill("#id_title", "Which description fits the sound?")
    page.select_option("#id_dataset", label=dataset.name)
    page.select_option("#id_task_type", "pairwise")
    page.fill("#id_judgements_per_item", str(JUDGEMENTS))
    page.fill("#id_count_hc", str(HC_PAIRS))
    page.fill("#id_count_hi", str(GOLD_PAIRS))
    page.check("#id_gold_from_hi")
    page.check("#id_crowd_only")
    with page.expect_navigation():
        page.click("#campaign-form button[type=submit]")
    assert "/ratings/staff/campaigns/" in page.url and not page.url.endswith("/new/"), page.inner_text("main")


def _publish(page) -> int:
    """Publish on both platforms; a pound reward is refused (MTurk pays in dollars), then dollars are set."""
    with page.expect_navigation():
        page.click("text=Publish as a crowd study")
    page.check("#platforms input[value=prolific]")
    page.check("#platforms input[value=mturk]")
    page.fill("#id_description", "Listen to short sounds and pick the description that fits each one better.")
    page.fill("#id_estimated_minutes", "10")
    page.fill("#id_reward", "1.50")
    page.fill("#id_reward_currency", "GBP")
    page.fill("#id_questionnaire_text", "")
    page.select_option("#id_screens", "antiphase")
    page.fill("#id_screen_attempts", "1")
    page.fill("#id_items_per_participant", str(SHARE))
    page.fill("#id_attention_checks", "2")
    page.fill("#id_time_limit_minutes", "30")
    page.fill("#id_exclude_failed_checks", "2")
    page.uncheck("#id_exclude_same_answer")
    with page.expect_navigation():
        page.click("form.study-settings button[type=submit]")
    # MTurk pays in dollars: a pound reward would promise its workers what the HIT does not pay.
    assert "MTurk pays in USD only" in page.inner_text("form.study-settings")
    page.fill("#id_reward_currency", "USD")
    with page.expect_navigation():
        page.click("form.study-settings button[type=submit]")
    assert "/ratings/staff/studies/" in page.url, page.inner_text("main")
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def _platform_post(page, button: str, section: str = "") -> None:
    """Press a button of the platform page (`section`: the platform's planned actions, whose buttons repeat)."""
    scope = f"#planned-{section} " if section else ""
    with page.expect_navigation():
        page.click(f"{scope}button[name=action][value={button}]")


def _exclude_instructional(page, base: str, participant: Participant) -> None:
    page.goto(f"{base}/ratings/staff/studies/{participant.study_id}/participants/{participant.pk}/")
    page.fill("#reason", "failed 2 instructional checks")
    page.select_option("#rule", "instructional")
    with page.expect_navigation():
        page.click("button[name=action][value=exclude]")


def _counts(page, base: str, study_id: int) -> dict:
    page.goto(f"{base}/ratings/staff/studies/{study_id}/")
    names = page.eval_on_selector_all("[data-count]", "nodes => nodes.map(n => [n.dataset.count, n.textContent])")
    return {name: int(text) for name, text in names}


def _pay_rows(page, base: str, study_id: int, platform: str) -> list[dict]:
    answer = page.request.get(f"{base}/ratings/staff/studies/{study_id}/pay.csv?platform={platform}")
    assert answer.ok
    return list(csv.DictReader(io.StringIO(answer.text())))


def _export_votes(page, base: str, study_id: int) -> int:
    answer = page.request.get(f"{base}/ratings/staff/studies/{study_id}/export/")
    assert answer.ok, answer.text()[:300]
    items = json.loads(answer.text())
    clips = items.values() if isinstance(items, dict) else items
    return sum(len(entry[4]) for clip in clips for split, entry in clip.items() if split.startswith(("HC", "HI")))


def _time_out(participant: Participant) -> None:
    """The participant's time limit has passed (their arrival and reservation moved back)."""
    past = timezone.now() - timedelta(minutes=31)
    Participant.objects.filter(pk=participant.pk).update(created_at=past, reserved_until=past)


def _answered(participant: Participant) -> int:
    """HC items the participant answered (what counts towards coverage), read from their items."""
    return AssignmentItem.objects.filter(
        assignment__campaign=participant.study.campaign,
        assignment__rater=participant.user,
        completed_at__isnull=False,
        pair__gold_choice="",
    ).count()


def _fresh(client) -> Participant:
    participant = participant_of(client)
    participant.refresh_from_db()
    return participant


def _api_fail_screen(client, study, participant: Participant) -> None:
    slug = study.slug
    assert client.post(f"/study/{slug}/").status_code == 302
    assert client.post(f"/study/{slug}/consent/", {"decision": "agree"}).status_code == 302
    assert client.get(f"/study/{slug}/headphones/").status_code == 200
    headphone_fail(HeadphoneCheck.objects.get(rater=participant.user, completed_at__isnull=True))
    assert client.get(f"/study/{slug}/headphones/").status_code == 302


def _api_leave_at_consent(client, study) -> None:
    assert client.post(f"/study/{study.slug}/").status_code == 302
    api_leave(client, study)


def test_a_paid_crowd_run_from_pages_only(
    browser, live_server, live_server_origin_trusted, page_for, make_user, platforms, admission_worker, artifacts
):
    prolific, mturk = platforms
    checks = admission_worker
    base = live_server.url  # trusted for CSRF: the https-marked admin requests come from the http live server
    dataset = _corpus()
    admin = make_user("experimenter", staff=True)
    page = page_for(admin)

    # --- The experimenter creates one campaign and publishes it on both platforms ------------------------------
    _campaign_create(page, base, "e2e-crowd", dataset)
    study_id = _publish(page)
    study = Study.objects.get(pk=study_id)
    assert study.platforms == ["prolific", "mturk"] and study.reward_currency == "USD"
    assert study.slots.count() == SLOTS, "one set of slots for both platforms"
    page.goto(f"{base}/ratings/staff/studies/{study_id}/")
    entry = f"{base}/study/{study.slug}/"
    assert page.input_value("#study-link-prolific") == (
        entry + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert page.input_value("#study-link-mturk") == entry, "MTurk appends its own parameters"

    page.goto(f"{base}/ratings/staff/studies/{study_id}/platform/")
    page.fill("#id_prolific_study_id", PROLIFIC_STUDY)
    _platform_post(page, "link")
    page.fill("#id_active_limit", "2")
    _platform_post(page, "limit")
    assert "0 participants in progress, limit 2: nothing to send" in page.inner_text("#admission-preview")
    transition = f"/api/v1/studies/{PROLIFIC_STUDY}/transition/"
    prolific.routes[("POST", transition)] = (200, {"id": PROLIFIC_STUDY, "status": "PAUSED"})

    mturk.answers["CreateHIT"] = {"HIT": {"HITId": HIT_ID, "HITTypeId": "3TYPEFAKE000000000000000000001"}}
    page.context.set_extra_http_headers({"X-Forwarded-Proto": "https"})
    page.fill("#id_description", "Pick the description that fits each sound better.")
    page.fill("#id_reward", "1.50")
    page.fill("#id_max_assignments", "13")
    page.fill("#id_duration_minutes", "30")
    page.fill("#id_lifetime_hours", "24")
    _platform_post(page, "hit_preview")
    assert "ExternalQuestion" in page.inner_text(".hit-preview") and not mturk.calls, "a preview sends nothing"
    _platform_post(page, "hit_create")
    page.context.set_extra_http_headers({})
    assert f"HIT {HIT_ID} created" in page.inner_text("main")
    [hit] = mturk.of("CreateHIT")
    assert (hit["Reward"], hit["MaxAssignments"], hit["AssignmentDurationInSeconds"]) == ("1.50", 13, 1800)
    assert "<ExternalURL>https://" in hit["Question"] and f"/study/{study.slug}/" in hit["Question"]
    assert page.locator("#prolific-link").count() == 1, "the Prolific section beside the HIT's"

    people: dict[str, Participant] = {}
    judged = 0  # HC answers that count, tallied here from what each participant was made to do
    address = iter(f"10.77.{n // 200}.{n % 200 + 1}" for n in range(1000))

    def pid(n: int) -> str:
        return f"{n:024x}"

    def pparams(n: int) -> dict:
        return {"PROLIFIC_PID": pid(n), "STUDY_ID": PROLIFIC_STUDY, "SESSION_ID": f"{n + 500:024x}"}

    def mparams(n: int) -> dict:
        return mturk_params(f"AWORKER{n:06d}", f"3ASSIGN{n:023d}", HIT_ID)

    def browsed(name: str, context, page_) -> None:
        people[name] = browser_participant(page_)
        context.close()

    # --- Prolific: the endings ----------------------------------------------------------------------------------
    client, _ = api_arrive(study, pparams(1), next(address))
    people["p_perf"] = api_complete(client, study, wrong_golds=2)  # both checks wrong: excluded, paid

    context, pp, _ = browser_arrive(browser, live_server, study, pparams(2))
    assert "1.50 USD" in pp.inner_text("main"), "the study's one reward, in the currency MTurk pays"
    enter_on_focused(pp, "#start-form button")
    with pp.expect_navigation():
        pp.click("button[value=decline]")
    assert pp.locator("#end").get_attribute("data-status") == "no_consent"
    assert pp.inner_text("#completion-code") == study.no_consent_code, "Prolific takes the no-consent code"
    browsed("p_declined", context, pp)

    context, pp, _ = browser_arrive(browser, live_server, study, pparams(3))
    enter_on_focused(pp, "#start-form button")
    enter_on_focused(pp, "button[value=agree]")
    assert pp.url.endswith("/headphones/")
    browser_fail_screen(pp, browser_participant(pp))
    assert pp.locator("#end").get_attribute("data-status") == "screened_out"
    assert pp.inner_text("#completion-code") == study.screen_out_code
    browsed("p_screened", context, pp)

    timeout_context, timeout_page, _ = browser_arrive(browser, live_server, study, pparams(4))
    people["p_timeout"] = browser_to_items(timeout_page, study)
    browser_rate_until_hc(timeout_page)
    assert checks.sent, "arrivals and endings send admission checks to the worker"
    checks.settle()
    assert prolific.posts(transition) == [], "one participant in progress: under the limit"

    sent_before = len(checks.sent)
    context, pp, _ = browser_arrive(browser, live_server, study, pparams(5))
    assert len(checks.sent) > sent_before, "the arrival sent a check"
    checks.settle()
    assert [r["body"] for r in prolific.posts(transition)] == [{"action": "PAUSE"}], "two in progress: paused"
    people["p_returned"] = browser_to_items(pp, study)
    browser_rate_until_hc(pp)
    with pp.expect_navigation():
        pp.click("#study-leave-link")
    with pp.expect_navigation():
        pp.click("#leave-confirm")
    assert pp.locator("#end").get_attribute("data-status") == "returned"
    assert pp.locator("#completion-code").count() == 0
    context.close()
    checks.settle()
    assert [r["body"] for r in prolific.posts(transition)] == [{"action": "PAUSE"}, {"action": "START"}]

    judged += _answered(people["p_timeout"]) + _answered(people["p_returned"])
    _time_out(people["p_timeout"])
    timeout_page.reload()
    timeout_page.wait_for_url("**/end/")
    assert timeout_page.locator("#end").get_attribute("data-status") == "timed_out"
    browsed("p_timeout", timeout_context, timeout_page)

    context, pp, _ = browser_arrive(browser, live_server, study, pparams(6))
    browser_to_items(pp, study)
    browser_rate_all(pp, side_chooser(0))
    assert pp.inner_text("#completion-code") == study.completion_code
    assert pp.locator("#redirect").get_attribute("data-url") == (
        f"https://app.prolific.com/submissions/complete?cc={study.completion_code}"
    ), "a Prolific participant goes back to Prolific, not to MTurk's externalSubmit"
    browsed("p_instructional", context, pp)
    judged += SHARE

    client, _ = api_arrive(study, pparams(7), next(address))
    people["p_below"] = api_complete(client, study, wrong_golds=1)
    judged += SHARE

    # --- MTurk: the endings, in the same study --------------------------------------------------------------------
    context, pp, landed = browser_arrive(browser, live_server, study, mparams(1))
    browser_to_items(pp, study)
    browser_rate_all(pp, side_chooser(2))
    pp.wait_for_url(f"{'https://workersandbox.mturk.com'}/mturk/externalSubmit")
    assert f"assignmentId={mparams(1)['assignmentId']}" in landed[-1]
    browsed("m_perf", context, pp)

    client, _ = api_arrive(study, mparams(2), next(address))
    api_decline(client, study)
    people["m_declined"] = _fresh(client)
    client, participant = api_arrive(study, mparams(3), next(address))
    _api_fail_screen(client, study, participant)
    people["m_screened"] = _fresh(client)
    client, _ = api_arrive(study, mparams(4), next(address))
    _api_leave_at_consent(client, study)
    people["m_left_early"] = _fresh(client)
    client, _ = api_arrive(study, mparams(5), next(address))
    people["m_left_items"] = api_answer_some(client, study, 1)
    api_leave(client, study)
    judged += 1
    timeout_client, _ = api_arrive(study, mparams(6), next(address))
    people["m_timeout"] = api_answer_some(timeout_client, study, 0)
    _time_out(people["m_timeout"])
    timeout_client.get(f"/study/{study.slug}/items/")

    context, pp, landed = browser_arrive(browser, live_server, study, mparams(7))
    assert "1.50 USD" in pp.inner_text("main"), "the reward in the HIT's currency"
    browser_to_items(pp, study)
    browser_rate_all(pp, side_chooser(0))
    pp.wait_for_url("https://workersandbox.mturk.com/mturk/externalSubmit")
    browsed("m_done", context, pp)
    judged += SHARE
    context, pp, landed = browser_arrive(browser, live_server, study, mparams(8))
    browser_to_items(pp, study)
    browser_rate_all(pp, side_chooser(1))
    pp.wait_for_url("https://workersandbox.mturk.com/mturk/externalSubmit")
    browsed("m_below", context, pp)
    judged += SHARE
    client, _ = api_arrive(study, mparams(9), next(address))
    people["m_instructional"] = api_complete(client, study)
    judged += SHARE
    assert judged == 18, "the named endings' judgements: 8 from Prolific, 10 from MTurk"

    # --- Fills from both platforms, taking turns, until no slot is free ----------------------------------------------
    # One more fill than FILLS when the gold rule left a lone slot, or two (one per platform) at most.
    numbers = {"p": 8, "m": 10}
    turn = "p"
    while study_coverage(study=study).free and sum(numbers.values()) - 18 < FILLS + 2:
        n = numbers[turn]
        client, _ = api_arrive(study, pparams(n) if turn == "p" else mparams(n), next(address))
        people[f"{turn}_fill{n}"] = api_complete(client, study)
        judged += _answered(people[f"{turn}_fill{n}"])
        numbers[turn] += 1
        turn = "m" if turn == "p" else "p"
    assert judged == SLOTS, "the fills took every slot (the last share may be partial)"
    extra_fills = sum(numbers.values()) - 18 - FILLS
    assert extra_fills in (0, 1, 2), extra_fills

    context, pp, _ = browser_arrive(browser, live_server, study, pparams(numbers["p"]))
    assert pp.locator("#end").get_attribute("data-status") == "full"
    assert pp.inner_text("#completion-code") == study.full_code
    browsed("p_full", context, pp)
    client, _ = api_arrive(study, mparams(numbers["m"]), next(address))
    people["m_full"] = _fresh(client)
    checks.settle()
    assert len(prolific.posts(transition)) == 2, "never more than one in progress after the return"
    assert len(people) == 25 + extra_fills, len(people)
    assert sum(1 for name in people if name.startswith("p_")) == numbers["p"], "12 from Prolific (+ an extra fill)"
    assert sum(1 for name in people if name.startswith("m_")) == numbers["m"], "13 from MTurk (+ an extra fill)"
    assert extra_fills or numbers == {"p": 12, "m": 13}

    for participant in people.values():
        participant.refresh_from_db()
    assert {p.platform for name, p in people.items() if name.startswith("p_")} == {"prolific"}
    assert {p.platform for name, p in people.items() if name.startswith("m_")} == {"mturk"}
    expected_status = {
        "p_perf": "completed", "p_declined": "no_consent", "p_screened": "screened_out", "p_timeout": "timed_out",
        "p_returned": "returned", "p_instructional": "completed", "p_below": "completed", "p_full": "full",
        "m_perf": "completed", "m_declined": "no_consent", "m_screened": "screened_out", "m_left_early": "returned",
        "m_left_items": "returned", "m_timeout": "timed_out", "m_done": "completed", "m_below": "completed",
        "m_instructional": "completed", "m_full": "full",
    }  # fmt: skip
    expected_status.update({name: "completed" for name in people if "_fill" in name})
    assert {name: p.status for name, p in people.items()} == expected_status
    assert {name for name, p in people.items() if p.is_excluded} == {"p_perf", "m_perf"}, "below 2 failures: kept"
    assert people["p_perf"].exclusion_codes == ["gold_pair"] == people["m_perf"].exclusion_codes

    # --- The experimenter marks the instructional failures ---------------------------------------------------
    _exclude_instructional(page, base, people["p_instructional"])
    _exclude_instructional(page, base, people["m_instructional"])
    judged -= 2 * SHARE

    # --- Pages, pay CSVs, exports and figures agree with what happened ----------------------------------------
    counts = _counts(page, base, study_id)
    page.screenshot(path=str(artifacts / "crowd_run_study.png"), full_page=True)
    outcome = {}
    for participant in people.values():
        participant.refresh_from_db()
        kind = "excluded" if participant.is_excluded else participant.status
        outcome[kind] = outcome.get(kind, 0) + 1
    assert counts["arrivals"] == len(people)
    assert (counts["arrivals_prolific"], counts["arrivals_mturk"]) == (numbers["p"], numbers["m"])
    for kind in ("completed", "excluded", "screened_out", "no_consent", "timed_out", "returned", "full"):
        assert counts[kind] == outcome.get(kind, 0), (kind, counts, outcome)
    assert counts["judged"] == judged, counts
    assert campaign_included_votes(campaign=study.campaign).count() == judged
    assert _export_votes(page, base, study_id) == judged

    p_rows = {row["participant_id"]: row for row in _pay_rows(page, base, study_id, "prolific")}
    m_rows = {row["WorkerId"]: row for row in _pay_rows(page, base, study_id, "mturk")}
    assert set(p_rows) == {p.platform_id for name, p in people.items() if name.startswith("p_")}
    assert set(m_rows) == {p.platform_id for name, p in people.items() if name.startswith("m_")}
    assert {row["platform"] for row in p_rows.values()} == {"prolific"}
    p_actions = {
        "p_perf": "approve", "p_declined": "none", "p_screened": "screen-out", "p_timeout": "none",
        "p_returned": "none", "p_instructional": "reject", "p_below": "approve", "p_full": "screen-out",
    }  # fmt: skip
    p_actions.update({name: "approve" for name in people if name.startswith("p_fill")})
    assert {name: p_rows[people[name].platform_id]["action"] for name in p_actions} == p_actions
    m_actions = {
        "m_perf": "approve", "m_declined": "return", "m_screened": "return", "m_left_early": "return",
        "m_left_items": "return", "m_timeout": "return", "m_done": "approve", "m_below": "approve",
        "m_instructional": "reject", "m_full": "return",
    }  # fmt: skip
    m_actions.update({name: "approve" for name in people if name.startswith("m_fill")})
    assert {name: m_rows[people[name].platform_id]["action"] for name in m_actions} == m_actions
    assert {name for name in m_actions if m_rows[people[name].platform_id]["Approve"] == "x"} == {
        name for name, action in m_actions.items() if action == "approve"
    }
    rejected = {name for name in m_actions if m_rows[people[name].platform_id]["Reject"]}
    assert rejected == {"m_instructional", "m_declined", "m_screened", "m_full"}, "no work: rejected if submitted"

    # --- Prolific: sync, preview, send ---------------------------------------------------------------------------
    submission_status = {
        "p_declined": "RETURNED", "p_returned": "RETURNED", "p_timeout": "TIMED-OUT",
    }  # fmt: skip
    submissions = {
        name: {"id": f"{index:024x}"[::-1], "status": submission_status.get(name, "AWAITING REVIEW")}
        for index, name in enumerate(sorted(n for n in people if n.startswith("p_")), start=1)
    }
    results = [
        {"id": s["id"], "participant_id": people[name].platform_id, "status": s["status"]}
        for name, s in submissions.items()
    ]
    prolific.routes[("GET", f"/api/v1/studies/{PROLIFIC_STUDY}/submissions/")] = (
        200,
        {"results": results, "_links": {"next": {"href": None}}},
    )
    for s in submissions.values():
        prolific.routes[("POST", f"/api/v1/submissions/{s['id']}/transition/")] = (200, {"id": s["id"]})
    prolific.routes[("POST", "/api/v1/submissions/bonus-payments/")] = (201, {"id": "bulkbonus1"})
    prolific.routes[("POST", "/api/v1/bulk-bonus-payments/bulkbonus1/pay/")] = (200, {})
    prolific.routes[("POST", f"/api/v1/submissions/bulk-screen-out/{PROLIFIC_STUDY}/")] = (200, {})
    before, mturk_before = len(prolific.requests), len(mturk.calls)
    page.goto(f"{base}/ratings/staff/studies/{study_id}/platform/")
    _platform_post(page, "sync")
    checks.settle()  # the sync's endings send checks too: whatever they would send is counted below
    page.fill("#id_prolific_bonus_text", f"{people['p_below'].platform_id},0.50\n{people['p_fill8'].platform_id},0.75")
    page.fill("#id_prolific_bonus_reason", "Careful listening")
    page.fill("#id_prolific_screen_out_pay", "0.20")
    _platform_post(page, "preview_bonuses", "prolific")
    assert len(prolific.requests) == before + 1, "sync only: a preview sends nothing"
    planned_p = page.locator("#planned-prolific tr.planned-action").all_inner_texts()
    assert not any(people[n].platform_id in row for n in people if n.startswith("m_") for row in planned_p)
    page.screenshot(path=str(artifacts / "crowd_run_platform_preview.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(artifacts / "crowd_run_platform_preview_390.png"), full_page=True)
    page.set_viewport_size({"width": 1200, "height": 900})
    _platform_post(page, "send", "prolific")
    checks.settle()
    sent = prolific.requests[before + 1 :]
    assert len(mturk.calls) == mturk_before, "Prolific's send sends nothing to MTurk"
    approvals = sorted(
        r["path"] for r in sent if r["path"].endswith("/transition/") and r["body"] == {"action": "APPROVE"}
    )
    approved = ["p_below", "p_perf"] + [n for n in people if n.startswith("p_fill")]
    assert approvals == sorted(f"/api/v1/submissions/{submissions[n]['id']}/transition/" for n in approved)
    [reject] = [r for r in sent if (r["body"] or {}).get("action") == "REJECT"]
    assert reject["path"] == f"/api/v1/submissions/{submissions['p_instructional']['id']}/transition/"
    assert reject["body"]["rejection_category"] == "FAILED_CHECK" and len(reject["body"]["message"]) >= 100
    [screen_out] = [r for r in sent if "bulk-screen-out" in r["path"]]
    assert sorted(screen_out["body"]["submission_ids"]) == sorted(
        submissions[n]["id"] for n in ("p_screened", "p_full")
    )
    assert screen_out["body"]["bonus_per_submission"] == 0.2
    [bonus] = [r for r in sent if r["path"] == "/api/v1/submissions/bonus-payments/"]
    assert bonus["body"] == {
        "study_id": PROLIFIC_STUDY,
        "csv_bonuses": f"{people['p_below'].platform_id},0.50\n{people['p_fill8'].platform_id},0.75",
    }
    assert [r["path"] for r in sent if r["path"].endswith("/pay/")] == ["/api/v1/bulk-bonus-payments/bulkbonus1/pay/"]
    assert len(sent) == len(approved) + 1 + 1 + 2, [r["path"] for r in sent]
    assert {r["auth"] for r in prolific.requests} == {f"Token {TOKEN}"}
    # Sending again sends nothing: every action is done.
    _platform_post(page, "preview_bonuses", "prolific")
    assert page.locator("#planned-prolific button[name=action][value=send]").is_disabled()
    assert len(prolific.requests) == before + 1 + len(sent)
    rows = page.locator("#log tr.log-entry").all_inner_texts()
    assert sorted(r.split("\t")[2] for r in rows if "automatic" in r) == ["prolific pause", "prolific start"]

    # --- MTurk: sync, preview, send ------------------------------------------------------------------------------
    submitted = [n for n in people if n.startswith("m_") and people[n].status == "completed"] + ["m_declined"]
    mturk.answers["ListAssignmentsForHIT"] = {
        "Assignments": [
            {
                "AssignmentId": people[n].platform_data["assignmentId"],
                "WorkerId": people[n].platform_id,
                "HITId": HIT_ID,
                "AssignmentStatus": "Submitted",
            }
            for n in submitted
        ],
        "NumResults": len(submitted),
    }
    _platform_post(page, "mturk_sync")
    page.fill("#id_mturk_bonus_text", f"{people['m_done'].platform_id},1.00")
    page.fill("#id_mturk_bonus_reason", "Careful listening")
    _platform_post(page, "preview_bonuses", "mturk")
    calls_before, prolific_before = len(mturk.calls), len(prolific.requests)
    _platform_post(page, "send", "mturk")
    page.screenshot(path=str(artifacts / "crowd_run_mturk_sent.png"), full_page=True)
    sent = mturk.calls[calls_before:]
    assert len(prolific.requests) == prolific_before, "MTurk's send sends nothing to Prolific"
    approved = ["m_perf", "m_done", "m_below"] + [n for n in people if n.startswith("m_fill")]
    assert sorted(b["AssignmentId"] for op, b in sent if op == "ApproveAssignment") == sorted(
        people[n].platform_data["assignmentId"] for n in approved
    )
    rejects = {b["AssignmentId"]: b["RequesterFeedback"] for op, b in sent if op == "RejectAssignment"}
    assert set(rejects) == {people[n].platform_data["assignmentId"] for n in ("m_instructional", "m_declined")}
    assert "declined consent" in rejects[people["m_declined"].platform_data["assignmentId"]]
    [bonus] = [b for op, b in sent if op == "SendBonus"]
    assert (bonus["WorkerId"], bonus["BonusAmount"], bonus["Reason"]) == (
        people["m_done"].platform_id,
        "1.00",
        "Careful listening",
    )
    assert bonus["UniqueRequestToken"] and bonus["AssignmentId"] == people["m_done"].platform_data["assignmentId"]
    assert len(sent) == len(approved) + 2 + 1, [op for op, _ in sent]
    assert [op for op, _ in mturk.calls].count("CreateHIT") == 1
    assert page.locator("#planned-mturk button[name=action][value=send]").is_disabled(), "all sent"
    assert page.locator("#planned-prolific button[name=action][value=send]").is_disabled(), "nothing new"
