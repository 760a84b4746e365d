"""Attack: hear a whole share at once. Fetch every clip in parallel (or in interleaved byte ranges, or in
several tabs), wait once for the longest clip, then report each item heard and submit it.

Against the old main the listening proof held one item at a time, so this unlocked every item after the
longest clip (24 items, 94.7 s of audio, submitted in 8.5 s). Here the server counts a rater's listening on
one clock: each item is credited a stretch of its listening time that starts no earlier than its first
audio byte and overlaps no other item's stretch. After the longest clip only one item is credited; the
rest are refused until as much real time has passed as playing them in turn would take.

Time is a controllable clock (django.utils.timezone.now patched): nothing sleeps. Each test also checks the
control: what it refuses would have passed the old per-item rule (whole file served, the clip's duration
since its first byte).
"""

from datetime import timedelta
from statistics import median

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ratings.models import AssignmentItem
from ratings.services.campaigns import campaign_setup
from ratings.services.listening import LISTENED_COVERAGE, served_coverage
from tests.ratings.campaign_data import clip_audio_attach, corpus_build, headphone_pass_give

pytestmark = pytest.mark.django_db

# Clip lengths of a realistic share: 24 clips of 3..5.5 s (the audit's share held 94.7 s of audio), so no
# two of them fit in the wait for the longest.
DURATIONS = [3.0 + (index * 7 % 11) / 4 for index in range(24)]


class Clock:
    """The server's clock, moved by the test (every `timezone.now()` in the app reads it)."""

    def __init__(self):
        self.now = timezone.now()

    def __call__(self):
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(timezone, "now", clock)
    return clock


def _share(make_user, name: str, durations: list[float], rater_names=("parallel-rater",)):
    dataset, clips, _ = corpus_build(name=name, clip_count=len(durations), reference_count=2, system_names=())
    for clip, duration in zip(clips, durations, strict=True):
        clip_audio_attach(clip, seconds=0.2)  # a short file; the clip's stated length is what must be heard
        clip.duration_seconds = duration
        clip.save(update_fields=["duration_seconds"])
    raters = [make_user(rater_name, "rater") for rater_name in rater_names]
    for rater in raters:
        headphone_pass_give(rater)
    campaign = campaign_setup(
        name=f"{name}-pairs", dataset=dataset, task_type="pairwise", split_counts={"HC": len(durations)},
        judgements_per_item=len(raters), raters=raters,
    )  # fmt: skip  # every rater gets every item: the tests index each share
    shares = []
    for rater in raters:
        client = Client()
        client.force_login(rater)
        shares.append((client, list(campaign.assignments.get(rater=rater).items.order_by("position"))))
    return shares


def _duration(item) -> float:
    return AssignmentItem.objects.get(pk=item.pk).clip.duration_seconds


def _fetch(client, item, range_header: str | None = None) -> bytes:
    url = reverse("ratings:item_audio", args=[item.token])
    response = client.get(url, HTTP_RANGE=range_header) if range_header else client.get(url)
    assert response.status_code in (200, 206)
    return b"".join(response.streaming_content)


def _listened(client, item):
    return client.post(reverse("ratings:item_listened", args=[item.token]), "{}", content_type="application/json")


def _submit(client, item):
    return client.post(reverse("ratings:item", args=[item.token]), {"side": "left", "version": "0"})


def _old_rule_passes(item, now) -> bool:
    """The control: the per-item proof before the one clock (whole file served, its duration since its first byte)."""
    row = AssignmentItem.objects.select_related("clip").get(pk=item.pk)
    elapsed = (now - row.audio_first_served_at).total_seconds()
    return served_coverage(row.audio_served) >= LISTENED_COVERAGE and elapsed >= row.clip.duration_seconds


def test_a_share_fetched_in_parallel_is_credited_one_clip_at_a_time(make_user, clock):
    [(client, items)] = _share(make_user, "parallel", DURATIONS)
    for item in items:
        client.get(reverse("ratings:item", args=[item.token]))
        _fetch(client, item)  # every clip of the share at the same instant
    started = clock.now
    longest = max(DURATIONS)
    clock.advance(longest + 0.1)

    # The old attack: report every item heard and submit it after one wait for the longest clip.
    accepted = [item for item in items if _listened(client, item).status_code == 200]
    assert len(accepted) == 1, "only the first clip's worth of listening is credited"
    refused = [item for item in items if item not in accepted]
    assert all(_old_rule_passes(item, clock.now) for item in refused), "control: the old rule passed them all"
    message = _listened(client, refused[0]).json()["error"]
    assert "counted on one clock across all your clips" in message and "can be marked heard in" in message
    assert _submit(client, accepted[0]).status_code == 302
    refused_submit = _submit(client, refused[0])
    assert refused_submit.status_code == 400
    assert "listen to the clip before submitting" in refused_submit.content.decode()
    assert AssignmentItem.objects.filter(completed_at__isnull=False).count() == 1

    # The script keeps polling every half second until everything is credited: real time must pass.
    # The script keeps trying the items still locked, waiting a second whenever one is refused: real time
    # must pass.
    pending = refused
    while pending:
        if _listened(client, pending[0]).status_code == 200:
            assert _submit(client, pending.pop(0)).status_code == 302
        else:
            clock.advance(1.0)
    needed = (clock.now - started).total_seconds()
    print(
        f"\nparallel script: {len(items)} items, {sum(DURATIONS):.1f} s of audio, longest {longest:.1f} s; "
        f"listening time needed under the one clock: {needed:.1f} s (the old rule: {longest:.1f} s)"
    )
    assert sum(DURATIONS) <= needed <= sum(DURATIONS) + 1.0
    stretches = sorted(AssignmentItem.objects.values_list("listening_from", "listening_until"))
    assert all(earlier[1] <= later[0] for earlier, later in zip(stretches, stretches[1:], strict=False))
    assert all(until <= clock.now for _, until in stretches)
    assert AssignmentItem.objects.filter(completed_at__isnull=False).count() == len(items)


