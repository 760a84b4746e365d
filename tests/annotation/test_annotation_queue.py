"""The annotators' queue: balanced (each clip gets exactly N), nobody twice, per-annotator seeded order,
skips free the slot and keep the reason, returned work first, "k of n"; concurrent "next" never over-assigns."""

import threading
from collections import Counter

import pytest
from django.db import connection

from annotation.models import AnnotationTask
from annotation.selectors_workspace import campaign_clip_rows
from annotation.services.annotation_campaigns import (
    CampaignError,
    annotation_campaign_create,
    annotation_task_next,
    annotation_task_skip,
    annotator_clip_order,
    annotator_progress,
)
from annotation.services.annotation_reviews import annotation_task_return
from annotation.services.annotation_tasks import task_draft_save, task_submit
from tests.annotation.workspace_data import draft_of, workspace_build


def _finish(task, annotator):
    saved = task_draft_save(
        task=task, annotator=annotator, base_version=task.draft_version, draft=draft_of(("hum", ["fan"], ["low"]))
    )
    return task_submit(task=task, annotator=annotator, base_version=saved.version)


@pytest.mark.django_db
def test_every_clip_gets_exactly_n_annotations_and_nobody_gets_a_clip_twice(make_user):
    workspace = workspace_build(make_user, clip_count=5, annotator_count=4, per_clip=3)
    order_seen = {annotator.username: [] for annotator in workspace.annotators}
    for _round in range(6):
        for annotator in workspace.annotators:
            task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
            if task is not None:
                order_seen[annotator.username].append(task.clip_id)
                _finish(task, annotator)
    per_clip = Counter(AnnotationTask.objects.filter(status="submitted").values_list("clip_id", flat=True))
    assert per_clip == {clip.pk: 3 for clip in workspace.clips}
    for clips in order_seen.values():
        assert len(clips) == len(set(clips))
    assert sum(len(clips) for clips in order_seen.values()) == 15
    # A pull queue does not even out annotators' loads: who gets the last slots depends on their seeded orders
    # (an annotator who already had every clip left open gets nothing that round). What fewest-first does
    # promise: in each of the first three rounds nobody is turned away, so everyone annotates at least 3 clips.
    assert min(len(clips) for clips in order_seen.values()) >= 3
    assert all(annotation_task_next(campaign=workspace.campaign, annotator=a) is None for a in workspace.annotators)


@pytest.mark.django_db
def test_each_annotator_has_an_own_order_repeatable_from_the_seed(make_user):
    workspace = workspace_build(make_user, clip_count=12, annotator_count=3, per_clip=1, seed=42)
    clip_ids = [clip.pk for clip in workspace.clips]
    orders = [
        annotator_clip_order(campaign=workspace.campaign, annotator_id=a.pk, clip_ids=clip_ids)
        for a in workspace.annotators
    ]
    assert len({tuple(order) for order in orders}) == 3
    assert orders[0] == annotator_clip_order(
        campaign=workspace.campaign, annotator_id=workspace.annotators[0].pk, clip_ids=clip_ids
    )
    first = annotation_task_next(campaign=workspace.campaign, annotator=workspace.annotators[0])
    assert first.clip_id == orders[0][0]


@pytest.mark.django_db
def test_unfinished_work_comes_back_first_and_returned_work_before_it(make_user):
    workspace = workspace_build(make_user, clip_count=3, annotator_count=3, per_clip=2)
    annotator = workspace.annotators[0]
    first = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    assert annotation_task_next(campaign=workspace.campaign, annotator=annotator) == first  # double click: same clip
    _finish(first, annotator)
    second = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    annotation_task_return(
        task=AnnotationTask.objects.get(pk=first.pk), reviewer=workspace.reviewer, comment="Add the fan's attributes"
    )
    returned = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    assert (
        returned.pk == first.pk
        and returned.status == "returned"
        and returned.review_comment == "Add the fan's attributes"
    )
    assert second.pk != first.pk
    progress = annotator_progress(campaign=workspace.campaign, annotator=annotator)
    assert (progress.done, progress.quota, progress.in_progress, progress.returned) == (0, 2, 1, 1)


@pytest.mark.django_db
def test_a_skip_frees_the_slot_for_someone_else_and_the_admin_sees_the_reason(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=2, per_clip=1)
    first, second = workspace.annotators
    task = annotation_task_next(campaign=workspace.campaign, annotator=first)
    assert annotation_task_next(campaign=workspace.campaign, annotator=second) is None  # the only slot is taken
    with pytest.raises(CampaignError, match="comment"):
        annotation_task_skip(task=task, reason="other")
    annotation_task_skip(task=task, reason="silence", comment="nothing but hiss")
    assert annotation_task_next(campaign=workspace.campaign, annotator=first) is None  # never the same clip again
    assert annotation_task_next(campaign=workspace.campaign, annotator=second).clip_id == task.clip_id
    (row,) = campaign_clip_rows(campaign=workspace.campaign)
    assert [(t.annotator.username, t.skip_reason, t.skip_comment) for t in row.skips] == [
        ("ann0", "silence", "nothing but hiss")
    ]


@pytest.mark.django_db
def test_campaign_creation_refuses_what_cannot_work(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=2, per_clip=1)
    rater = make_user("rater-x", "rater")
    common = {"dataset": workspace.dataset, "clips": workspace.clips}
    with pytest.raises(CampaignError, match="at least 3 annotators") as raised:
        annotation_campaign_create(name="c2", annotators=workspace.annotators, annotations_per_clip=3, **common)
    assert raised.value.field == "annotators"
    with pytest.raises(CampaignError, match="not annotators: rater-x"):
        annotation_campaign_create(name="c3", annotators=[rater], annotations_per_clip=1, **common)
    with pytest.raises(CampaignError, match="already exists"):
        annotation_campaign_create(
            name="ws-campaign", annotators=workspace.annotators, annotations_per_clip=1, **common
        )
    stranger = make_user("stranger", "annotator")
    with pytest.raises(CampaignError, match="not an annotator of campaign"):
        annotation_task_next(campaign=workspace.campaign, annotator=stranger)


@pytest.mark.db_specific  # row locks (PostgreSQL) and immediate transactions (SQLite)
@pytest.mark.django_db(transaction=True)
def test_annotators_pressing_next_at_the_same_moment_never_over_assign_a_clip(make_user):
    # Given 8 annotators and 3 clips with 2 slots each: 6 slots for 8 simultaneous requests.
    workspace = workspace_build(make_user, clip_count=3, annotator_count=8, per_clip=2)
    barrier = threading.Barrier(len(workspace.annotators))
    results, errors = {}, []

    def press_next(annotator):
        try:
            barrier.wait(timeout=20)
            task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
            results[annotator.username] = task.clip_id if task else None
        except Exception as error:  # reported below; a thread cannot fail the test itself
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=press_next, args=(annotator,)) for annotator in workspace.annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not errors
    per_clip = Counter(AnnotationTask.objects.values_list("clip_id", flat=True))
    assert per_clip == {clip.pk: 2 for clip in workspace.clips}  # never 3
    assert sorted(clip for clip in results.values() if clip) == sorted(
        clip.pk for clip in workspace.clips for _ in range(2)
    )
    assert list(results.values()).count(None) == 2
