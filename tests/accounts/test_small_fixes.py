"""The small things a newcomer trips over: the site's icon, a way back from the API docs, plural wording, the
home card for metrics, and a workbook's Example sheet that names nothing missing from its zip."""

import io
import zipfile

import openpyxl
import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command

from tests.ratings.workbook_helpers import thumbs_campaign

pytestmark = pytest.mark.django_db


def test_favicon_is_served_on_every_page(client, make_user):
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == "/static/core/favicon.svg"
    assert finders.find("core/favicon.svg")  # the file the redirect leads to exists
    client.force_login(make_user("boss", staff=True))
    assert '<link rel="icon" href="/static/core/favicon.svg">' in client.get("/").content.decode()


def test_the_api_docs_lead_back_to_the_site(client, make_user):
    client.force_login(make_user("ann", "annotator"))
    page = client.get("/api/docs/").content.decode()
    assert 'id="swagger-ui"' in page  # the docs themselves still render
    assert '<a href="/">← Caption Eval home</a>' in page


def test_one_problem_is_not_called_these_problems(client, make_user):
    from corpus.models import Dataset, SystemSubmission

    dataset = Dataset.objects.create(name="fixes")
    client.force_login(make_user("boss", staff=True))
    for count in (1, 2):
        submission = SystemSubmission.objects.create(
            dataset=dataset, system_name="s", status="failed", errors=[f"problem {n}" for n in range(count)]
        )
        page = client.get(f"/metrics/systems/submissions/{submission.pk}/").content.decode()
        assert ("Fix this problem" in page) == (count == 1) and ("Fix these 2 problems" in page) == (count == 2)
        assert "Fix these 1 problem" not in page


def test_the_example_sheet_names_no_file_missing_from_the_zip(make_user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    make_user("fay", "rater")
    thumbs_campaign(name="example", texts={"1.wav": ["a b", "c d"]}, with_audio=True)
    out = tmp_path / "out"
    call_command("export_thumbs_workbooks", campaign="example", rater=["fay"], links="local", out=str(out))
    (zip_path,) = out.glob("study-*_P1_fay.zip")  # the study's opaque code, not its database id
    with zipfile.ZipFile(zip_path) as archive:
        entries = set(archive.namelist())
        example = openpyxl.load_workbook(io.BytesIO(archive.read("P1_excel.xlsx")))["Example"]
    texts = [str(cell.value) for row in example.iter_rows() for cell in row if cell.value is not None]
    assert any("Example" in text for text in texts)  # the example is still there
    named_files = [text for text in texts if text.lower().endswith((".wav", ".flac", ".mp3", ".ogg"))]
    assert all(name in entries or f"audio/{name}" in entries for name in named_files), named_files
    assert not any("sample audio" in text for text in texts)
