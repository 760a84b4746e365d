"""End to end through the whole stack of docker-compose.yml, started on loopback by scripts/stack.py.

Private PostgreSQL cluster, private Redis, moto's S3 server, gunicorn (DEBUG off) and a separate Celery
worker process; everything below goes over HTTP or through `manage.py` in the stack's environment,
as an operator or a browser would. Nothing here touches the test database.
"""

import io
import json
import re
import time
import zipfile

import pytest
import requests

from scripts.stack import S3_BUCKET
from tests.ratings.workbook_helpers import caption_rows, workbook_fill

pytestmark = [pytest.mark.slow]


def signed_in(stack, username: str, password: str) -> requests.Session:
    session = requests.Session()
    session.get(f"{stack.web_url}/accounts/login/", timeout=10)
    response = session.post(
        f"{stack.web_url}/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        timeout=10,
        allow_redirects=False,
    )
    assert response.status_code == 302, response.text[:500]
    return session


def test_healthz_reports_every_service_of_the_stack(stack):
    status, report = stack.health()
    assert status == 200 and report["status"] == "ok"
    checks = report["checks"]
    assert checks["database"]["kind"] == "postgresql"
    assert checks["broker"]["kind"] == "redis"
    assert checks["storage"]["kind"] == "s3"
    assert checks["worker"]["alive"] == 1
    assert "127.0.0.1" not in json.dumps(report) and "secret" not in json.dumps(report).lower()


def test_static_files_are_served_by_whitenoise_under_gunicorn(stack):
    response = requests.get(f"{stack.web_url}/static/core/css/base.css", timeout=10)
    assert response.status_code == 200 and "text/css" in response.headers["Content-Type"]
    assert (
        requests.get(f"{stack.web_url}/accounts/login/", headers={"Host": "evil.example"}, timeout=10).status_code
        == 400
    )


def test_audio_goes_to_s3_under_random_keys_and_a_rater_plays_it_with_a_range_request(stack, demo):
    # The demo's audio was uploaded to the S3 server, each object under an unguessable key, and so was each
    # clip's rater copy (its samples only, no metadata)
    s3 = stack.s3.client()
    keys = [entry["Key"] for entry in s3.list_objects_v2(Bucket=S3_BUCKET, Prefix="audio/")["Contents"]]
    assert len(keys) == len(demo["clips"]) >= 40
    assert all(re.fullmatch(r"audio/[0-9a-f]{32}\.wav", key) for key in keys), keys
    copies = [entry["Key"] for entry in s3.list_objects_v2(Bucket=S3_BUCKET, Prefix="rater-audio/")["Contents"]]
    assert len(copies) == len(keys), copies
    assert all(re.fullmatch(r"rater-audio/[0-9a-f]{32}\.wav", key) for key in copies), copies
    # A rater asks for an item's audio (the per-item URL raters get): the app streams the rater copy from S3
    # itself (what it sends is the listening proof), and a seeking player's Range request gets exactly those bytes
    rater = signed_in(stack, "rater", demo["passwords"]["rater"])
    item_audio_url = f"{stack.web_url}/ratings/items/{demo['rater_item_tokens'][0]}/audio/"
    whole = rater.get(item_audio_url, allow_redirects=False, timeout=10)
    assert whole.status_code == 200 and whole.headers["Content-Type"] == "audio/wav"
    assert "Content-Disposition" not in whole.headers
    stored = {key: s3.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read() for key in copies}
    assert whole.content in stored.values(), "the rater copy, byte for byte"
    partial = rater.get(item_audio_url, headers={"Range": "bytes=1000-1999"}, allow_redirects=False, timeout=10)
    assert partial.status_code == 206
    assert partial.headers["Content-Range"] == f"bytes 1000-1999/{len(whole.content)}"
    assert partial.content == whole.content[1000:2000]


def test_a_metric_run_started_through_the_api_completes_on_the_worker(stack, demo):
    token = requests.post(
        f"{stack.web_url}/api/token/", data={"username": "admin", "password": demo["passwords"]["admin"]}, timeout=10
    ).json()["token"]
    headers = {"Authorization": f"Token {token}"}
    started = time.monotonic()
    created = requests.post(
        f"{stack.web_url}/api/metric-runs/",
        json={"dataset": "demo", "metrics": ["BLEU_4", "ROUGE_L"]},
        headers=headers,
        timeout=30,
    )
    answered = time.monotonic() - started
    assert created.status_code == 201, created.text
    run = created.json()
    assert run["status"] in ("pending", "running")  # answered before the worker scored it
    deadline = time.monotonic() + 120
    while run["status"] in ("pending", "running"):
        assert time.monotonic() < deadline, f"run not done: {run}\n{stack.logs_tail()}"
        time.sleep(0.3)
        run = requests.get(f"{stack.web_url}/api/metric-runs/{run['id']}/", headers=headers, timeout=10).json()
    print(f"API answered in {answered:.2f} s; run done {time.monotonic() - started:.1f} s after the request")
    assert run["status"] == "done" and run["chunks_done"] == run["chunks_total"] > 0
    scores = requests.get(
        f"{stack.web_url}/api/metric-scores/",
        params={"run": run["id"], "metric": "ROUGE_L"},
        headers=headers,
        timeout=10,
    ).json()
    assert scores["count"] > 0


def test_a_thumbs_workbook_round_trip_through_the_pages(stack, demo):
    admin = signed_in(stack, "admin", demo["passwords"]["admin"])
    # Download the rater's workbook package
    download = admin.get(
        f"{stack.web_url}/ratings/staff/campaigns/{demo['campaign']}/raters/{demo['rater']}/workbook/", timeout=60
    )
    assert download.status_code == 200 and download.headers["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(download.content))
    [excel_name] = [name for name in archive.namelist() if name.endswith("_excel.xlsx")]
    assert any(name.endswith(".wav") for name in archive.namelist())  # audio fetched from S3 into the zip
    content = archive.read(excel_name)
    # Fill it like a rater, upload it on the upload page
    import openpyxl

    rows = caption_rows(openpyxl.load_workbook(io.BytesIO(content))["Assessment"])
    typed = {
        (record_id, text): {"E": 1 + index % 5, "F": 5 - index % 5, "G": -0.5, "H": 0, "I": -1, "K": f"note {index}"}
        for index, (_, record_id, text, _) in enumerate(rows)
    }
    filled = workbook_fill(content, typed)
    page = admin.get(f"{stack.web_url}/ratings/staff/workbooks/upload/", timeout=10)
    assert page.status_code == 200
    uploaded = admin.post(
        f"{stack.web_url}/ratings/staff/workbooks/upload/",
        data={"campaign": "demo-thumbs", "rater": "rater", "csrfmiddlewaretoken": admin.cookies["csrftoken"]},
        files={"file": (excel_name.rsplit("/", 1)[-1], filled)},
        timeout=60,
    )
    assert uploaded.status_code == 200 and "/ratings/staff/workbooks/uploads/" in uploaded.url
    # Every typed value is in the database, read back through the ratings export
    exported = json.loads(
        stack.manage("export_thumbs_ratings", "--campaign", "demo-thumbs", "--format", "json", check=True).stdout
    )
    entries = exported if isinstance(exported, list) else exported.get("ratings", exported)
    entries = [entry for entry in entries if entry["rater"] == "rater"]  # the simulated raters' are there too
    assert len(entries) == len(typed)
    by_comment = {entry["comment"]: entry for entry in entries}
    for index, cells in enumerate(typed.values()):
        entry = by_comment[f"note {index}"]
        assert (entry["precision"], entry["recall"]) == (cells["E"], cells["F"])
