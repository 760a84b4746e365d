"""common.compiled_reads: a read compiled once per process gives the objects the queryset itself gives.

The reference is the ORM's own evaluation of the same queryset (a path the compiled read does not take): every
concrete field of the row and of each select_related relation must be equal, relations must need no query, and the
SQL must be compiled only on the first read.
"""

from datetime import UTC, datetime, timedelta, timezone
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Case, Count, Min, Value, When
from django.db.models.sql.compiler import SQLCompiler
from django.db.transaction import TransactionManagementError
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

    as_tuples = CompiledRead(lambda user_id: User.objects.filter(pk=user_id).values_list("pk"), user_id=-2_100_000_015)
    with pytest.raises(ValueError, match="values_list"):
        as_tuples.first(user_id=user.pk)

    as_dicts = CompiledRead(lambda user_id: User.objects.filter(pk=user_id).values("pk"), user_id=-2_100_000_016)
    with pytest.raises(TypeError, match="row"):
        as_dicts.first(user_id=user.pk)
    with pytest.raises(TypeError, match="first"):
        _user_read().row(user_id=user.pk)


def _joined_read() -> CompiledRead:
    return CompiledRead(
        lambda user_id, until: User.objects.filter(pk=user_id, date_joined__lte=until).values("pk", "date_joined"),
        user_id=-2_100_000_017,
        until=datetime(1901, 2, 3, 4, 5, 6, 789012, tzinfo=UTC),
    )


def test_a_datetime_marker_is_found_and_its_value_bound_as_the_backend_adapts_it(make_user):
    user = make_user("compiled-datetime", "rater")
    joined = User.objects.get(pk=user.pk).date_joined
    read = _joined_read()
    elsewhere = timezone(timedelta(hours=-5))  # the same instant written in another zone
    for until in (joined, joined + timedelta(hours=1), joined - timedelta(seconds=1), joined + timedelta(hours=-1)):
        until = until.astimezone(elsewhere)
        reference = User.objects.filter(pk=user.pk, date_joined__lte=until).values("pk", "date_joined").first()
        assert read.row(user_id=user.pk, until=until) == reference
    assert read.row(user_id=user.pk, until=joined + timedelta(hours=1)) == {"pk": user.pk, "date_joined": joined}
    assert read.row(user_id=user.pk, until=joined - timedelta(seconds=1)) is None

    # the slot holds the marker as the backend adapted it: a str on SQLite, a datetime on PostgreSQL
    compiled = read._compiled_for("default")
    ((slot, wrapper),) = compiled.slots["until"]
    assert compiled.params[slot] == connection.ops.adapt_datetimefield_value(read._markers["until"])
    assert wrapper is None


def test_rows_give_every_row_of_a_values_read_in_its_order(make_user):
    users = [make_user(f"compiled-rows-{number}", "rater") for number in range(3)]
    read = CompiledRead(
        lambda first_id: User.objects.filter(pk__gte=first_id).order_by("-pk").values("pk", "username"),
        first_id=-2_100_000_018,
    )
    reference = list(User.objects.filter(pk__gte=users[1].pk).order_by("-pk").values("pk", "username"))
    assert read.rows(first_id=users[1].pk) == reference
    assert [row["username"] for row in reference] == ["compiled-rows-2", "compiled-rows-1"]


def test_tuples_of_integer_and_text_columns_equal_the_orm_rows_and_other_columns_are_refused(make_user):
    """The driver's rows, not converted: the same values and the same Python types as the ORM's, aggregates and
    NULLs included; a column a converter would change (a time, a bool that SQLite gives as 0/1) is refused."""
    users = [make_user(f"compiled-tuples-{number}", "rater") for number in range(3)]
    users[2].groups.clear()

    def build(first_id):
        return (
            User.objects.filter(pk__gte=first_id)
            .order_by("pk")
            .values("pk", "username")
            .annotate(groups_count=Count("groups"), lowest_group=Min("groups__pk"))
        )

    read = CompiledRead(build, first_id=-2_100_000_023)
    reference = list(build(users[0].pk).values_list("pk", "username", "groups_count", "lowest_group"))
    tuples = read.tuples(first_id=users[0].pk)
    assert tuples == reference
    assert [tuple(map(type, row)) for row in tuples] == [tuple(map(type, row)) for row in reference]
    assert [row[1] for row in tuples] == [user.username for user in users]
    assert tuples[2][2:] == (0, None)

    for column in ("date_joined", "is_active"):
        timed = CompiledRead(
            lambda user_id, c=column: User.objects.filter(pk=user_id).values("pk", c), user_id=-2_100_000_024
        )
        with pytest.raises(TypeError, match="integer and text"):
            timed.tuples(user_id=users[0].pk)


@pytest.mark.django_db(transaction=True)
def test_a_locking_read_runs_only_inside_a_transaction(make_user):
    user = make_user("compiled-lock", "rater")
    read = CompiledRead(
        lambda user_id: User.objects.select_for_update().filter(pk=user_id).values("pk"), user_id=-2_100_000_019
    )
    with transaction.atomic():
        assert read.row(user_id=user.pk) == {"pk": user.pk}
    with pytest.raises(TransactionManagementError):
        read.row(user_id=user.pk)

    with pytest.raises(TypeError, match="user_id"):
        _user_read().first(pk=user.pk)


def test_a_marker_the_backend_typed_binds_its_value_typed_alike(make_user):
    """PostgreSQL's backend types a Value()'s int (psycopg's Int4): the marker is found there, the value typed so."""
    user = make_user("compiled-typed", "rater")

    def build(user_id, shown):
        return User.objects.filter(pk=user_id).values("pk", shown=Case(When(pk__gt=0, then=Value(shown)), default=0))

    read = CompiledRead(build, user_id=-2_100_000_020, shown=2_100_000_021)
    for shown in (7, 12):
        assert read.row(user_id=user.pk, shown=shown) == build(user.pk, shown).get() == {"pk": user.pk, "shown": shown}
    ((_, wrapper),) = read._compiled_for("default").slots["shown"]
    assert (wrapper.__name__ if wrapper else None) == ("Int4" if connection.vendor == "postgresql" else None)


def test_a_missing_value_is_refused_rather_than_compared_with_null(make_user):
    """The ORM turns `pk=None` into IS NULL; the compiled SQL's `= %s` would silently match nothing."""
    make_user("compiled-none", "rater")
    with pytest.raises(ValueError, match="user_id"):
        _user_read().first(user_id=None)
