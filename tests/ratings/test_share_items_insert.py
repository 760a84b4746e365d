"""A share's items are inserted in one statement of only the columns a share draws
(ratings/services/campaigns.py, assignment_share_items_create): every other column must hold what a new item
holds (a column added to items would otherwise be left NULL, or fail the INSERT), and the items returned must be the
rows stored."""

import pytest

from ratings.models import AssignmentItem
from ratings.models_study import Participant, StudySlot
from ratings.services.study_shares import share_allocate
from tests.ratings.study_data import (
    pairwise_study,
    participant_of,
    prolific_arrive,
    study_media,  # noqa: F401 (a fixture)
    thumbs_study,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]

# What a share draws for each item; the reference for every other column is a new AssignmentItem's own defaults.
DRAWN = {"id", "assignment", "token", "position", "clip", "pair", "a_on_left", "caption_order"}


def _allocated(study):
    client, _response = prolific_arrive(study)
    participant = participant_of(client)
    Participant.objects.filter(pk=participant.pk).update(stage=Participant.Stage.INSTRUCTIONS)
    allocation = share_allocate(participant=Participant.objects.get(pk=participant.pk))
    assert not allocation.is_full
    # Each slot taken points at the participant's item of the slot's own clip or pair (one UPDATE sets them all).
    slots = StudySlot.objects.filter(participant=participant).select_related("item__assignment")
    assert len(slots) == study.items_per_participant
    for slot in slots:
        assert slot.item.assignment.rater_id == participant.user_id
        assert (slot.item.clip_id, slot.item.pair_id) == (slot.clip_id, slot.pair_id)
    return allocation.items


@pytest.mark.parametrize("make_study", [pairwise_study, thumbs_study], ids=["pairwise", "thumbs"])
def test_a_share_item_holds_a_new_items_values_besides_what_the_share_drew(make_study):
    study = make_study()
    items = _allocated(study)
    assert len(items) == study.items_per_participant + (study.attention_checks if make_study is pairwise_study else 0)
    fresh = AssignmentItem()
    stored = {item.pk: item for item in AssignmentItem.objects.filter(pk__in=[item.pk for item in items])}
    assert len(stored) == len(items)
    for item in items:
        row = stored[item.pk]
        for field in AssignmentItem._meta.concrete_fields:
            if field.name in DRAWN:
                assert getattr(item, field.attname) == getattr(row, field.attname), field.name
            else:
                assert getattr(row, field.attname) == getattr(fresh, field.attname), field.name
        assert not item._state.adding
    assert [row.position for row in sorted(stored.values(), key=lambda row: row.position)] == list(
        range(1, len(items) + 1)
    )
    assert len({item.token for item in items}) == len(items) and all(len(item.token) >= 16 for item in items)
    if make_study is pairwise_study:
        assert all(item.pair_id is not None and item.caption_order == [] for item in items)
        assert {item.a_on_left for item in items} <= {True, False}
    else:
        # Each clip's captions of the campaign (one of them replaced by a catch caption on a check item).
        for item in items:
            own = set(study.campaign.captions.filter(clip_id=item.clip_id).values_list("pk", flat=True))
            assert len(item.caption_order) == len(own) and len(set(item.caption_order) - own) <= 1
            assert item.pair_id is None and item.a_on_left is True

