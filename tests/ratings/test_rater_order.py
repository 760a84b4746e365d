"""Order independence: no list a rater receives is ordered by anything the rater must not learn.

Four raters rate a THumBS campaign (24 clips, a human caption and four systems' captions each) and a
pairwise campaign (24 pairs: 6 each of HC, HI as gold items, HM, MM), answer everything, and then read
every list they can get as themselves: assignment items, THumBS ratings and votes (the API, all pages),
studies (the API and the home page), their workbook's rows and the entries of their zip. For each list
(tests/ratings/order_association.py) the position of a row must not go with the row's database ids, split,
gold flag, author kind or system: Kendall's tau with each |tau| < 0.3 (pooled over the raters), neighbours
sharing a split or system and the human caption coming first no more often than chance (+0.15).

The secret random source is made repeatable for the test (seeded `secrets.choice` and `secrets.token_bytes`,
which draw the assignments' order keys and tokens), so the figures are the same on every run. The last tests make the
order come from the database (bypassing the projection, or not shuffling) and watch the checks fail.
"""

import io
import random
import zipfile

import openpyxl
import pytest
from django.urls import reverse

from corpus.models import Caption, Clip, Dataset
from ratings import projection
from ratings.models import Assignment, AssignmentItem, PairwiseVote, campaign_rater_code
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import CaptionScores, pairwise_item_submit, thumbs_item_submit
from ratings.services.workbooks import rater_workbook_export, rater_workbook_zip
from tests.ratings.campaign_data import (
    clip_audio_attach,
    corpus_build,
    headphone_pass_give,
    listened_give,
    secrets_made_repeatable,
)
from tests.ratings.order_association import Association, tau
from tests.ratings.rater_api import api_rows, rater_client
from tests.ratings.workbook_helpers import caption_rows

pytestmark = pytest.mark.django_db

SPLIT_INDEX = {"HC": 0, "HI": 1, "HM": 2, "MM": 3}
RATERS = 4


def _world(make_user, *, answer: bool = True):
    dataset, clips, systems = corpus_build(
        name="order-data", clip_count=30, reference_count=4, system_names=[f"order-system-{n}" for n in range(4)]
    )
    for clip in clips[:24]:
        clip_audio_attach(clip, seconds=0.2)
    raters = [make_user(f"order-rater-{number}", "rater") for number in range(RATERS)]
    for rater in raters:
        headphone_pass_give(rater)
    thumbs = campaign_setup(
        name="order-thumbs",
        title="Caption quality",
        dataset=dataset,
        clips=clips[:24],
        task_type="thumbs",
        systems=systems,
        human_captions_per_clip=1,
        judgements_per_item=RATERS,
        raters=raters,
    )
    pairwise = campaign_setup(
        name="order-pairs",
        title="Which is better",
        dataset=dataset,
        clips=clips[:24],  # the HI pairs' other captions come from clips 24-29, which nobody rates
        task_type="pairwise",
        split_counts={"HC": 6, "HI": 6, "HM": 6, "MM": 6},
        gold_from_hi=True,
        judgements_per_item=RATERS,
        raters=raters,
    )
    if answer:
        chooser = random.Random(5)
        for rater in raters:
            for item in Assignment.objects.get(campaign=thumbs, rater=rater).items.all():
                scores = [
                    CaptionScores(caption_id=caption_id, precision=chooser.randint(1, 5), recall=chooser.randint(1, 5))
                    for caption_id in item.caption_order
                ]
                thumbs_item_submit(item=listened_give(item), scores=scores, synthesized="no", seen_version=0)
            for item in Assignment.objects.get(campaign=pairwise, rater=rater).items.all():
                side = chooser.choice(["left", "right", "none"])
                pairwise_item_submit(item=listened_give(item), side=side, seen_version=0)
    return thumbs, pairwise, raters


@pytest.fixture
def repeatable_secrets(monkeypatch):
    secrets_made_repeatable(monkeypatch, 17)


