"""Upload page and download button: admins only; uploads are kept with their outcome; the zip holds both workbooks."""

import io
import zipfile

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ratings.models import ThumbsRating, WorkbookUpload, campaign_rater_code
from ratings.services.workbooks import rater_workbook_export
from tests.ratings.workbook_helpers import caption_rows, thumbs_campaign, workbook_fill

pytestmark = pytest.mark.django_db


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


def _filled(campaign, rater, **cells) -> bytes:
    content = next(iter(rater_workbook_export(campaign=campaign, rater=rater).workbooks.values()))
    sheet = openpyxl.load_workbook(io.BytesIO(content))["Assessment"]
    _, record_id, text, _ = caption_rows(sheet)[0]
    return workbook_fill(content, {(record_id, text): cells})


def _upload(client, content: bytes, *, name="P1_excel.xlsx", campaign="web", rater="ann"):
    return client.post(
        reverse("ratings:workbook_upload"),
        {"file": SimpleUploadedFile(name, content), "campaign": campaign, "rater": rater},
    )


def test_pages_are_for_admins_only(client, make_user, media_root):
    rater = make_user("ann", "rater")
    campaign = thumbs_campaign(name="web", raters=[rater])
    client.force_login(rater)
    assert client.get(reverse("ratings:workbook_upload")).status_code == 403
    download = reverse("ratings:campaign_workbook_download", args=[campaign.pk, rater.pk])
    assert client.get(download).status_code == 403
    client.logout()
    assert client.get(download).status_code == 302  # to the login page


def test_upload_imports_and_keeps_the_file(admin_client, make_user, media_root):
    rater = make_user("ann", "rater")
    campaign = thumbs_campaign(name="web", raters=[rater])
    content = _filled(campaign, rater, E=4, F="5", G="-0.5")

    response = _upload(admin_client, content)

    upload = WorkbookUpload.objects.get()
    assert response.status_code == 302 and response.url == reverse("ratings:workbook_upload_detail", args=[upload.pk])
    assert upload.status == "imported" and upload.summary["ratings_created"] == 1 and upload.errors == []
    assert upload.file.read() == content and upload.rater == rater and upload.uploaded_by.username == "boss"
    rating = ThumbsRating.objects.get()
    assert (rating.precision, rating.recall, str(rating.fluency), rating.workbook_sha256) == (
        4,
        5,
        "-0.5",
        upload.sha256,
    )
    page = admin_client.get(response.url).content.decode()
    assert "Imported" in page and "Ratings created" in page
    listing = admin_client.get(reverse("ratings:workbook_upload")).content.decode()
    assert "P1_excel.xlsx" in listing
    file_response = admin_client.get(reverse("ratings:workbook_upload_file", args=[upload.pk]))
    assert b"".join(file_response.streaming_content) == content


def test_a_failed_upload_is_kept_with_every_error(admin_client, make_user, media_root):
    rater = make_user("ann", "rater")
    campaign = thumbs_campaign(name="web", raters=[rater])
    response = _upload(admin_client, _filled(campaign, rater, E=7, F="x"))
    upload = WorkbookUpload.objects.get()
    assert upload.status == "failed" and upload.file.size > 0 and not ThumbsRating.objects.exists()
    assert upload.errors == [
        "Assessment!E6: 7 — precision must be a whole number 1–5",
        "Assessment!F6: x — recall must be a whole number 1–5",
    ]
    page = admin_client.get(response.url).content.decode()
    assert "2 cells to fix in P1_excel.xlsx" in page
    assert "Assessment!E6: 7 — precision must be a whole number 1–5" in page

    _upload(admin_client, b"%PDF-1.4 not a workbook", name="scan.xlsx")
    refused = WorkbookUpload.objects.get(original_name="scan.xlsx")
    assert refused.status == "failed" and "not a zip archive" in refused.errors[0]
    page = admin_client.get(reverse("ratings:workbook_upload_detail", args=[refused.pk])).content.decode()
    assert "scan.xlsx could not be read" in page and "the file itself is the problem" in page


def test_download_button_returns_the_raters_zip(admin_client, make_user, media_root):
    rater, other = make_user("ann", "rater"), make_user("zed", "rater")
    campaign = thumbs_campaign(name="web", raters=[rater], with_audio=True)
    response = admin_client.get(reverse("ratings:campaign_workbook_download", args=[campaign.pk, rater.pk]))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert f'filename="study-{campaign_rater_code(campaign.pk)}_P1_ann.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    tokens = sorted(campaign.assignments.get(rater=rater).items.values_list("token", flat=True))
    assert sorted(archive.namelist()) == ["P1_excel.xlsx", "P1_url.xlsx", *(f"audio/{token}.wav" for token in tokens)]
    url_sheet = openpyxl.load_workbook(io.BytesIO(archive.read("P1_url.xlsx")))["Assessment"]
    link = url_sheet["B6"].hyperlink.target
    assert link.startswith("http://testserver/ratings/workbook-audio/")
    assert admin_client.get(link.removeprefix("http://testserver")).status_code == 200
    assert (
        admin_client.get(reverse("ratings:campaign_workbook_download", args=[campaign.pk, other.pk])).status_code == 404
    )
