"""The rater lock: an annotator or reviewer who rates in an active campaign gets no authorship of its dataset.

Lists leave the dataset's rows out, asking for the dataset or one of its rows is a 403 that says why,
closing the campaign lifts the lock, and admins (who run the study) are not locked.
"""

import pytest
from django.contrib.auth.models import Group

from corpus.models import CaptioningSystem, Clip, Dataset
from ratings.models import Assignment, Campaign

LOCKED_LISTS = ["/api/captions/", "/api/caption-pairs/", "/api/clips/", "/api/metric-scores/"]


@pytest.fixture
def rating_annotator(world):
    """The world's annotator, now also a rater in the (active) THumBS campaign on the world's dataset."""
    annotator = world.users["annotator"]
    annotator.groups.add(Group.objects.get(name="rater"))
    Assignment.objects.create(campaign=world.thumbs, rater=annotator)
    other = Dataset.objects.create(name="elsewhere")
    clip = Clip.objects.create(dataset=other, external_id="free.wav")
    clip.captions.create(
        text="a free caption", role="candidate", author_kind="machine", system=CaptioningSystem.objects.first()
    )
    return annotator


def _results(response) -> list:
    assert response.status_code == 200, response.content[:300]
    return response.json()["results"]


@pytest.mark.parametrize("url", LOCKED_LISTS)
def test_lists_leave_the_rated_dataset_out(world, client_for, rating_annotator, url):
    client = client_for("annotator")
    rows = _results(client.get(url))
    dataset_rows = _results(client_for("reviewer").get(url, {"dataset": world.dataset.name}))
    assert dataset_rows, "the reviewer (not rating) sees the dataset's rows, so the check is not vacuous"
    hidden_ids = {row["id"] for row in dataset_rows}
    assert not hidden_ids & {row["id"] for row in rows}
    refused = client.get(url, {"dataset": world.dataset.name})
    assert refused.status_code == 403 and "hidden from you until the study is closed" in refused.json()["detail"]
    detail = client.get(f"{url}{sorted(hidden_ids)[0]}/")
    assert detail.status_code == 403


def test_captions_of_other_datasets_stay_readable(world, client_for, rating_annotator):
    rows = _results(client_for("annotator").get("/api/captions/"))
    assert [row["text"] for row in rows] == ["a free caption"]


def test_closing_the_campaign_lifts_the_lock(world, client_for, rating_annotator):
    client = client_for("annotator")
    assert client.get("/api/captions/", {"dataset": world.dataset.name}).status_code == 403
    Campaign.objects.filter(pk=world.thumbs.pk).update(is_active=False)
    assert _results(client.get("/api/captions/", {"dataset": world.dataset.name}))


def test_admins_who_rate_are_not_locked(world, client_for):
    admin = world.users["admin"]
    Assignment.objects.create(campaign=world.thumbs, rater=admin)
    assert _results(client_for("admin").get("/api/captions/", {"dataset": world.dataset.name}))
