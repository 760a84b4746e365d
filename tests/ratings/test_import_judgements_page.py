"""The judgement-file import page: a Clotho-Eval slice and a BRACE file through the page, named errors, admins
only."""

import json
from collections import Counter

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from corpus.models import Dataset, DatasetUpload
from ratings.models import CaptionPair, PairwiseVote
from tests.annotation.import_posts import post_and_follow
from tests.annotation.table_counts import all_table_counts

pytestmark = pytest.mark.django_db


def counts_without_uploads() -> dict[str, int]:
    """Row counts of every table but the upload's own record, which stays with its problems by design."""
    return {label: count for label, count in all_table_counts().items() if label != "corpus.DatasetUpload"}


CHOICE_OF_VOTE = {1: "a", -1: "b", 0: "none"}
SPLIT_OF_KEY = {"HC": "HC", "HI": "HI", "HM": "HM"}


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", "admin"))
    return client


@pytest.fixture
def upload(django_capture_on_commit_callbacks):
    """Upload a judgement file and follow the page to the upload's page once the (eager) worker task has run."""

    def post(client, *, dataset: str, name: str, content: bytes):
        return post_and_follow(
            client,
            django_capture_on_commit_callbacks,
            reverse("ratings:import_judgements"),
            {"dataset": dataset, "file": SimpleUploadedFile(name, content)},
        )

    return post


def test_a_clotho_eval_slice_creates_its_pairs_and_votes(admin_client, shared_dir, upload):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:3]
    # What the file says, read independently of the importer: pairs per split and votes per (clip, key, choice).
    expected_splits, expected_votes = Counter(), Counter()
    for item in items:
        for key, entry in item.items():
            if key in ("raw_name", "audio_id", "references") or entry is None:
                continue
            expected_splits[SPLIT_OF_KEY.get(key, "MM")] += 1
            for vote in entry[-1]:
                expected_votes[(item["raw_name"], key, CHOICE_OF_VOTE[vote])] += 1

    response = upload(
        admin_client, dataset="clotho-slice", name="clotho_slice.json", content=json.dumps(items).encode()
    )

    assert response.status_code == 200, response.content.decode()[:2000]
    dataset = Dataset.objects.get(name="clotho-slice")
    pairs = CaptionPair.objects.filter(clip__dataset=dataset)
    assert Counter(pairs.values_list("split", flat=True)) == expected_splits
    votes = PairwiseVote.objects.filter(pair__clip__dataset=dataset)
    assert Counter(votes.values_list("pair__clip__file_name", "pair__source_key", "choice")) == expected_votes
    assert sorted(set(votes.values_list("rater__username", flat=True))) == [
        f"clotho-slice-judge-{n}" for n in (1, 2, 3, 4)
    ]
    page = response.content.decode()
    assert reverse("annotation:dataset", args=[dataset.pk]) in page
    assert f'<td>votes</td><td class="num">{sum(expected_votes.values())}</td>' in page
    assert "Import a judgement file into clotho-slice" in page

    # the same file again changes nothing, and says so
    again = upload(admin_client, dataset="clotho-slice", name="clotho_slice.json", content=json.dumps(items).encode())
    assert again.status_code == 200
    assert votes.count() == sum(expected_votes.values())


def test_a_brace_file_through_the_page(admin_client, shared_dir, upload):
    content = (shared_dir / "datasets" / "brace_format" / "brace_main_sample.json").read_bytes()
    response = upload(admin_client, dataset="brace-main", name="brace_main_sample.json", content=content)
    assert response.status_code == 200, response.content.decode()[:2000]
    assert Dataset.objects.get(name="brace-main").judgement_layout == Dataset.JudgementLayout.BRACE_MAIN
    expected_pairs = sum(1 for item in json.loads(content) for key in item if key.startswith(("Human-", "Machine-")))
    assert CaptionPair.objects.filter(clip__dataset__name="brace-main").count() == expected_pairs


def test_a_bad_item_is_named_and_nothing_is_written(admin_client, shared_dir, upload):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:3]
    items[2]["HM"] = ["only one caption"]
    before = counts_without_uploads()
    response = upload(admin_client, dataset="never-made", name="broken.json", content=json.dumps(items).encode())
    page = response.content.decode()
    assert "broken.json" in page and "HM" in page and "Nothing was imported" in page
    assert counts_without_uploads() == before


def test_a_file_over_the_limit_is_refused(admin_client, monkeypatch, upload):
    from corpus.services import import_uploads

    monkeypatch.setattr(import_uploads, "MAX_DATA_FILE_BYTES", 10)
    response = upload(admin_client, dataset="never-made", name="big.json", content=b"[" + b" " * 20 + b"]")
    assert response.status_code == 400
    assert "big.json: larger than the limit" in response.content.decode()
    assert not Dataset.objects.filter(name="never-made").exists() and not DatasetUpload.objects.exists()


@pytest.mark.parametrize("role", ["annotator", "reviewer", "rater"])
def test_only_admins(client, make_user, role, shared_dir, upload):
    client.force_login(make_user("someone", role))
    assert client.get(reverse("ratings:import_judgements")).status_code == 403
    response = upload(client, dataset="sneaky", name="x.json", content=b"[]")
    assert response.status_code == 403 and not DatasetUpload.objects.exists()
    assert not Dataset.objects.filter(name="sneaky").exists()
