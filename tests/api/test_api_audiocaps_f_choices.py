"""POST /api/imports/audiocaps-f/: a file whose gold import embeds phrases (a clip of two events or more, all with
spans) is handed to the worker (202, an upload to follow), since loading Sentence-BERT and embedding take longer
than a request may last (about 14 s to load and 10 s to embed 957 clips on a cold cache); other files are imported
at once (201/200). The choices for clips with duplicate events or conflicting attributes are multipart fields."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import ExpertAnnotation
from annotation.services import gold_duplicates
from corpus.models import DatasetUpload

URL = "/api/imports/audiocaps-f/"
SUBMITTED_CHOICE = 'choose "import as submitted" for duplicate events (command: --duplicate-events submitted)'
TIMED = {
    "Yab1.wav": {
        "crash": {"source": ["glass"], "attr": [], "spans": [[1, 2]]},
        "smash": {"source": ["glass"], "attr": [], "spans": [[1, 2]]},
    },
    "Yab2.wav": {"wind": {"source": ["wind"], "attr": [], "spans": [[0, 9]]}},
}
NAMED_TWICE = {"Yab3.wav": {"Dog": {"source": ["dog"], "attr": []}, "dog": {"source": ["dog"], "attr": []}}}


def _imported():
    """The annotations this import made (the API world has others)."""
    return ExpertAnnotation.objects.filter(clip__dataset__name="acf")


def _file(data, name="f.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, json.dumps(data).encode(), content_type="application/json")


@pytest.fixture
def finder_calls(monkeypatch) -> list:
    """The matching rule replaced by one that records its documents and calls "crash" / "smash" one sound."""
    calls = []

    def finder(documents):
        calls.append(documents)
        return [
            [{"first": "crash", "second": "smash", "score": 0.9, "needed": 0.5}]
            if {"crash", "smash"} <= set(doc)
            else []
            for doc in documents
        ]

    monkeypatch.setattr(gold_duplicates, "_finders", [finder])
    return calls


def test_a_file_needing_the_embedding_is_handed_to_the_worker_with_its_choice(
    world, client_for, media_root, finder_calls, django_capture_on_commit_callbacks
):
    admin = client_for("admin")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = admin.post(URL, {"file": _file(TIMED), "dataset": "acf", "duplicate_events": "submitted"})

    assert response.status_code == 202, response.content
    assert finder_calls == []  # nothing embedded inside the request
    assert not _imported().exists()
    body = response.json()
    upload = DatasetUpload.objects.get()
    assert (body["id"], body["status"], body["kind"], body["dataset"]) == (upload.pk, "pending", "audiocaps_f", "acf")
    assert upload.options == {"duplicates_as": "submitted", "conflicting_as": "gold"}
    assert body["status_url"] == f"/api/imports/uploads/{upload.pk}/"
    assert body["page_url"] == f"/datasets/uploads/{upload.pk}/"

    for callback in queued:  # the worker's task (eager in tests)
        callback()

    assert len(finder_calls) == 1
    assert dict(_imported().values_list("clip__external_id", "status")) == {
        "ab1": "submitted",
        "ab2": "gold",
    }
    followed = admin.get(body["status_url"]).json()
    assert followed["status"] == "imported"
    assert followed["summary"]["extra"]["clips with duplicate events"] == 1


def test_the_worker_refusal_names_the_choice_in_words_for_the_api(
    world, client_for, media_root, finder_calls, django_capture_on_commit_callbacks
):
    admin = client_for("admin")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(URL, {"file": _file(TIMED), "dataset": "acf"})
    assert response.status_code == 202, response.content

    followed = admin.get(response.json()["status_url"]).json()
    assert followed["status"] == "failed"
    [error] = followed["errors"]
    assert error.startswith('f.json: key "Yab1.wav": events "crash" and "smash" may be one sound') and error.endswith(
        SUBMITTED_CHOICE
    )
    assert not _imported().exists()


def test_a_file_without_spans_is_imported_at_once_with_the_choice(world, client_for, finder_calls):
    admin = client_for("admin")
    refused = admin.post(URL, {"file": _file(NAMED_TWICE), "dataset": "acf"})
    assert refused.status_code == 400
    assert refused.json()["file"].endswith(SUBMITTED_CHOICE)

    response = admin.post(URL, {"file": _file(NAMED_TWICE), "dataset": "acf", "duplicate_events": "submitted"})

    assert response.status_code == 201, response.content
    assert _imported().get().status == "submitted"
    assert not DatasetUpload.objects.exists()
    assert finder_calls == []


@pytest.mark.parametrize("field", ["duplicate_events", "conflicting_attributes"])
def test_an_unknown_choice_is_refused_naming_the_field(world, client_for, field):
    response = client_for("admin").post(URL, {"file": _file(NAMED_TWICE), "dataset": "acf", field: "draft"})
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert not _imported().exists()


def test_the_schema_documents_the_choices_and_the_202(world, client_for):
    schema = client_for("admin").get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"][URL]["post"]
    assert {"200", "201", "202"} <= set(operation["responses"])
    body = operation["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[-1]
    properties = schema["components"]["schemas"][body]["properties"]
    assert {"duplicate_events", "conflicting_attributes"} <= set(properties)
    assert "/api/imports/uploads/{id}/" in schema["paths"]
