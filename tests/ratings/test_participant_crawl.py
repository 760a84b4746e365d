"""Blinding, adversarially, for crowd participants: crawl everything a participant can reach, probe every URL.

Two studies (pairwise with HC, HI gold checks, HM, MM; THumBS with catch captions) on a dataset whose names
and ids are recognisable; another participant has answered. One participant, signed in by the study link and
in the middle of their share, crawls from the study page, the rating pages, the home page and the API root
with the rater crawler (tests/ratings/blinding_crawl.py): pages, JSON, headers, scripts and styles, audio,
forms and redirects. Nowhere may a database id, system, source label, author-kind word, split, clip external
id, the dataset name, a campaign name, another participant's platform id or account, the participant's own
platform id, or a code the participant has not earned (completion, screen-out, ...) appear.

Then every URL pattern of the site is requested as the participant, with real ids of the dataset, campaign,
clips, captions, study and participants filled in: no staff, corpus or metric endpoint answers with content.
"""

import re

import pytest
from django.test import Client
from django.urls import get_resolver, reverse
from django.urls.resolvers import RegexPattern, URLResolver

from corpus.models import Caption, Clip
from ratings.models import AssignmentItem, Campaign, CaptionPair, PairwiseVote, ThumbsRating
from ratings.models_study import Participant, Study
from ratings.services.campaigns import campaign_setup
from ratings.services.studies import study_publish
from tests.ratings.blinding_crawl import RaterCrawl, Secrets
from tests.ratings.campaign_data import headphone_pass_give
from tests.ratings.crawl_corpus import DATASET, SYSTEMS, crawl_corpus_build, ids_start_at
from tests.ratings.study_data import (
    QUESTIONNAIRE,
    answer_share,
    item_answer_post,
    participant_of,
    practice_audio_play,
    prolific_arrive,
    share_items,
    walk_to_items,
)

pytestmark = pytest.mark.django_db

ID_STARTS = {
    Clip: 7_300_000,
    Caption: 7_100_000,
    CaptionPair: 7_200_000,
    AssignmentItem: 7_400_000,
    ThumbsRating: 7_600_000,
    PairwiseVote: 7_700_000,
    Campaign: 7_800_000,
    Study: 7_900_000,
    Participant: 8_100_000,
}
# What a participant may be answered with content: their study, their own items (the rating pages and their
# audio, listening report, draft, change), screening sounds, the rater API, the home page and the sign-in pages
# (the admin's sign-in page included: anyone may see it).
PARTICIPANT_PATHS = re.compile(
    r"^/(study/[a-z0-9]+/|ratings/items/[a-z0-9]+/|ratings/headphones/|api/|accounts/|admin/login/|healthz|$)"
)