@pytest.fixture
def world(make_user, repeatable_secrets, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return _world(make_user)


# --- what each list's rows are on the server -----------------------------------------------------------


def _pair_figures(association: Association, items: list[AssignmentItem]) -> None:
    association.rows += len(items)
    association.add_tau("pair id", [item.pair_id for item in items])
    association.add_tau("clip id", [item.clip_id for item in items])
    association.add_tau("split", [SPLIT_INDEX[item.pair.split] for item in items])
    association.add_tau("gold flag", [int(bool(item.pair.gold_choice)) for item in items])
    association.add_adjacency("split", [item.pair.split for item in items])
    gold = [item for item in items if item.pair.gold_choice]
    association.add_first(
        "gold answer on the left (of gold items)", sum(item.a_on_left for item in gold), len(gold), 0.5
    )


def _caption_figures(association: Association, groups: list[list[Caption]]) -> None:
    """Captions in rows, grouped by item in the rater's order (ratings list, workbook rows)."""
    captions = [caption for group in groups for caption in group]
    association.rows += len(captions)
    association.add_tau("caption id", [caption.pk for caption in captions])
    association.add_tau("clip id", [caption.clip_id for caption in captions])
    association.add_tau("author kind (human = 1)", [int(caption.author_kind == "human") for caption in captions])
    association.add_tau("system id", [caption.system_id or 0 for caption in captions])
    association.add_adjacency("author (system or human)", [caption.system_id or "human" for caption in captions])
    humans_first = sum(group[0].author_kind == "human" for group in groups)
    association.add_first("human caption", humans_first, len(groups), 1 / 5)
    within = [index for group in groups for index, caption in enumerate(group) if caption.system_id is not None]
    association.add_tau("place within the item of machine captions", within)


def _assert_blind_order(association: Association, *, minimum_rows: int = RATERS * 24) -> None:
    print("\n" + association.report())
    assert association.rows >= minimum_rows, "the lists were read, so the figures are not vacuous"
    assert association.problems() == [], association.report()


# --- the lists ------------------------------------------------------------------------------------------
# (One world serves every list: building and answering it is what takes the time.)


def _item_associations(pairwise, thumbs, raters) -> list[Association]:
    pairs, clips = Association("items: pairwise study"), Association("items: THumBS study")
    for rater in raters:
        client = rater_client(rater)
        rows = api_rows(client, "/api/assignment-items/", study=campaign_rater_code(pairwise.pk))
        _pair_figures(pairs, [AssignmentItem.objects.select_related("pair").get(token=row["token"]) for row in rows])
        rows = api_rows(client, "/api/assignment-items/", study=campaign_rater_code(thumbs.pk))
        items = [AssignmentItem.objects.get(token=row["token"]) for row in rows]
        clips.rows += len(items)
        clips.add_tau("clip id", [item.clip_id for item in items])
        # The captions of each item come in the rater's order: the human one first no more than by chance.
        groups = [
            [Caption.objects.get(clip=item.clip, text=caption["text"]) for caption in row["captions"]]
            for item, row in zip(items, rows, strict=True)
        ]
        clips.add_first("human caption", sum(group[0].author_kind == "human" for group in groups), len(groups), 0.2)
    return [pairs, clips]


def _vote_association(pairwise, raters) -> Association:
    association = Association("votes")
    for rater in raters:
        rows = api_rows(rater_client(rater), "/api/pairwise-votes/", study=campaign_rater_code(pairwise.pk))
        assert len(rows) == 24
        _pair_figures(
            association, [AssignmentItem.objects.select_related("pair").get(token=row["item"]) for row in rows]
        )
    return association


def _rating_association(thumbs, raters) -> Association:
    association = Association("THumBS ratings")
    for rater in raters:
        rows = api_rows(rater_client(rater), "/api/thumbs-ratings/", study=campaign_rater_code(thumbs.pk))
        assert len(rows) == 24 * 5
        groups: dict[str, list[Caption]] = {}
        for row in rows:
            item = AssignmentItem.objects.get(token=row["item"])
            groups.setdefault(row["item"], []).append(Caption.objects.get(pk=item.caption_order[row["caption"] - 1]))
        _caption_figures(association, list(groups.values()))
    return association


def _workbook_associations(thumbs, raters) -> list[Association]:
    rows_association, zip_association = Association("workbook rows"), Association("zip entries")
    for rater in raters:
        export = rater_workbook_export(campaign=thumbs, rater=rater, assign_if_missing=False)
        sheet = openpyxl.load_workbook(io.BytesIO(next(iter(export.workbooks.values()))))["Assessment"]
        groups: dict[str, list[Caption]] = {}
        for _, record_id, text, _ in caption_rows(sheet):
            item = AssignmentItem.objects.get(token=record_id)
            groups.setdefault(record_id, []).append(Caption.objects.get(clip_id=item.clip_id, text=text))
        assert len(groups) == 24
        _caption_figures(rows_association, list(groups.values()))
        stream = io.BytesIO()
        rater_workbook_zip(export=export, stream=stream)
        with zipfile.ZipFile(stream) as archive:
            audio = [name for name in archive.namelist() if name.startswith("audio/")]
        assert len(audio) == 24
        clip_ids = [AssignmentItem.objects.get(token=name.split("/")[1].removesuffix(".wav")).clip_id for name in audio]
        zip_association.rows += len(clip_ids)
        zip_association.add_tau("clip id", clip_ids)
    return [rows_association, zip_association]


def test_no_rater_visible_list_is_ordered_by_ids_split_gold_author_or_system(world):
    """Items, votes, ratings (the API, every page), workbook rows and zip entries, read as each rater."""
    thumbs, pairwise, raters = world
    associations = [
        *_item_associations(pairwise, thumbs, raters),
        _vote_association(pairwise, raters),
        _rating_association(thumbs, raters),
        *_workbook_associations(thumbs, raters),
    ]
    for association in associations:
        print("\n" + association.report())
        assert association.rows >= RATERS * 24, f"{association.name}: read, so the figures are not vacuous"
    problems = {association.name: association.problems() for association in associations if association.problems()}
    assert problems == {}, problems
    # The API's rows are exactly the projection's, in its order (so the figures are the projection's).
    rater = raters[0]
    assignments = Assignment.objects.filter(rater=rater)
    client = rater_client(rater)
    assert [row["token"] for row in api_rows(client, "/api/assignment-items/")] == [
        item.token for item in projection.items(assignments)
    ]
    assert [(row["item"], row["caption"]) for row in api_rows(client, "/api/thumbs-ratings/")] == [
        (row.item.token, row.number) for row in projection.ratings(assignments)
    ]
    assert [row["item"] for row in api_rows(client, "/api/pairwise-votes/")] == [
        row.item.token for row in projection.votes(assignments)
    ]


# --- studies ----------------------------------------------------------------------------------------------

TITLES = [
    "Kestrel",
    "Alder",
    "Quince",
    "Heron",
    "Birch",
    "Otter",
    "Maple",
    "Dunlin",
    "Yarrow",
    "Fennel",
    "Lichen",
    "Sorrel",
]


def test_studies_are_listed_by_title_then_in_the_order_each_rater_started_them(make_user, repeatable_secrets):
    """Studies listed by their internal name or creation would follow ids; the list follows the rater."""
    dataset = Dataset.objects.create(name="studies-data")
    raters = [make_user(f"studies-rater-{number}", "rater") for number in range(RATERS)]
    for rater in raters:
        headphone_pass_give(rater)
    titles = list(TITLES)
    random.Random(3).shuffle(titles)
    campaigns = []
    for number, title in enumerate(titles):  # names (and ids) in creation order, titles not
        clip = Clip.objects.create(dataset=dataset, external_id=f"s{number}.wav", duration_seconds=1.0)
        Caption.objects.create(
            clip=clip, text=f"study clip {number}", role="reference", author_kind="human", position=0
        )
        campaigns.append(
            campaign_setup(
                name=f"study-{number:02d}",
                title=title,
                dataset=dataset,
                clips=[clip],
                task_type="thumbs",
                human_captions_per_clip=1,
                judgements_per_item=RATERS,
                raters=raters,
            )
        )
    association = Association("studies")
    for index, rater in enumerate(raters):
        client = rater_client(rater)
        listed = [row["study"] for row in api_rows(client, "/api/assignments/")]
        assert listed == sorted(titles, key=str.casefold), "not started: by title"
        page = client.get(reverse("ratings:home")).content.decode()
        assert [page.index(f"<td>{title}</td>") for title in listed] == sorted(
            page.index(f"<td>{title}</td>") for title in listed
        ), "the home page lists them in the same order"
        started = list(campaigns)
        random.Random(index).shuffle(started)
        for campaign in started:  # the rater opens the studies in an order of their own
            item = Assignment.objects.get(campaign=campaign, rater=rater).items.get()
            client.get(reverse("ratings:item", args=[item.token]))
        rows = api_rows(client, "/api/assignments/")
        assert [row["study_id"] for row in rows] == [campaign_rater_code(campaign.pk) for campaign in started]
        association.rows += len(rows)
        association.add_tau("campaign id", [campaign.pk for campaign in started])
    title_order = sorted(campaigns, key=lambda campaign: campaign.title.casefold())
    by_title = tau([campaign.pk for campaign in title_order])
    # By title, the order is the admins' titles' (here drawn at random): never the names' or the ids'.
    print(f"\nstudies not started, by title: tau(position, campaign id) {by_title:+.3f} (titles drawn at random)")
    assert [campaign.pk for campaign in title_order] != sorted(campaign.pk for campaign in campaigns)
    _assert_blind_order(association, minimum_rows=RATERS * len(TITLES))


# --- the checks fail when the order comes from the database ---------------------------------------------------


def _database_order_votes(assignments) -> list[projection.RaterVote]:
    """What the endpoint did before: the rater's votes by pair id."""
    items = {(item.assignment_id, item.pair_id): item for item in projection.items(assignments)}
    rows = []
    for assignment in assignments:
        for vote in PairwiseVote.objects.filter(campaign=assignment.campaign, rater=assignment.rater).order_by(
            "pair_id"
        ):
            item = items[(assignment.pk, vote.pair_id)]
            rows.append(
                projection.RaterVote(
                    item=item, side=projection.vote_side(choice=vote.choice, a_on_left=item.a_on_left), vote=vote
                )
            )
    return rows


def _pair_list_association(name: str, raters, url: str, study: str, token_key: str) -> Association:
    association = Association(name)
    for rater in raters:
        rows = api_rows(rater_client(rater), url, study=study)
        items = [AssignmentItem.objects.select_related("pair").get(token=row[token_key]) for row in rows]
        _pair_figures(association, items)
    print("\n" + association.report())
    return association


def test_the_checks_fail_when_the_order_comes_from_the_database(world, monkeypatch):
    """The same checks against the order the API had before (votes by pair id) and items by id: both caught."""
    _, pairwise, raters = world
    with monkeypatch.context() as patched:
        patched.setattr(projection, "votes", _database_order_votes)
        votes = _pair_list_association(
            "votes by pair id (bypassed)", raters, "/api/pairwise-votes/", campaign_rater_code(pairwise.pk), "item"
        )
    problems = " ".join(votes.problems())
    assert (
        "tau(position, pair id)" in problems
        and "adjacent same split" in problems
        and "tau(position, split)" in problems
    )

    def database_order(assignments):
        return list(
            AssignmentItem.objects.filter(assignment__in=assignments).order_by("assignment_id", "pair_id", "pk")
        )

    monkeypatch.setattr(projection, "items", database_order)
    items = _pair_list_association(
        "items by id (bypassed)", raters, "/api/assignment-items/", campaign_rater_code(pairwise.pk), "token"
    )
    problems = " ".join(items.problems())
    assert "tau(position, pair id)" in problems and "adjacent same split" in problems
