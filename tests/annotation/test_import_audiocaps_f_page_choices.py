"""The AudioCaps-F import page offers the choices the command has: what becomes of clips with duplicate events
and of clips with conflicting attributes; the upload keeps the choice and the worker passes it to the importer."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import ExpertAnnotation
from annotation.services.dataset_uploads import data_file_upload_create
from corpus.models import DatasetUpload
from corpus.services.importing import ImportDataError
from tests.annotation.import_posts import post_and_follow

pytestmark = pytest.mark.django_db

NAMED_TWICE = {
    "50.wav": {"Dog": {"source": ["dog"], "attr": []}, "dog": {"source": ["dog"], "attr": []}},
    "51.wav": {"wind": {"source": ["wind"], "attr": ["loud", "quiet"]}},
}


def _upload(data) -> SimpleUploadedFile:
    return SimpleUploadedFile("acf.json", json.dumps(data).encode())


def test_the_page_shows_both_choices_with_the_refusing_and_gold_defaults(admin_client):
    page = admin_client.get(reverse("annotation:import_audiocaps_f")).content.decode()
    assert "Import AudioCaps-F annotations" in page  # the page itself, not an error page
    assert '<select name="duplicates_as"' in page and '<select name="conflicting_as"' in page
    assert '<option value="refuse" selected>refuse the file</option>' in page
    assert '<option value="submitted">import as submitted</option>' in page
    assert '<option value="gold" selected>keep gold</option>' in page


def test_the_page_refusal_names_the_choice_in_the_page_words(
    admin_client, media_root, django_capture_on_commit_callbacks
):
    page = post_and_follow(
        admin_client,
        django_capture_on_commit_callbacks,
        reverse("annotation:import_audiocaps_f"),
        {"dataset": "acf", "file": _upload(NAMED_TWICE)},
    ).content.decode()
    assert "Nothing was imported" in page
    assert "choose &quot;import as submitted&quot; for duplicate events" in page
    assert not ExpertAnnotation.objects.exists()


def test_the_chosen_statuses_reach_the_importer(admin_client, media_root, django_capture_on_commit_callbacks):
    response = post_and_follow(
        admin_client,
        django_capture_on_commit_callbacks,
        reverse("annotation:import_audiocaps_f"),
        {"dataset": "acf", "file": _upload(NAMED_TWICE), "duplicates_as": "submitted", "conflicting_as": "submitted"},
    )

    assert response.status_code == 200
    upload = DatasetUpload.objects.get()
    assert upload.status == DatasetUpload.Status.IMPORTED, upload.errors
    assert upload.options == {"duplicates_as": "submitted", "conflicting_as": "submitted"}
    assert dict(ExpertAnnotation.objects.values_list("clip__file_name", "status")) == {
        "50.wav": "submitted",
        "51.wav": "submitted",
    }


def test_an_unknown_choice_is_refused_on_the_page_and_by_the_upload_service(admin_client, media_root):
    response = admin_client.post(
        reverse("annotation:import_audiocaps_f"), {"dataset": "acf", "file": _upload(NAMED_TWICE), "duplicates_as": "x"}
    )
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    with pytest.raises(ImportDataError, match=r'duplicates_as "gold": expected one of refuse, submitted'):
        data_file_upload_create(
            kind="audiocaps_f",
            dataset_name="acf",
            upload=_upload({}),
            uploaded_by=None,
            options={"duplicates_as": "gold"},
        )
    assert not DatasetUpload.objects.exists()
