"""Simulated raters' answers (the demo's study): stored marked as simulated, checked, never for a person."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from demo.dataset import simulated_users_ensure
from demo.simulated_answers import SimulatedAnswer, simulated_answers_store
from ratings.models import AssignmentItem, ItemEvent, PairwiseVote, Source, ThumbsRating
from ratings.projection import item_caption_ids
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import JudgementError
from tests.ratings.campaign_data import corpus_build


def _answers(campaign, *, choice="a", precision=4):
    shown = timezone.now() - timedelta(days=1)
    answers = []
    for item in AssignmentItem.objects.filter(assignment__campaign=campaign).select_related("assignment__rater"):
        scores = {
            caption_id: {"precision": precision, "recall": 3, "fluency": "-0.5", "conciseness": 0, "irrelevance": 0}
            for caption_id in item.caption_order
        }
        answers.append(SimulatedAnswer(item, shown, 1.5, 20.0, scores=scores, choice=choice))
    return answers


@pytest.fixture
def studies(db):
    dataset, clips, _ = corpus_build(clip_count=4)
    (simulated,) = simulated_users_ensure(usernames=["sim-test"], role="rater")
    thumbs = campaign_setup(name="sim-thumbs", dataset=dataset, task_type="thumbs", clips=clips[:2], raters=[simulated])
    pairwise = campaign_setup(
        name="sim-pairs",
        dataset=dataset,
        task_type="pairwise",
        clips=clips[:2],
        split_counts={"HC": 2},
        raters=[simulated],
    )
    return thumbs, pairwise


def test_simulated_answers_are_stored_marked_as_simulated(studies):
    thumbs, pairwise = studies
    simulated_answers_store(campaign=thumbs, answers=_answers(thumbs))
    simulated_answers_store(campaign=pairwise, answers=_answers(pairwise, choice="b"))

    ratings = ThumbsRating.objects.filter(campaign=thumbs)
    assert ratings.count() == sum(
        len(item.caption_order) for item in AssignmentItem.objects.filter(assignment__campaign=thumbs)
    )
    assert set(ratings.values_list("source", flat=True)) == {Source.SIMULATED}
    assert all(rating.precision == 4 and rating.fluency == Decimal("-0.5") for rating in ratings)
    votes = PairwiseVote.objects.filter(campaign=pairwise)
    assert votes.count() == 2 and set(votes.values_list("source", "choice")) == {(Source.SIMULATED, "b")}
    for item in AssignmentItem.objects.filter(assignment__campaign__in=[thumbs, pairwise]):
        # no audio was served: the record says simulated and holds no byte ranges
        assert item.audio_served == {"simulated": True} and item.completed_at and item.listened_at
        (event,) = item.events.all()
        assert event.kind == ItemEvent.Kind.SIMULATED
        if item.pair_id:  # in the rater's terms: the side the simulated rater chose on their page
            left_is_b = item_caption_ids(item)[0] == item.pair.caption_b_id
            assert event.answer == {"side": "left" if left_is_b else "right"}
        else:
            assert [caption["number"] for caption in event.answer["captions"]] == list(
                range(1, len(item.caption_order) + 1)
            )


def test_a_person_never_gets_a_simulated_answer(studies, make_user):
    thumbs, _ = studies
    from ratings.services.campaigns import campaign_add_raters

    person = make_user("person", "rater")
    campaign_add_raters(campaign=thumbs, raters=[person])
    answers = [answer for answer in _answers(thumbs) if answer.item.assignment.rater == person]
    with pytest.raises(JudgementError, match="only stored for simulated accounts, not for person"):
        simulated_answers_store(campaign=thumbs, answers=answers)
    assert not ThumbsRating.objects.filter(rater=person).exists()


def test_simulated_values_are_checked_as_the_rating_pages_check_them(studies):
    thumbs, _ = studies
    with pytest.raises(JudgementError, match="precision must be a whole number from 1 to 5"):
        simulated_answers_store(campaign=thumbs, answers=_answers(thumbs, precision=7))
    assert not ThumbsRating.objects.filter(campaign=thumbs).exists()
    assert not AssignmentItem.objects.filter(assignment__campaign=thumbs, completed_at__isnull=False).exists()
