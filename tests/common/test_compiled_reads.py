"""common.compiled_reads: a read compiled once per process gives the objects the queryset itself gives.

The reference is the ORM's own evaluation of the same queryset (a path the compiled read does not take): every
concrete field of the row and of each select_related relation must be equal, relations must need no query, and the
SQL must be compiled only on the first read.
"""

from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.db.models.sql.compiler import SQLCompiler
from django.test import Client

from common.compiled_reads import CompiledRead
from ratings.models import AssignmentItem
from tests.ratings.study_data import (
    pairwise_study,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]

User = get_user_model()


def _user_read() -> CompiledRead:
    return CompiledRead(
        lambda user_id: User.objects.select_related("participant__study__campaign").filter(pk=user_id),
        user_id=-2_100_000_011,
    )


def _field_values(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def _participant_at_items():
    study = pairwise_study()
    client = Client()
    prolific_arrive(study, client=client)
    return walk_to_items(client, study)


def test_the_user_with_its_participation_study_and_campaign_equals_the_orm_read(django_assert_num_queries):
    participant = _participant_at_items()
    reference = User.objects.select_related("participant__study__campaign").get(pk=participant.user_id)

    with django_assert_num_queries(1):
        user = _user_read().first(user_id=participant.user_id)
        # every relation came with the row: reading them costs no query
        study = user.participant.study
        campaign = study.campaign

    assert _field_values(user) == _field_values(reference)
    assert _field_values(user.participant) == _field_values(reference.participant)
    assert _field_values(study) == _field_values(reference.participant.study)
    assert _field_values(campaign) == _field_values(reference.participant.study.campaign)
    assert study.created_at.tzinfo is not None  # converted as the ORM converts (aware datetimes)
    assert user._state.adding is False and user._state.db == "default"


def test_an_account_without_a_participation_reads_with_none_and_a_missing_one_as_none(make_user):
    rater = make_user("compiled-read-rater", "rater")
    read = _user_read()

    user = read.first(user_id=rater.pk)
    assert _field_values(user) == _field_values(User.objects.get(pk=rater.pk))
    assert getattr(user, "participant", None) is None
    assert read.first(user_id=10**9) is None


def test_the_sql_is_compiled_once_and_each_read_binds_its_own_values(make_user):
    first_user, second_user = make_user("compiled-first", "rater"), make_user("compiled-second", "rater")
    read = _user_read()
    with mock.patch.object(SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql) as as_sql:
        assert read.first(user_id=first_user.pk).username == "compiled-first"
        assert read.first(user_id=second_user.pk).username == "compiled-second"
        assert read.first(user_id=first_user.pk).username == "compiled-first"
    assert as_sql.call_count == 1


def test_an_item_read_with_several_markers_equals_the_orm_read():
    participant = _participant_at_items()
    item = share_items(participant)[0]
    campaign_id = participant.study.campaign_id
    read = CompiledRead(
        lambda token, user_id, campaign_id: AssignmentItem.objects.select_related("assignment", "clip", "pair")
        .filter(token=token, assignment__rater_id=user_id, assignment__campaign_id=campaign_id)
        .order_by(),
        token="marker-token",
        user_id=-2_100_000_012,
        campaign_id=-2_100_000_013,
    )
    found = read.first(token=item.token, user_id=participant.user_id, campaign_id=campaign_id)
    reference = AssignmentItem.objects.select_related("assignment", "clip", "pair").get(pk=item.pk)
    assert _field_values(found) == _field_values(reference)
    assert _field_values(found.assignment) == _field_values(reference.assignment)
    assert _field_values(found.pair) == _field_values(reference.pair)
    # a value bound to the wrong slot would find nothing or someone else's item
    assert read.first(token=item.token, user_id=participant.user_id, campaign_id=campaign_id + 1) is None
    assert read.first(token=item.token, user_id=participant.user_id + 1, campaign_id=campaign_id) is None


def test_a_marker_missing_from_the_sql_or_a_read_it_cannot_keep_is_refused(make_user):
    user = make_user("compiled-refused", "rater")
    ignoring_its_value = CompiledRead(lambda user_id: User.objects.filter(is_active=True), user_id=-2_100_000_014)
    with pytest.raises(ValueError, match="user_id"):
        ignoring_its_value.first(user_id=user.pk)

    locking = CompiledRead(lambda user_id: User.objects.select_for_update().filter(pk=user_id), user_id=-2_100_000_015)
    with pytest.raises(ValueError, match="plain reads"):
        locking.first(user_id=user.pk)

    with pytest.raises(TypeError, match="user_id"):
        _user_read().first(pk=user.pk)
