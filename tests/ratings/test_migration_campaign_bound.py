"""The migration to campaign-bound judgements keeps every existing row and gives each one a campaign.

Rows are written with the models as they were before (ratings 0002), then the migrations run forward.
"""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# db_specific: migrations run SQL of their own on each engine
pytestmark = pytest.mark.db_specific

# The corpus app is pinned too: later corpus migrations add NOT NULL columns the old models know nothing of.
BEFORE = [("ratings", "0002_headphone_reset"), ("annotation", "0003_tag_category_constraint")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_legacy_rows_all_survive_and_get_a_campaign():
    old = _migrate(BEFORE)
    user_model = old.get_model("auth", "User")
    dataset = old.get_model("annotation", "Dataset").objects.create(name="legacy-data")
    clip = old.get_model("annotation", "Clip").objects.create(dataset=dataset, external_id="x.wav")
    caption_model = old.get_model("annotation", "Caption")
    first, second = (
        caption_model.objects.create(clip=clip, text=f"text {n}", role="reference", author_kind="human", position=n)
        for n in (0, 1)
    )
    campaign = old.get_model("ratings", "Campaign").objects.create(name="kept", dataset=dataset, task_type="thumbs")
    campaign.captions.add(first)
    rater, judge = user_model.objects.create(username="old-rater"), user_model.objects.create(username="old-judge")
    assignment = old.get_model("ratings", "Assignment").objects.create(campaign=campaign, rater=rater)
    item_model = old.get_model("ratings", "AssignmentItem")
    other_clip = old.get_model("annotation", "Clip").objects.create(dataset=dataset, external_id="y.wav")
    for position, item_clip in ((1, clip), (2, other_clip)):
        item_model.objects.create(assignment=assignment, position=position, clip=item_clip, caption_order=[first.pk])
    rating_model = old.get_model("ratings", "ThumbsRating")
    in_campaign = rating_model.objects.create(rater=rater, caption=first, campaign=None, precision=3, recall=4)
    orphan = rating_model.objects.create(rater=rater, caption=second, campaign=None, precision=1, recall=2)
    pair = old.get_model("ratings", "CaptionPair").objects.create(
        clip=clip, caption_a=first, caption_b=second, split="HC", source_key="k"
    )
    vote_model = old.get_model("ratings", "PairwiseVote")
    web_vote = vote_model.objects.create(rater=rater, pair=pair, campaign=None, choice="a", source="web")
    imported = vote_model.objects.create(rater=judge, pair=pair, campaign=None, choice="b", source="import")

    new = _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    ratings = new.get_model("ratings", "ThumbsRating").objects
    assert ratings.count() == 2
    assert ratings.get(pk=in_campaign.pk).campaign.name == "kept", "back to the campaign that assigned the caption"
    legacy = ratings.get(pk=orphan.pk)
    assert (legacy.campaign.name, legacy.campaign.is_active, legacy.precision) == (
        "legacy-thumbs-legacy-data",
        False,
        1,
    )
    votes = new.get_model("ratings", "PairwiseVote").objects
    assert votes.count() == 2
    assert votes.get(pk=web_vote.pk).campaign.name == "legacy-pairwise-legacy-data"
    assert votes.get(pk=imported.pk).campaign is None, "imported votes belong to no campaign"
    tokens = list(new.get_model("ratings", "AssignmentItem").objects.values_list("token", flat=True))
    assert len(tokens) == 2 and len(set(tokens)) == 2 and all(len(token) == 16 for token in tokens)
