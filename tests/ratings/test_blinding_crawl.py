"""Blinding, adversarially: crawl everything a rater can reach and find no trace of authorship or origin.

A rater with a THumBS study and a pairwise study (HC, HI with gold items, HM, MM) has answered some
items and left a draft. Starting from the home page, the rater's page and the API root, the crawl
(tests/ratings/blinding_crawl.py) follows every link, script, stylesheet, form, report URL, JSON URL
and redirect, and also reads the workbook zip an admin downloads for the rater and the signed audio
links inside it. Nowhere may a caption, pair, clip, item or judgement database id, a system name, a
source label, an author-kind word, a split code, a clip external id, the dataset name, the campaign
name or anything about gold items appear. Each kind of leak, injected on purpose, makes the crawl fail.
"""

import re
import struct

import pytest
from django.core.files.base import ContentFile
from django.test import Client
from django.urls import reverse

from corpus.models import Caption, Clip, Dataset
from ratings.models import AssignmentItem, Campaign, CaptionPair, PairwiseVote, ThumbsRating
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import (
    CaptionScores,
    item_draft_save,
    pairwise_item_submit,
    thumbs_item_submit,
)
from tests.ratings.blinding_crawl import RaterCrawl, Secrets
from tests.ratings.campaign_data import headphone_pass_give
from tests.ratings.crawl_corpus import DATASET, SYSTEMS, crawl_corpus_build, ids_start_at
from tests.ratings.test_judgements import _listened

pytestmark = pytest.mark.django_db

# Rows get ids far from anything else on the page, so a leaked id is recognisable as a whole number.
ID_STARTS = {
    Clip: 7_300_000,
    Caption: 7_100_000,
    CaptionPair: 7_200_000,
    AssignmentItem: 7_400_000,
    ThumbsRating: 7_600_000,
    PairwiseVote: 7_700_000,
}


