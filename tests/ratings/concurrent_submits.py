"""Firing simultaneous submits of one item at a live server, and the item they aim at.

`item_seed()` builds (in whatever database the process uses) a rater, a THumBS campaign with one
listened item and a signed-in session; `fire()` sends N identical submissions of that item at once
(threads released by a barrier) and reports every status and latency. Used in-process against
pytest-django's live server, and in a subprocess against `manage.py runserver` on its own SQLite file.
"""

import json
import re
import statistics
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

import requests


@dataclass
class FireResult:
    statuses: list[int]
    latencies: list[float]
    bodies: list[str]

    def summary(self) -> str:
        counts = {status: self.statuses.count(status) for status in sorted(set(self.statuses))}
        return (
            f"{len(self.statuses)} submits: statuses {counts}; latency ms min {min(self.latencies) * 1000:.0f} "
            f"median {statistics.median(self.latencies) * 1000:.0f} max {max(self.latencies) * 1000:.0f}"
        )


def item_seed() -> dict:
    """A rater, one listened THumBS item and a session; returns what a client needs to submit it."""
    from django.contrib.auth.models import Group, User
    from django.test import Client
    from django.utils import timezone

    from corpus.models import Caption, Clip, Dataset
    from ratings.models import AssignmentItem, HeadphoneCheck
    from ratings.services.campaigns import campaign_setup

    dataset = Dataset.objects.create(name="race")
    clip = Clip.objects.create(dataset=dataset, external_id="race.wav", duration_seconds=1.0)
    for position in range(2):
        Caption.objects.create(
            clip=clip, text=f"a door slams {position}", role="reference", author_kind="human", position=position
        )
    rater = User.objects.create_user(username="racer", password="race-pass-1")
    rater.groups.add(Group.objects.get_or_create(name="rater")[0])
    HeadphoneCheck.objects.create(rater=rater, trials=[], correct_count=6, passed=True, completed_at=timezone.now())
    campaign = campaign_setup(
        name="race", dataset=dataset, task_type="thumbs", human_captions_per_clip=2, raters=[rater]
    )
    item = campaign.assignments.get().items.get()
    now = timezone.now()
    AssignmentItem.objects.filter(pk=item.pk).update(first_shown_at=now - timedelta(seconds=5), listened_at=now)
    client = Client()
    client.force_login(rater)
    return {"token": item.token, "session": client.cookies["sessionid"].value, "captions": len(item.caption_order)}


def item_outcome(token: str) -> dict:
    """What the database holds after the race."""
    from ratings.models import AssignmentItem, ItemEvent, ThumbsRating

    item = AssignmentItem.objects.get(token=token)
    return {
        "version": item.version,
        "ratings": ThumbsRating.objects.filter(campaign=item.assignment.campaign).count(),
        "submitted_events": ItemEvent.objects.filter(item=item, kind="submitted").count(),
        "refused_events": ItemEvent.objects.filter(item=item, kind="stale_refused").count(),
    }


def fire(*, base_url: str, seed: dict, count: int = 20) -> FireResult:
    """`count` identical submissions of the seeded item (version 0), released together."""
    session = requests.Session()
    session.cookies.set("sessionid", seed["session"])
    page_url = f"{base_url}/ratings/items/{seed['token']}/"
    page = session.get(page_url, timeout=30)
    page.raise_for_status()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    form = {"csrfmiddlewaretoken": csrf, "version": "0", "synthesized": "no"}
    for number in range(1, seed["captions"] + 1):
        form.update({f"precision_{number}": "3", f"recall_{number}": "4", f"fluency_{number}": "0"})
        form.update({f"conciseness_{number}": "0", f"irrelevance_{number}": "0", f"comment_{number}": ""})
    cookies = {"sessionid": seed["session"], "csrftoken": session.cookies.get("csrftoken")}
    barrier = threading.Barrier(count)
    results: list[tuple[int, float, str]] = [None] * count  # type: ignore[list-item]

    def submit(index: int) -> None:
        barrier.wait()
        started = time.perf_counter()
        response = requests.post(
            page_url, data=form, cookies=cookies, headers={"Referer": page_url}, allow_redirects=False, timeout=60
        )
        results[index] = (response.status_code, time.perf_counter() - started, response.text[:4000])

    threads = [threading.Thread(target=submit, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return FireResult(
        statuses=[status for status, _, _ in results],
        latencies=[latency for _, latency, _ in results],
        bodies=[body for _, _, body in results],
    )


def main_seed() -> None:
    print("SEED " + json.dumps(item_seed()))


def main_outcome(token: str) -> None:
    print("OUTCOME " + json.dumps(item_outcome(token)))