@pytest.fixture
def crowd_world(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    for model, start in ID_STARTS.items():
        ids_start_at(model, start)
    dataset, systems = crawl_corpus_build(clip_count=6)
    pairwise = campaign_setup(
        name=f"{DATASET}-pairs",
        dataset=dataset,
        task_type="pairwise",
        split_counts={"HC": 3, "HI": 3, "HM": 3, "MM": 3},
        gold_from_hi=True,
        judgements_per_item=2,
        title="Listening study",
    )
    thumbs = campaign_setup(
        name=f"{DATASET}-thumbs",
        dataset=dataset,
        task_type="thumbs",
        systems=systems,
        human_captions_per_clip=1,
        judgements_per_item=2,
        title="Listening study two",
    )
    common = {"consent_text": "Consent.", "exclude_same_answer": False}
    pair_study = study_publish(
        campaign=pairwise,
        items_per_participant=4,
        attention_checks=2,
        questionnaire=QUESTIONNAIRE,
        screens=Study.Screens.ANTIPHASE,
        **common,
    )
    thumbs_study = study_publish(
        campaign=thumbs, items_per_participant=3, attention_checks=1, screens=Study.Screens.NONE, **common
    )
    # Another participant finished the pairwise study; the crawling one is halfway through it.
    other_client, _ = prolific_arrive(pair_study, address="10.1.1.1")
    answer_share(other_client, walk_to_items(other_client, pair_study))
    client, _ = prolific_arrive(pair_study, address="10.2.2.2")
    crawler = walk_to_items(client, pair_study)
    items = share_items(crawler)
    for item in items[:2]:
        item_answer_post(client, item, side="right")
    # The THumBS study has a participant of its own (with a catch caption), who answered one item.
    thumbs_client, _ = prolific_arrive(thumbs_study, address="10.3.3.3")
    thumbs_participant = walk_to_items(thumbs_client, thumbs_study)
    item_answer_post(thumbs_client, share_items(thumbs_participant)[0])
    return {
        "dataset": dataset,
        "client": client,
        "crawler": crawler,
        "pair_study": pair_study,
        "thumbs_client": thumbs_client,
        "thumbs_participant": thumbs_participant,
        "other_client": other_client,
    }


def _secrets(world, crawler: Participant, *, earned: str = "") -> Secrets:
    """What `crawler` must never receive (`earned`: the code their outcome gives them)."""
    dataset = world["dataset"]
    clips = Clip.objects.filter(dataset=dataset)
    captions = Caption.objects.filter(clip__dataset=dataset)
    pairs = CaptionPair.objects.filter(clip__dataset=dataset)
    names = {dataset.name, *SYSTEMS, *Campaign.objects.values_list("name", flat=True)}
    names |= set(clips.values_list("external_id", flat=True))
    names |= {external_id.rsplit(".", 1)[0] for external_id in clips.values_list("external_id", flat=True)}
    names |= set(captions.exclude(source_label="").values_list("source_label", flat=True))
    names |= set(pairs.values_list("source_key", flat=True))
    for participant in Participant.objects.select_related("user", "study"):
        names.add(participant.platform_id)  # their own included: platform ids are shown to admins only
        if participant.pk != crawler.pk:
            names.add(participant.user.username)
    for study in Study.objects.all():
        # Codes the crawling participant has not earned (they are still rating), and the other study's link.
        names |= {study.completion_code, study.screen_out_code, study.no_consent_code, study.full_code} - {earned}
        if study.pk != crawler.study_id:
            names.add(study.slug)
    ids = set()
    # Campaign ids are left out: the rater API names a rater's study by it (its only filter), for raters and
    # participants alike.
    for model in (Clip, Caption, CaptionPair, AssignmentItem, ThumbsRating, PairwiseVote, Study, Participant):
        ids |= set(model.objects.values_list("pk", flat=True))
    assert min(ids) >= 7_100_000, "the ids are recognisable"
    return Secrets(names=names, ids=ids)


def _crawl(world, client, participant, *, earned: str = "") -> RaterCrawl:
    crawl = RaterCrawl(client=client, secrets=_secrets(world, participant, earned=earned))
    # The leave page (linked from every page) is read, but its form is not sent: that would end the participation
    # in the middle of the crawl.
    crawl.seen.add(("POST", reverse("study:leave", kwargs={"slug": participant.study.slug})))
    crawl.run(reverse("study:entry", kwargs={"slug": participant.study.slug}), reverse("annotation:home"), "/api/")
    return crawl


def test_nothing_a_participant_can_reach_unblinds_anything(crowd_world):
    """Crawled at every step: a new arrival, the questionnaire, the headphone screen, the practice, in the middle
    of a pairwise and of a THumBS share, and finished (with the code they earned)."""
    pair_study = crowd_world["pair_study"]
    crawls = []
    fresh_client, _ = prolific_arrive(pair_study, address="10.4.4.4")
    crawls.append(("arrival", _crawl(crowd_world, fresh_client, participant_of(fresh_client))))
    steps = Client(REMOTE_ADDR="10.5.5.5")
    prolific_arrive(pair_study, client=steps)
    steps.post(reverse("study:entry", kwargs={"slug": pair_study.slug}))
    steps.post(reverse("study:consent", kwargs={"slug": pair_study.slug}), {"decision": "agree"})
    crawls.append(("questionnaire", _crawl(crowd_world, steps, participant_of(steps))))
    steps.post(reverse("study:questionnaire", kwargs={"slug": pair_study.slug}), {"age_band": "18-24"})
    crawls.append(("headphone screen", _crawl(crowd_world, steps, participant_of(steps))))
    headphone_pass_give(participant_of(steps).user)
    # The headphone page sees the pass and sends them on to the instructions, where the practice sound is served.
    assert steps.get(reverse("study:headphones", kwargs={"slug": pair_study.slug})).status_code == 302
    practice_audio_play(steps, pair_study)  # the practice sound heard: the crawl's POST gets past the practice
    crawls.append(("practice and start", _crawl(crowd_world, steps, participant_of(steps))))
    # The crawl's empty POSTs answered the practice.
    assert participant_of(steps).practice_done_at is not None, "the crawl went through the practice"
    crawler = crowd_world["crawler"]
    middle = _crawl(crowd_world, crowd_world["client"], crawler)
    crawls.append(("middle of the share", middle))
    thumbs = crowd_world["thumbs_participant"]
    crawls.append(("THumBS share", _crawl(crowd_world, crowd_world["thumbs_client"], thumbs)))
    other_client = crowd_world["other_client"]
    finished = participant_of(other_client)
    other_client.get(reverse("study:items", kwargs={"slug": pair_study.slug}))
    crawls.append(("finished", _crawl(crowd_world, other_client, finished, earned=pair_study.completion_code)))
    # The one link off the site a participant gets: back to Prolific with the code they earned.
    back_to_prolific = (
        f"link off the site 'https://app.prolific.com/submissions/complete?cc={pair_study.completion_code}'"
    )
    findings = [
        f"{name}: {finding}"
        for name, crawl in crawls
        for finding in crawl.findings
        if not (name == "finished" and finding.endswith(back_to_prolific))
    ]
    assert findings == []
    for name, crawl in crawls:
        assert not [status for status in crawl.statuses if status >= 500], name
    visited = {url for _, url in middle.seen}
    for item in share_items(crawler):
        assert reverse("ratings:item", args=[item.token]) in visited
        assert reverse("ratings:item_audio", args=[item.token]) in visited
    assert any("?change=1" in url for url in visited), "the change-my-answer path was followed"
    assert {"/api/assignment-items/", "/api/assignments/", "/api/pairwise-votes/"} <= visited
    assert middle.kinds["audio"] >= len(share_items(crawler)) and middle.kinds["static"] >= 5
    all_visited = {url for _, crawl in crawls for _, url in crawl.seen}
    slug = pair_study.slug
    for page in ("", "consent/", "questionnaire/", "headphones/", "instructions/", "practice.wav", "end/"):
        assert f"/study/{slug}/{page}" in all_visited, page
    assert any("/ratings/headphones/attempts/" in url for url in all_visited), "trial sounds were fetched"
    assert pair_study.completion_code in " ".join(
        finished_page for finished_page in [other_client.get(f"/study/{slug}/end/").content.decode()]
    )
    for name, crawl in crawls:
        print(
            f"\nparticipant crawl, {name}: {crawl.requests} requests ({dict(crawl.kinds)}), "
            f"statuses {dict(crawl.statuses)}, {len({url for _, url in crawl.seen})} distinct URLs"
        )
    total = sum(crawl.requests for _, crawl in crawls)
    print(f"participant crawl in all: {total} requests, {len(all_visited)} distinct URLs")


def test_the_crawl_catches_a_code_shown_before_it_is_earned(crowd_world, monkeypatch):
    """The crawl can fail: a completion code leaked on the item pages is found."""
    from ratings import views

    original = views._page_context

    def leaky(request, item):
        context = original(request, item)
        context["study_title"] = f"{context['study_title']} {crowd_world['pair_study'].completion_code}"
        return context

    monkeypatch.setattr(views, "_page_context", leaky)
    crawl = _crawl(crowd_world, crowd_world["client"], crowd_world["crawler"])
    assert any(crowd_world["pair_study"].completion_code in finding for finding in crawl.findings)


def _patterns(resolver=None, prefix=""):
    for pattern in (resolver or get_resolver()).url_patterns:
        text = str(pattern.pattern)
        if isinstance(pattern.pattern, RegexPattern):
            text = text.lstrip("^").rstrip("$")
            if "format" in text or "(?P<url>" in text or "(?P<app_label>" in text:
                continue
            text = text.replace("(?P<pk>[^/.]+)", "<int:pk>")
        if isinstance(pattern, URLResolver):
            yield from _patterns(pattern, prefix + text)
        else:
            yield prefix + text


def test_every_url_of_the_site_refuses_a_participant_outside_their_study(crowd_world):
    """Staff, corpus and metric endpoints, asked for with real ids, never answer a participant with content."""
    client, crawler = crowd_world["client"], crowd_world["crawler"]
    dataset = crowd_world["dataset"]
    other = Participant.objects.exclude(pk=crawler.pk).first()
    values = {
        "campaign_id": crawler.study.campaign_id,
        "study_id": crawler.study_id,
        "dataset_id": dataset.pk,
        "clip_id": Clip.objects.filter(dataset=dataset).first().pk,
        "caption_id": Caption.objects.filter(clip__dataset=dataset).first().pk,
        "participant_id": other.pk,
        "rater_id": other.user_id,
        "pk": dataset.pk,
        "slug": Study.objects.exclude(pk=crawler.study_id).first().slug,
        "token": share_items(other)[0].token,
        "kind": "antiphase",
    }
    probed, answered = 0, []
    for pattern in _patterns():
        if pattern.startswith(("static/", "media/")):
            continue
        url = "/" + re.sub(r"<(?:(\w+):)?(\w+)>", lambda match: str(values.get(match.group(2), values["pk"])), pattern)
        response = client.get(url)
        probed += 1
        if response.status_code == 200 and not PARTICIPANT_PATHS.match(url):
            answered.append(url)
        if response.status_code == 200 and url.startswith("/api/") and url != "/api/":
            # The rater API: only the participant's own rows (the other participant's items are not there).
            assert share_items(other)[0].token not in response.content.decode(), url
        assert response.status_code < 500, (url, response.status_code)
    assert answered == [], answered
    assert probed > 150
    # The other participant's item and study are not this participant's: 404 / sent to their own study.
    assert client.get(reverse("ratings:item", args=[share_items(other)[0].token])).status_code in (302, 404)
    print(f"\nparticipant probe: {probed} URL patterns requested with real ids, none answered outside the study")


def test_the_participant_is_signed_in_by_the_link_only(crowd_world):
    """No password: the sign-in page does not let anyone in as a participant."""
    crawler = crowd_world["crawler"]
    assert not crawler.user.has_usable_password()
    anonymous = Client()
    response = anonymous.post(reverse("login"), {"username": crawler.user.username, "password": ""})
    assert response.status_code in (200, 429) and "_auth_user_id" not in anonymous.session
    assert participant_of(crowd_world["client"]).pk == crawler.pk
