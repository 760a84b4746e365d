"""Editor drafts: every malformed payload is refused naming the field; saves are versioned (a stale save is a
409, never an overwrite); the automated checks."""

import pytest

from annotation.models import AnnotationTask, AttributeTag
from annotation.selectors import attribute_vocabulary
from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_checks import draft_checks
from annotation.services.annotation_drafts import DraftInvalidError, draft_validate
from annotation.vocabulary import AttributeVocabulary
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
        ({"events": [{"id": "e1", "label": "a", "spans": [[2, 1]]}]}, "events[0].spans[0]"),
        ({"events": [{"id": "e1", "label": "a", "spans": [[1, 2], [3]]}]}, "events[0].spans[1]"),
        ({"events": [{"id": "e1", "label": "a", "spans": [[1, "2"]]}]}, "events[0].spans[0][1]"),
        ({"events": [{"id": "e1", "label": "a", "spans": [[-1, 2]]}]}, "events[0].spans[0][0]"),
        ({"events": [{"id": "e1", "label": "a", "spans": {"0": [1, 2]}}]}, "events[0].spans"),
        ({"events": [{"id": "e1", "label": "a", "spans": [[1, 2]], "onset": 1}]}, "events[0].spans"),
        ({"events": [{"id": "e1", "label": "a", "spans": [[0, 1]] * 101}]}, "events[0].spans"),
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
    library = AttributeVocabulary([(1, "loud", ""), (2, "quiet", "")])
    checks = {(check.level, check.code, check.field) for check in draft_checks(draft=draft, library=library)}
    assert checks == {
        ("error", "duplicate_event", "events[1].label"),
        ("error", "empty_event", "events[2].label"),
        ("warning", "free_attribute", "events[0].attributes[1]"),
        ("warning", "no_source_no_attribute", "events[1]"),
        ("warning", "no_attribute", "events[2].attributes"),
        ("warning", "free_source", "events[2].sources[0]"),  # "x" is no sound source of the list
        ("warning", "no_attribute", "events[3].attributes"),
        ("warning", "duplicate_source", "events[3].sources[1]"),
    }
    assert draft_checks(draft=draft_validate({"events": []}), library=library)[0].code == "no_events"


def test_the_library_check_uses_the_shipped_tag_library_with_its_templates_and_count_extension():
    library = attribute_vocabulary()
    tags = dict(AttributeTag.objects.values_list("text", "pk"))
    assert len(tags) == 123 + 5  # AudioCaps-F's library and the product's Count tags
    assert library.tag_of(" Loud ") == tags["loud"] and library.tag_of("In the  distance") == tags["in the distance"]
    # Placeholder tags are templates: "on a table" fills in "on a xxx"; "on a" alone is not a word filled in.
    assert library.tag_of("on a wooden table") == tags["on a xxx"]
    assert library.tag_of("against the wall") == tags["against xx"]
    assert library.tag_of("on a") is None and library.tag_of("on wood") is None
    counts = AttributeTag.objects.filter(category="Count")
    assert sorted(counts.values_list("text", flat=True)) == sorted(
        ["once", "twice", "three times", "several times", "many times"]
    )
    assert set(counts.values_list("origin", flat=True)) == {"product"}
    assert set(AttributeTag.objects.exclude(category="Count").values_list("origin", flat=True)) == {"audiocaps-f"}
    assert AttributeTag.objects.get(text="on a xxx").template == "on a ___"


def test_several_occurrences_and_the_earlier_single_span_form():
    draft = draft_validate(
        {
            "events": [
                {"id": "e1", "label": "car passing", "spans": [[18.8, 20], [3.5, 5.0004], [10, 11.5]]},
                {"id": "e2", "label": "horn", "onset": 10.5, "offset": 11},
                {"id": "e3", "label": "chirping"},
            ]
        }
    )
    assert [event["spans"] for event in draft["events"]] == [[[3.5, 5.0], [10, 11.5], [18.8, 20]], [[10.5, 11]], []]


def test_time_checks_flag_a_stated_relation_against_the_spans_as_an_error():
    draft = draft_validate(
        {
            "events": [
                {
                    "id": "e1",
                    "label": "chirping",
                    "sources": ["birds"],
                    "attributes": ["loud"],
                    "spans": [[0.3, 19.89]],
                },
                {
                    "id": "e2",
                    "label": "driving by",
                    "sources": ["car"],
                    "attributes": ["loud"],
                    "spans": [[8.49, 11.5]],
                },
                {
                    "id": "e3",
                    "label": "honking",
                    "sources": ["horn"],
                    "attributes": ["loud"],
                    "spans": [[3, 4], [3.5, 5]],
                },
            ],
            "relations": [{"first": "e1", "second": "e2", "kind": "before"}],
        }
    )
    checks = draft_checks(draft=draft, library=attribute_vocabulary(), clip_duration=19.5)
    assert [(c.level, c.code, c.field) for c in checks] == [
        ("error", "time_outside_clip", "events[0].spans[0]"),
        ("error", "overlapping_spans", "events[2].spans[1]"),
        ("error", "time_contradiction", "relations[0]"),
    ]
    assert checks[2].message == (
        "Relation against the time spans: 'chirping' (0.30–19.89 s) before 'driving by' (8.49–11.50 s): "
        "the spans say simultaneous."
    )


def test_an_implied_relation_against_the_spans_is_not_derived_so_needs_no_confirmation():
    # a simultaneous b and b before c are both right; the chain rule alone would then say a before c, which the
    # spans contradict (wind sounds all along, with the talking too): that relation is dropped, not warned about.
    events = [
        {"id": "a", "label": "wind", "sources": ["wind"], "attributes": ["loud"], "spans": [[0, 10]]},
        {"id": "b", "label": "knock", "sources": ["door"], "attributes": ["loud"], "spans": [[8, 9]]},
        {"id": "c", "label": "talking", "sources": ["man"], "attributes": ["loud"], "spans": [[9.5, 10.5]]},
    ]
    relations = [
        {"first": "a", "second": "b", "kind": "simultaneous"},
        {"first": "b", "second": "c", "kind": "before"},
    ]
    draft = draft_validate({"events": events, "relations": relations})
    assert draft_checks(draft=draft, library=attribute_vocabulary(), clip_duration=11) == []
    # ... and stating what the spans say (wind with the talking) is no contradiction either
    draft = draft_validate(
        {"events": events, "relations": [*relations, {"first": "c", "second": "a", "kind": "simultaneous"}]}
    )
    assert draft_checks(draft=draft, library=attribute_vocabulary(), clip_duration=11) == []


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