def test_interleaved_byte_ranges_do_not_hear_two_clips_at_once(make_user, clock):
    [(client, items)] = _share(make_user, "ranges", [4.0, 6.0, 5.0])
    first, third, second = items = sorted(items, key=_duration)  # clips of 4, 6 and 5 s, in that order
    size = len(_fetch(client, first, "bytes=0-"))  # the whole of the first clip, to learn the file size
    half = size // 2
    # The other two, in alternating halves: a player streaming both at once.
    for item, header in ((second, f"bytes=0-{half - 1}"), (third, f"bytes=0-{half - 1}")):
        _fetch(client, item, header)
    for item, header in ((second, f"bytes={half}-"), (third, f"bytes={half}-")):
        _fetch(client, item, header)
    clock.advance(6.1)
    assert [_listened(client, item).status_code for item in items] == [200, 400, 400]
    assert all(_old_rule_passes(item, clock.now) for item in (second, third)), "control"
    clock.advance(3.85)  # 9.95 s after the fetches: the first two clips take 10 s in turn
    assert _listened(client, second).status_code == 400
    clock.advance(0.1)
    assert _listened(client, second).status_code == 200
    assert _listened(client, third).status_code == 400
    # Fetching the first clip again (a replay) gives no second stretch of credit.
    _fetch(client, first)
    clock.advance(4.9)
    assert _listened(client, third).status_code == 400
    clock.advance(0.2)
    assert _listened(client, third).status_code == 200
    credited = AssignmentItem.objects.order_by("listening_from").values_list("listening_from", "listening_until")
    assert [round((until - start).total_seconds(), 3) for start, until in credited] == [4.0, 6.0, 5.0]


def test_several_tabs_share_one_clock_but_raters_do_not(make_user, clock):
    (tab_one, items), (other_rater, other_items) = _share(
        make_user, "tabs", [8.0, 8.0, 8.0], rater_names=("tabs-rater", "tabs-other")
    )
    tab_two = Client()
    tab_two.force_login(AssignmentItem.objects.get(pk=items[0].pk).assignment.rater)
    _fetch(tab_one, items[0])
    clock.advance(1.0)
    _fetch(tab_two, items[1])
    _fetch(other_rater, other_items[0])  # another person listening at the same time
    clock.advance(8.0)
    assert _listened(tab_one, items[0]).status_code == 200
    assert _listened(tab_two, items[1]).status_code == 400
    assert _old_rule_passes(items[1], clock.now), "control: the second tab's clip passed the old rule"
    assert _listened(other_rater, other_items[0]).status_code == 200, "each rater has a clock of their own"
    clock.advance(7.0)  # 16 s after the first fetch: both tabs' clips heard in turn
    assert _listened(tab_two, items[1]).status_code == 200
    # A report from the other tab for an item already credited changes nothing.
    before = AssignmentItem.objects.get(pk=items[0].pk).listening_until
    assert _listened(tab_two, items[0]).status_code == 200
    assert AssignmentItem.objects.get(pk=items[0].pk).listening_until == before


def test_pages_opened_at_once_do_not_pass_the_median_time_rule(make_user, clock):
    """The minimum-median-time rule (20 s) against six item pages opened at once and one 21 s wait."""
    [(client, items)] = _share(make_user, "median", [1.0] * 6)
    for item in items:
        client.get(reverse("ratings:item", args=[item.token]))
        _fetch(client, item)
    opened = clock.now
    clock.advance(21.0)
    for item in items:
        assert _listened(client, item).status_code == 200  # six 1 s clips fit in 21 s
        assert _submit(client, item).status_code == 302
    done = AssignmentItem.objects.filter(pk__in=[item.pk for item in items])
    old_rule = median((row.completed_at - opened).total_seconds() for row in done)
    one_clock = median(row.seconds_spent for row in done)
    print(f"\nsix pages opened at once, one 21 s wait: median {old_rule:.1f} s before, {one_clock:.1f} s on one clock")
    assert old_rule >= 20, "control: the old time on page passed the rule"
    assert one_clock < 20
    assert sum(row.seconds_spent for row in done) == pytest.approx(21.0), "the wait counts once"
