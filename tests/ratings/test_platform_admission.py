"""Prolific admission control on arrival and on each ending (not only at a sync): the study is paused when the
participants in progress reach the limit and started again below it, each request logged, never sent twice, and the
platform page previews what the rule would do now. Prolific is a loopback server speaking its REST API v1."""

import pytest
from django.test import Client
from django.urls import reverse

from ratings.models_platforms import PlatformAction
from ratings.platforms.actions import active_limit_set, admission_apply, prolific_link_set
from ratings.platforms.admission import admission_preview
from tests.ratings.study_data import (
    pairwise_study,
    participant_of,
    prolific_arrive,
    study_media,  # noqa: F401 (a fixture)
)
from tests.ratings.test_platform_actions import TOKEN, FakeProlific

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]
PROLIFIC_STUDY = "d" * 24
TRANSITION = f"/api/v1/studies/{PROLIFIC_STUDY}/transition/"


@pytest.fixture
def prolific_api(monkeypatch):
    fake = FakeProlific()
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.url)
    fake.routes[("POST", TRANSITION)] = (200, {"id": PROLIFIC_STUDY})
    yield fake
    fake.close()


def api_leave_post(client: Client, study) -> None:
    assert client.post(reverse("study:leave", kwargs={"slug": study.slug})).status_code == 302


def _actions(fake) -> list[str]:
    return [request["body"]["action"] for request in fake.posts(TRANSITION)]


def test_arrivals_pause_and_endings_start_again(prolific_api, django_capture_on_commit_callbacks):
    study = pairwise_study(name="admission", questionnaire=[])
    prolific_link_set(study=study, prolific_study_id=PROLIFIC_STUDY)
    active_limit_set(study=study, limit=2)
    clients = []
    for number in range(1, 4):
        with django_capture_on_commit_callbacks(execute=True):
            client, _ = prolific_arrive(study, f"{number:024x}", address=f"10.50.0.{number}")
        clients.append(client)
        expected = [] if number < 2 else ["PAUSE"]
        assert _actions(prolific_api) == expected, f"after arrival {number}"
    assert "3 participants in progress, limit 2: nothing to send" in admission_preview(study=study).describe()
    # One leaves: still 2 in progress, the study stays paused; a second leaves: started again.
    with django_capture_on_commit_callbacks(execute=True):
        api_leave_post(clients[0], study)
    assert _actions(prolific_api) == ["PAUSE"]
    with django_capture_on_commit_callbacks(execute=True):
        api_leave_post(clients[1], study)
    assert _actions(prolific_api) == ["PAUSE", "START"]
    assert participant_of(clients[1]).status == "returned"
    logged = PlatformAction.objects.filter(study=study).order_by("pk").values_list("action", "succeeded")
    assert list(logged) == [("pause", True), ("start", True)]


def test_a_check_repeated_sends_nothing_more_and_a_refusal_keeps_the_state(prolific_api):
    study = pairwise_study(name="admission-once", questionnaire=[])
    prolific_link_set(study=study, prolific_study_id=PROLIFIC_STUDY)
    active_limit_set(study=study, limit=1)
    prolific_arrive(study, "a" * 24, address="10.51.0.1")  # (no on-commit here: the check runs by hand)
    assert admission_preview(study=study).action == "PAUSE"
    assert "paused" in admission_apply(study=study)
    assert admission_apply(study=study) == "" and _actions(prolific_api) == ["PAUSE"], "idempotent"
    prolific_api.routes[("POST", TRANSITION)] = (400, {"error": {"detail": "Study is not active."}})
    participant = study.participants.get()
    participant.stage = "finished"
    participant.save()
    assert admission_apply(study=study) == "Prolific answered 400: Study is not active."
    assert admission_preview(study=study).action == "START", "a refused start is tried again at the next check"


def test_no_limit_or_another_platform_schedules_nothing(prolific_api, django_capture_on_commit_callbacks):
    study = pairwise_study(name="admission-off", questionnaire=[])
    prolific_link_set(study=study, prolific_study_id=PROLIFIC_STUDY)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        prolific_arrive(study, "b" * 24, address="10.52.0.1")
    assert callbacks == [] and prolific_api.requests == []
    assert admission_preview(study=study).describe() == "no limit set: Prolific is never paused for it"


def test_the_platform_page_previews_the_rule(prolific_api, make_user):
    study = pairwise_study(name="admission-page", questionnaire=[])
    prolific_link_set(study=study, prolific_study_id=PROLIFIC_STUDY)
    active_limit_set(study=study, limit=5)
    prolific_arrive(study, "c" * 24, address="10.53.0.1")
    admin = Client()
    admin.force_login(make_user("organiser", staff=True))
    page = admin.get(reverse("ratings:study_platform", kwargs={"study_id": study.pk})).content.decode()
    assert 'id="admission-preview"' in page
    assert "1 participant in progress, limit 5: nothing to send" in page