@pytest.fixture
def blind_world(make_user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    for model, start in ID_STARTS.items():
        ids_start_at(model, start)
    # Clips 5 and 6 only give the HI pairs their other caption.
    dataset, systems = crawl_corpus_build(clip_count=6)
    clips = list(dataset.clips.order_by("pk"))
    rater = make_user("listener", "rater")
    headphone_pass_give(rater)
    headphone_pass_give(rater, kind="huggins")
    thumbs = campaign_setup(
        name=f"{DATASET}-thumbs",
        dataset=dataset,
        clips=clips[:4],
        task_type="thumbs",
        systems=systems,
        human_captions_per_clip=1,
        judgements_per_item=1,
        raters=[rater],
    )
    pairwise = campaign_setup(
        name=f"{DATASET}-pairs",
        dataset=dataset,
        clips=clips[:4],
        task_type="pairwise",
        split_counts={"HC": 2, "HI": 2, "HM": 2, "MM": 2},
        gold_from_hi=True,
        judgements_per_item=1,
        raters=[rater],
        requires_huggins=True,
    )
    # Some answers, one of them on a gold item, one changed once, and a draft.
    thumbs_items = list(thumbs.assignments.get().items.order_by("position"))
    item = _listened(thumbs_items[0])
    scores = [CaptionScores(caption_id=caption_id, precision=3, recall=4) for caption_id in item.caption_order]
    thumbs_item_submit(item=item, scores=scores, synthesized="no", seen_version=0)
    item_draft_save(item=thumbs_items[1], draft={"precision_1": "2", "comment_1": "hiss"}, seen_version=0)
    pair_items = list(pairwise.assignments.get().items.order_by("position"))
    gold_item = next(each for each in pair_items if each.pair.gold_choice)
    for each in [gold_item, *[other for other in pair_items if other != gold_item][:2]]:
        pairwise_item_submit(item=_listened(each), side="left", seen_version=0)
    pairwise_item_submit(item=gold_item, side="right", seen_version=1)
    assert CaptionPair.objects.filter(gold_choice="a").count() == 2
    return dataset, rater, thumbs, pairwise


def _secrets(dataset: Dataset) -> Secrets:
    clips = Clip.objects.filter(dataset=dataset)
    captions = Caption.objects.filter(clip__dataset=dataset)
    pairs = CaptionPair.objects.filter(clip__dataset=dataset)
    names = {dataset.name, *SYSTEMS, *Campaign.objects.values_list("name", flat=True)}
    names |= {external_id for external_id in clips.values_list("external_id", flat=True)}
    names |= {external_id.rsplit(".", 1)[0] for external_id in clips.values_list("external_id", flat=True)}
    names |= set(captions.exclude(source_label="").values_list("source_label", flat=True))
    names |= set(pairs.values_list("source_key", flat=True))
    ids = set(clips.values_list("pk", flat=True)) | set(captions.values_list("pk", flat=True))
    ids |= set(pairs.values_list("pk", flat=True)) | set(AssignmentItem.objects.values_list("pk", flat=True))
    ids |= set(ThumbsRating.objects.values_list("pk", flat=True)) | set(
        PairwiseVote.objects.values_list("pk", flat=True)
    )
    assert min(ids) >= 7_100_000, "the ids are recognisable"
    return Secrets(names=names, ids=ids)


def _crawl(world, make_user) -> RaterCrawl:
    dataset, rater, thumbs, _ = world
    client = Client()
    client.force_login(rater)
    crawl = RaterCrawl(client=client, secrets=_secrets(dataset))
    crawl.run(reverse("annotation:home"), reverse("ratings:home"), "/api/")
    admin = Client()
    admin.force_login(make_user("organiser", staff=True))
    response = admin.get(reverse("ratings:campaign_workbook_download", args=[thumbs.pk, rater.pk]))
    assert response.status_code == 200
    name = re.search(r'filename="([^"]+)"', response["Content-Disposition"]).group(1)
    crawl.files_inspect(b"".join(response.streaming_content), name=name, anonymous_client=Client())
    return crawl


def test_nothing_a_rater_can_reach_unblinds_anything(blind_world, make_user):
    crawl = _crawl(blind_world, make_user)
    assert crawl.findings == []
    # Coverage: every item page (form and submitted view), both studies, the API, audio, drafts, files.
    item_count = AssignmentItem.objects.count()
    visited = {url for _, url in crawl.seen}
    for item in AssignmentItem.objects.all():
        assert reverse("ratings:item", args=[item.token]) in visited
        assert reverse("ratings:item_audio", args=[item.token]) in visited
    assert any("?change=1" in url for url in visited), "the change-my-answer path was followed"
    assert {"/api/assignment-items/", "/api/assignments/", "/api/thumbs-ratings/", "/api/pairwise-votes/"} <= visited
    assert crawl.kinds["page"] >= item_count + 3
    assert crawl.kinds["json"] >= 10 and crawl.kinds["audio"] >= item_count and crawl.kinds["static"] >= 5
    assert crawl.kinds["workbook"] == 2 and crawl.kinds["signed audio link"] == 4 and crawl.kinds["audio file"] == 4
    assert not [status for status in crawl.statuses if status >= 500]
    print(
        f"\nblinding crawl: {crawl.requests} requests ({dict(crawl.kinds)}), statuses {dict(crawl.statuses)}, "
        f"{len(visited)} distinct URLs"
    )


# --- the crawl must fail when something leaks ------------------------------------------------------------


def _leak_api_caption_ids(monkeypatch):
    from ratings import serializers

    original = serializers.rater_item_captions

    def leaky(item, captions_by_id):
        rows = original(item, captions_by_id)
        ids = list(item.caption_order) if item.pair_id is None else [item.pair.caption_a_id, item.pair.caption_b_id]
        return [{**row, "ref": caption_id} for row, caption_id in zip(rows, ids, strict=False)]

    monkeypatch.setattr(serializers, "rater_item_captions", leaky)
    return "database id 71"


def _leak_page_campaign_name(monkeypatch):
    monkeypatch.setattr(Campaign, "rater_title", property(lambda campaign: campaign.name))
    return f"name '{DATASET}"


def _leak_audio_file_name(monkeypatch):
    from ratings import views

    original = views.item_audio_response

    def leaky(*, item, range_header, head=False):
        response = original(item=item, range_header=range_header, head=head)
        response["Content-Disposition"] = f'inline; filename="{item.clip.external_id}"'
        return response

    monkeypatch.setattr(views, "item_audio_response", leaky)
    return "headers: name 'clipext-heron"


def _leak_audio_metadata(monkeypatch):
    """The uploaded file itself (with its tags) instead of the rater copy."""
    from ratings.services import rater_audio

    def original_file(*, clip):
        return clip.audio

    monkeypatch.setattr(rater_audio, "clip_rater_audio_ensure", original_file)
    for clip in Clip.objects.exclude(audio=""):
        title = clip.external_id.encode() + b"\x00"
        tagged = clip.audio.read() + b"LIST" + struct.pack("<I", 12 + len(title)) + b"INFOINAM"
        tagged += struct.pack("<I", len(title)) + title
        clip.audio.close()
        clip.audio.save("x.wav", ContentFile(tagged), save=True)
    return "name 'clipext-heron"


def _leak_workbook_record_ids(monkeypatch):
    monkeypatch.setattr(AssignmentItem, "record_id", property(lambda item: item.clip.external_id))
    return ".xlsx!Assessment!B"


def _leak_gold_flag(monkeypatch):
    from ratings import views

    original = views._page_context

    def leaky(request, item):
        context = original(request, item)
        if item.pair_id and item.pair.gold_choice:
            context["study_title"] = f"{context['study_title']} (gold)"
        return context

    monkeypatch.setattr(views, "_page_context", leaky)
    return "word 'gold'"


def _item_pages_answer_404(monkeypatch):
    """Not a leak: pages that are not shown at all must not pass the crawl as "nothing leaked"."""
    from django.http import Http404

    from ratings import views

    def missing(request, item):
        raise Http404("gone")

    monkeypatch.setattr(views, "_page_context", missing)
    return "a link the rater can follow answered 404"


@pytest.mark.parametrize(
    "inject",
    [
        _leak_api_caption_ids,
        _leak_page_campaign_name,
        _leak_audio_file_name,
        _leak_audio_metadata,
        _leak_workbook_record_ids,
        _leak_gold_flag,
        _item_pages_answer_404,
    ],
    ids=[
        "api-caption-ids",
        "page-campaign-name",
        "audio-file-name-header",
        "audio-metadata",
        "workbook-record-ids",
        "gold-flag-on-page",
        "item-pages-not-shown",
    ],
)
def test_the_crawl_catches_each_injected_leak(blind_world, make_user, monkeypatch, inject):
    marker = inject(monkeypatch)
    crawl = _crawl(blind_world, make_user)
    assert any(marker in finding for finding in crawl.findings), (marker, crawl.findings[:5])
