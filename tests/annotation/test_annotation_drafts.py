"""Editor drafts: every malformed payload is refused naming the field; saves are versioned (a stale save is a
409, never an overwrite); the automated checks."""

import pytest

from annotation.models import AnnotationTask
from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_checks import draft_checks, library_key
from annotation.services.annotation_drafts import DraftInvalidError, draft_validate
from annotation.services.annotation_tasks import tag_library_keys
from tests.annotation.workspace_data import api_client, draft_of, workspace_build

pytestmark = pytest.mark.django_db

GOOD = draft_of(("barking", ["dog"], ["loud"]), ("door slam", ["door"], ["suddenly"]), relations=[(0, 1, "before")])


@pytest.mark.parametrize(
    ("draft", "field"),
    [
        ([], "draft"),
        ({"events": {}}, "events"),
        ({"events": [{"id": "e1", "label": 3}]}, "events[0].label"),
        ({"events": [{"id": "", "label": "a"}]}, "events[0].id"),
        ({"events": [{"id": "e1", "label": "a"}, {"id": "e1", "label": "b"}]}, "events[1].id"),
        ({"events": [{"id": "e1", "label": "a", "sources": "dog"}]}, "events[0].sources"),
        ({"events": [{"id": "e1", "label": "a", "attributes": ["ok", None]}]}, "events[0].attributes[1]"),
        ({"events": [{"id": "e1", "label": "a", "onset": "1"}]}, "events[0].onset"),
        ({"events": [{"id": "e1", "label": "a", "onset": float("nan")}]}, "events[0].onset"),
        ({"events": [{"id": "e1", "label": "a", "onset": 2, "offset": 1}]}, "events[0].offset"),
        ({"events": [{"id": "e1", "label": "x" * 256}]}, "events[0].label"),
        ({"events": [{"id": "e1", "label": "a", "colour": "red"}]}, "events[0].colour"),
        ({"events": [], "extra": 1}, "extra"),
        (
            {"events": [{"id": "e1", "label": "a"}], "relations": [{"first": "e1", "second": "e9", "kind": "before"}]},
            "relations[0].second",
        ),
        (
            {
                "events": [{"id": "e1", "label": "a"}, {"id": "e2", "label": "b"}],
                "relations": [{"first": "e1", "second": "e2", "kind": "during"}],
            },
            "relations[0].kind",
        ),
        (
            {**GOOD, "relations": [*GOOD["relations"], {"first": "e2", "second": "e1", "kind": "before"}]},
            "relations[1]",
        ),
        ({**GOOD, "relations": [*GOOD["relations"], {"first": "e2", "second": "e1", "kind": "after"}]}, "relations[1]"),
        ({"events": [{"id": "e1", "label": "a"}], "note": 5}, "note"),
    ],
)
def test_malformed_drafts_name_the_field(draft, field):
    with pytest.raises(DraftInvalidError) as raised:
        draft_validate(draft)
    assert raised.value.field == field


def test_an_unfinished_draft_is_fine_to_save():
    draft = draft_validate({"events": [{"id": "e1", "label": ""}, {"id": "e2", "label": ""}]})
    assert [event["label"] for event in draft["events"]] == ["", ""]


def test_a_contradiction_is_refused_naming_the_relation_and_the_chain():
    draft = draft_of(
        ("a", [], []), ("b", [], []), ("c", [], []), relations=[(0, 1, "before"), (1, 2, "before"), (2, 0, "before")]
    )
    with pytest.raises(DraftInvalidError) as raised:
        draft_validate(draft)
    assert raised.value.field == "relations[2]"
    assert "contradiction: 'c' before 'a' contradicts 'a' before 'c' (implied by" in raised.value.message


def test_checks_errors_and_warnings():
    draft = draft_validate(
        draft_of(
            ("barking", ["dog"], ["Loud ", "yappy"]),
            (" Barking", [], []),
            ("", ["x"], []),
            ("rain", ["rain", "Rain"], []),
        )
    )
    library = {library_key(text) for text in ("loud", "quiet")}
    checks = {(check.level, check.code, check.field) for check in draft_checks(draft=draft, library=library)}
    assert checks == {
        ("error", "duplicate_event", "events[1].label"),
        ("error", "empty_event", "events[2].label"),
        ("warning", "free_attribute", "events[0].attributes[1]"),
        ("warning", "no_source_no_attribute", "events[1]"),
        ("warning", "no_attribute", "events[2].attributes"),
        ("warning", "no_attribute", "events[3].attributes"),
        ("warning", "duplicate_source", "events[3].sources[1]"),
    }
    assert draft_checks(draft=draft_validate({"events": []}), library=library)[0].code == "no_events"


def test_the_library_check_uses_the_shipped_tag_library():
    keys = tag_library_keys()
    assert {"loud", "high-pitched", "in the distance"} <= keys and len(keys) == 123


# --- Over the API ------------------------------------------------------------------------------------


