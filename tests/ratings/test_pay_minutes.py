"""The pay export's `minutes` column holds minutes from arrival to the end, to one decimal: exact values for
participants whose arrival and end are known (a check of `>= 0` alone let hours or seconds pass)."""

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from ratings.models import AssignmentItem
from ratings.models_study import Participant
from ratings.services.study_report import study_participant_rows, study_pay_csv
from tests.ratings.study_data import (
    answer_share,
    participant_of,
    prolific_arrive,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)
from tests.ratings.study_data import pairwise_study as make_pairwise_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]

ARRIVAL = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


def _good_side(item: AssignmentItem) -> str:
    """The clip's own caption on a gold pair (the check passes), left otherwise."""
    gold = item.pair.gold_choice
    if not gold:
        return "left"
    return "left" if (gold == "a") == item.a_on_left else "right"


def _times_set(participant: Participant, *, arrived: datetime, finished: datetime | None) -> None:
    assert Participant.objects.filter(pk=participant.pk).update(created_at=arrived, finished_at=finished) == 1


def test_minutes_are_the_time_from_arrival_to_the_end_and_pay_follows_them():
    study = make_pairwise_study(reward=2)
    done_client, _ = prolific_arrive(study, address="10.6.0.1")
    done = walk_to_items(done_client, study)
    answer_share(done_client, done, side_for=_good_side)
    done_client.get(f"/study/{study.slug}/items/")
    done.refresh_from_db()
    assert done.status == Participant.Status.COMPLETED
    _times_set(done, arrived=ARRIVAL, finished=ARRIVAL + timedelta(minutes=12, seconds=30))

    declined_client, _ = prolific_arrive(study, address="10.6.0.2")
    declined_client.post(reverse("study:entry", kwargs={"slug": study.slug}))
    declined_client.post(reverse("study:consent", kwargs={"slug": study.slug}), {"decision": "decline"})
    declined = participant_of(declined_client)
    _times_set(declined, arrived=ARRIVAL, finished=ARRIVAL + timedelta(seconds=45))

    working_client, _ = prolific_arrive(study, address="10.6.0.3")
    working = participant_of(working_client)
    _times_set(working, arrived=timezone.now() - timedelta(minutes=90), finished=None)

    rows = {
        row["participant_id"]: row
        for row in csv.DictReader(io.StringIO(study_pay_csv(study=study, platform=study.platforms[0])))
    }
    assert rows[done.platform_id]["minutes"] == "12.5"
    assert rows[declined.platform_id]["minutes"] == "0.8"  # 45 s
    assert float(rows[working.platform_id]["minutes"]) == pytest.approx(90.0, abs=0.15)  # still in the study: to now

    by_pk = {row.participant.pk: row for row in study_participant_rows(study=study)}
    assert by_pk[done.pk].total_seconds == 750
    # 2 (the reward) for 12.5 minutes: 9.60 an hour; only completed participants have an effective pay.
    assert by_pk[done.pk].hourly_pay == Decimal("9.60")
    assert by_pk[declined.pk].hourly_pay is None and by_pk[working.pk].hourly_pay is None
