"""Blinding: no page a rater sees says who wrote a caption (person or model) or which system."""

import re
from collections import Counter

import pytest
from django.urls import reverse
from scipy.stats import chisquare

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from ratings.models import TOKEN_ALPHABET, TOKEN_LENGTH, AssignmentItem, opaque_token
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import pairwise_item_submit
from tests.ratings.campaign_data import headphone_pass_give, listened_give

pytestmark = pytest.mark.django_db

SECRETS = ["secret_system_xyz", "secret_system_qrs", "secret_label_h1", "secret_label_m1", "secret-clip-name"]
REVEALING_WORDS = re.compile(r"\b(machine|human|reference|candidate|model|system|person|generated)s?\b", re.IGNORECASE)
CAPTION_BLOCK = re.compile(r'<(section|label) class="card caption-block[^"]*"[^>]*>(.*?)</\1>', re.DOTALL)


@pytest.fixture
def blinded_corpus():
    dataset = Dataset.objects.create(name="blind")
    systems = [CaptioningSystem.objects.create(name=name) for name in SECRETS[:2]]
    clips = []
    for number in range(4):  # HI pairs take their other caption from a clip that is not rated
        clip = Clip.objects.create(dataset=dataset, external_id=f"secret-clip-name-{number}.wav", duration_seconds=1.0)
        for position in range(2):
            Caption.objects.create(
                clip=clip,
                text=f"rain falls on a tin roof {number} {position}",
                role="reference",
                author_kind="human",
                position=position,
                source_label=f"secret_label_h{position}",
            )
        for system in systems:
            Caption.objects.create(
                clip=clip,
                text=f"water drips onto metal {number} {system.pk}",
                role="candidate",
                author_kind="machine",
                system=system,
                source_label="secret_label_m1",
            )
        clips.append(clip)
    return dataset, clips, systems


def _page(client, url: str, *, page: str) -> str:
    """The page's HTML, once it answered 200 with a real page: a redirect, a 404 or an empty body would pass
    every leak check below without showing anything."""
    response = client.get(url)
    assert response.status_code == 200, f"{page}: {url} answered {response.status_code}"
    html = response.content.decode()
    assert len(html) > 500 and "</html>" in html and "<main" in html, f"{page}: {url} is not a full page"
    return html


def _assert_blind(html: str, *, page: str) -> None:
    assert len(html) > 500 and "<main" in html, f"{page}: not a rendered page"
    for secret in SECRETS:
        assert secret not in html, f"{page} shows {secret}"
    blocks = [match.group(2) for match in CAPTION_BLOCK.finditer(html)]
    for block in blocks:
        found = REVEALING_WORDS.search(block)
        assert found is None, f"{page}: caption block says {found.group(0)!r}"
    # Nor anywhere else on the page (instructions, labels, attributes, scripts).
    found = REVEALING_WORDS.search(re.sub(r"<script.*?</script>", "", html, flags=re.DOTALL))
    assert found is None, f"{page} says {found.group(0)!r} near {html[max(0, found.start() - 80) : found.end() + 40]!r}"


def _pages(client, item: AssignmentItem) -> dict[str, str]:
    return {
        "item": _page(client, reverse("ratings:item", args=[item.token]), page="item"),
        "home": _page(client, reverse("ratings:home"), page="home"),
    }


def test_thumbs_pages_are_blind(client, make_user, blinded_corpus):
    dataset, _, systems = blinded_corpus
    rater = make_user("blindrater", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="blind-thumbs",
        dataset=dataset,
        task_type="thumbs",
        systems=systems,
        human_captions_per_clip=1,
        raters=[rater],
    )
    client.force_login(rater)
    for item in campaign.assignments.get().items.all():
        pages = _pages(client, item)
        blocks = CAPTION_BLOCK.findall(pages["item"])
        assert len(blocks) == 3, "two system captions and one reference per clip, each in a caption block"
        for name, html in pages.items():
            _assert_blind(html, page=f"THumBS {name}")
        # Fields are named by position on the page, never by caption id.
        names = set(
            re.findall(r'name="((?:precision|recall|fluency|conciseness|irrelevance|comment)_\d+)"', pages["item"])
        )
        assert names == {
            f"{kind}_{n}"
            for kind in ("precision", "recall", "fluency", "conciseness", "irrelevance", "comment")
            for n in (1, 2, 3)
        }


def test_pairwise_pages_are_blind(client, make_user, blinded_corpus):
    dataset, _, systems = blinded_corpus
    rater = make_user("blindvoter", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="blind-pairs",
        dataset=dataset,
        task_type="pairwise",
        split_counts={"HM": 3, "MM": 3, "HI": 2},
        raters=[rater],
    )
    client.force_login(rater)
    items = list(campaign.assignments.get().items.order_by("position"))
    for item in items:
        pages = _pages(client, item)
        assert len(CAPTION_BLOCK.findall(pages["item"])) == 2
        for name, html in pages.items():
            _assert_blind(html, page=f"pairwise {name}")
        assert 'value="left"' in pages["item"] and 'value="a"' not in pages["item"]
    # Also after voting (the saved choice is shown back by side) and on the done page.
    for item in items:
        pairwise_item_submit(item=listened_give(item), side="right", seen_version=0)
    voted = _page(client, reverse("ratings:item", args=[items[0].token]), page="voted pair")
    assert voted.count("caption-block") >= 2, "the voted pair is shown again"
    _assert_blind(voted, page="voted pair")
    _assert_blind(_page(client, reverse("ratings:campaign_next", args=[campaign.pk]), page="done"), page="done page")


def test_headphone_pages_say_nothing_either(client, make_user):
    rater = make_user("blindears", "rater")
    client.force_login(rater)
    for kind in ("antiphase", "huggins"):
        _assert_blind(_page(client, reverse("ratings:headphone_check", args=[kind]), page=kind), page=kind)


def test_opaque_tokens_are_uniform_over_the_alphabet_at_every_position():
    """A token says nothing but itself: every letter as likely at every place (chi-square, 8,000 tokens)."""
    tokens = [opaque_token() for _ in range(8000)]
    assert len(set(tokens)) == len(tokens)
    assert all(len(token) == TOKEN_LENGTH and set(token) <= set(TOKEN_ALPHABET) for token in tokens)
    for position in range(TOKEN_LENGTH):
        at_position = Counter(token[position] for token in tokens)
        counts = [at_position[letter] for letter in TOKEN_ALPHABET]
        assert min(counts) > 0 and chisquare(counts).pvalue > 1e-6, (position, counts)