@pytest.fixture
def task_and_client(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    return annotation_task_next(campaign=workspace.campaign, annotator=annotator), api_client(annotator), workspace


def test_draft_save_is_versioned_and_a_stale_save_is_refused(task_and_client):
    task, client, _ = task_and_client
    url = f"/api/annotation-tasks/{task.pk}/draft/"
    first = client.put(url, {"base_version": 0, "draft": GOOD}, format="json")
    assert first.status_code == 200 and first.json()["version"] == 1
    changed = {**GOOD, "note": "second edit"}
    assert client.put(url, {"base_version": 1, "draft": changed}, format="json").json()["version"] == 2
    # A second tab that loaded version 1 saves something else: refused, nothing overwritten.
    stale = client.put(url, {"base_version": 1, "draft": {**GOOD, "note": "stale tab"}}, format="json")
    assert stale.status_code == 409
    assert stale.json()["code"] == "stale_version" and stale.json()["current_version"] == 2
    assert AnnotationTask.objects.get(pk=task.pk).draft["note"] == "second edit"
    # The same save arriving twice (a retry after a lost answer) is not a conflict.
    retried = client.put(url, {"base_version": 1, "draft": changed}, format="json")
    assert retried.status_code == 200 and retried.json()["version"] == 2


def test_bad_draft_over_the_api_is_a_400_naming_the_field(task_and_client):
    task, client, _ = task_and_client
    url = f"/api/annotation-tasks/{task.pk}/draft/"
    response = client.put(
        url, {"base_version": 0, "draft": {"events": [{"id": "e1", "label": "a", "onset": -1}]}}, format="json"
    )
    assert response.status_code == 400
    assert list(response.json()) == ["events[0].onset"]
    assert client.put(url, {"draft": GOOD}, format="json").json() == {"base_version": ["This field is required."]}
    assert AnnotationTask.objects.get(pk=task.pk).draft_version == 0


def test_submit_blocks_on_errors_asks_to_confirm_warnings_and_locks_the_task(task_and_client):
    task, client, _ = task_and_client
    draft_url, submit_url = f"/api/annotation-tasks/{task.pk}/draft/", f"/api/annotation-tasks/{task.pk}/submit/"
    client.put(draft_url, {"base_version": 0, "draft": draft_of(("dog", [], []), ("dog", [], []))}, format="json")
    refused = client.post(submit_url, {"base_version": 1, "confirm_warnings": True}, format="json")
    assert refused.status_code == 400 and refused.json()["needs_confirmation"] is False
    assert "duplicate_event" in {check["code"] for check in refused.json()["checks"]}

    client.put(draft_url, {"base_version": 1, "draft": draft_of(("barking", ["dog"], ["yappy"]))}, format="json")
    warned = client.post(submit_url, {"base_version": 2}, format="json")
    assert warned.status_code == 400 and warned.json()["needs_confirmation"] is True
    assert client.post(submit_url, {"base_version": 1, "confirm_warnings": True}, format="json").status_code == 409
    submitted = client.post(submit_url, {"base_version": 2, "confirm_warnings": True}, format="json")
    assert submitted.status_code == 200 and submitted.json()["status"] == "submitted"
    task.refresh_from_db()
    assert task.annotation.status == "submitted" and task.annotation.campaign_id == task.campaign_id
    assert [e.label for e in task.annotation.events.all()] == ["barking"]
    locked = client.put(draft_url, {"base_version": 2, "draft": GOOD}, format="json")
    assert locked.status_code == 409 and locked.json()["code"] == "locked"


def test_checks_endpoint_checks_a_given_draft_without_saving(task_and_client):
    task, client, _ = task_and_client
    response = client.post(f"/api/annotation-tasks/{task.pk}/checks/", {"draft": draft_of(("", [], []))}, format="json")
    assert response.status_code == 200 and response.json()["can_submit"] is False
    assert AnnotationTask.objects.get(pk=task.pk).draft_version == 0


@pytest.mark.db_specific  # row locks (PostgreSQL) and immediate transactions (SQLite)
@pytest.mark.django_db(transaction=True)
def test_two_saves_from_the_same_version_at_the_same_moment_one_wins_one_is_refused(make_user):
    import threading

    from django.db import connection

    from annotation.services.annotation_drafts import DraftConflictError
    from annotation.services.annotation_tasks import task_draft_save

    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    barrier, outcomes = threading.Barrier(2), []

    def save(note: str) -> None:
        try:
            barrier.wait(timeout=20)
            task_draft_save(task=task, annotator=annotator, base_version=0, draft={**GOOD, "note": note})
            outcomes.append(("saved", note))
        except DraftConflictError as error:
            outcomes.append(("refused", error.current_version))
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(note,)) for note in ("tab one", "tab two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(kind for kind, _ in outcomes) == ["refused", "saved"]
    winner = next(note for kind, note in outcomes if kind == "saved")
    stored = AnnotationTask.objects.get(pk=task.pk)
    assert (stored.draft_version, stored.draft["note"]) == (1, winner)
