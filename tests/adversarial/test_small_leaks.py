"""The smaller attacks on blinding (those that need no test file of their own), each tried and refused.

- the spectrogram (and the waveform) of a clip a rater rates, fetched by clip id while the study runs;
- a bad Host header echoed by the 400 page with DEBUG off;
- drafts and submissions with a NUL character, padded or exponent numbers, a fractional version;
- the rater's studies listed by their internal names (admins often put dataset or system names in them);
- opening `?change=1` directly to change a submitted answer without the `change_opened` event.
"""

import json

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from ratings.models import AssignmentItem, ItemEvent
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import pairwise_item_submit
from tests.ratings.campaign_data import clip_audio_attach, corpus_build, headphone_pass_give, listened_give

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(make_user):
    dataset, clips, systems = corpus_build(name="small-leaks", clip_count=3)
    for clip in clips:
        clip_audio_attach(clip)
    rater = make_user("small-rater", "rater")
    headphone_pass_give(rater)
    thumbs = campaign_setup(
        name="small-leaks-thumbs", dataset=dataset, task_type="thumbs", systems=systems[:1], human_captions_per_clip=1,
        judgements_per_item=1, raters=[rater],
    )  # fmt: skip
    client = Client()
    client.force_login(rater)
    return dataset, clips, rater, thumbs, client


def test_a_rater_who_also_annotates_gets_neither_spectrogram_nor_waveform_of_the_rated_clips(study, make_user):
    _, clips, rater, _, _ = study
    other_dataset, other_clips, _ = corpus_build(name="small-leaks-free", clip_count=1, system_names=())
    clip_audio_attach(other_clips[0])
    rater.groups.add(Group.objects.get(name="annotator"))
    client = Client()
    client.force_login(rater)
    free = client.get(reverse("annotation:clip-spectrogram", args=[other_clips[0].pk]))
    assert free.status_code == 200 and free["Content-Type"] == "image/png", "the attack reaches other datasets' images"
    for clip in clips:
        for url in (
            reverse("annotation:clip-spectrogram", args=[clip.pk]),
            reverse("annotation:clip-audio", args=[clip.pk]),
            f"/api/clips/{clip.pk}/",
        ):
            response = client.get(url)
            assert response.status_code == 403, url
    listed = client.get("/api/clips/").json()["results"]
    assert [row["id"] for row in listed] == [other_clips[0].pk], "the waveform of rated clips is not listed either"


def test_the_bad_host_page_names_no_host(client, settings):
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["testserver"]
    response = client.get("/", HTTP_HOST="evil-rater-probe.example")
    assert response.status_code == 400
    body = response.content.decode()
    assert "could not be understood" in body and "evil-rater-probe" not in body


@pytest.mark.parametrize(
    "fields,version,refusal",
    [
        ({"comment_1": "fine\x00"}, 0, "NUL character"),
        ({"precision_1": " 3 "}, 0, "whole number from 1 to 5"),
        ({"precision_1": "3.0"}, 0, "whole number from 1 to 5"),
        ({"fluency_1": "-1e0"}, 0, "not written plainly"),
        ({"fluency_1": " -1"}, 0, "not written plainly"),
        ({"fluency_1": "-.5"}, 0, "not written plainly"),
        ({"precision_1": "4"}, 0.5, "not a whole number"),
        ({"precision_1": "4"}, "1.0", "not a whole number"),
        ({"precision_1": "4"}, True, "not a whole number"),
    ],
)
def test_drafts_with_odd_values_are_refused_and_nothing_is_stored(study, fields, version, refusal):
    *_, thumbs, client = study
    item = thumbs.assignments.get().items.order_by("position").first()
    url = reverse("ratings:item_draft", args=[item.token])
    accepted = client.post(
        url,
        json.dumps({"version": 0, "fields": {"precision_1": "4", "fluency_1": "-0.5"}}),
        content_type="application/json",
    )
    assert accepted.status_code == 200 and AssignmentItem.objects.get(pk=item.pk).draft == {
        "precision_1": "4",
        "fluency_1": "-0.5",
    }
    response = client.post(url, json.dumps({"version": version, "fields": fields}), content_type="application/json")
    assert response.status_code == 400 and refusal in response.json()["error"], response.content
    assert AssignmentItem.objects.get(pk=item.pk).draft == {"precision_1": "4", "fluency_1": "-0.5"}


def test_drafts_store_plain_values(study):
    *_, thumbs, client = study
    item = thumbs.assignments.get().items.order_by("position").first()
    url = reverse("ratings:item_draft", args=[item.token])
    fields = {"precision_1": 4, "fluency_1": -0.5, "conciseness_1": "0", "irrelevance_2": -1, "comment_2": "hiss"}
    assert (
        client.post(url, json.dumps({"version": 0, "fields": fields}), content_type="application/json").status_code
        == 200
    )
    assert AssignmentItem.objects.get(pk=item.pk).draft == {
        "precision_1": "4", "fluency_1": "-0.5", "conciseness_1": "0", "irrelevance_2": "-1", "comment_2": "hiss",
    }  # fmt: skip


@pytest.mark.parametrize(
    "change,problem",
    [
        ({"fluency_1": "-1e0"}, "Type a number from -2 to 0"),
        ({"fluency_1": " -1"}, "Type a number from -2 to 0"),
        ({"comment_1": "a\x00b"}, "Null characters are not allowed"),
        ({"version": "0.5"}, "item version is not valid"),
        ({"version": " 0"}, "item version is not valid"),
    ],
)
def test_submissions_with_odd_values_are_refused(study, change, problem):
    *_, thumbs, client = study
    item = listened_give(thumbs.assignments.get().items.order_by("position").first())
    form = {"version": "0", "synthesized": "no"}
    for number in range(1, len(item.caption_order) + 1):
        form.update({f"precision_{number}": "3", f"recall_{number}": "4", f"fluency_{number}": "0"})
        form.update({f"conciseness_{number}": "0", f"irrelevance_{number}": "-0.5", f"comment_{number}": ""})
    form.update(change)
    response = client.post(reverse("ratings:item", args=[item.token]), form)
    assert response.status_code == 400 and problem in response.content.decode()
    assert AssignmentItem.objects.get(pk=item.pk).completed_at is None
    form.update(
        {key: value for key, value in {"fluency_1": "0", "comment_1": "", "version": "0"}.items() if key in change}
    )
    assert client.post(reverse("ratings:item", args=[item.token]), form).status_code == 302, "the plain form is taken"


def test_studies_are_not_listed_by_their_internal_names(make_user):
    dataset, clips, systems = corpus_build(name="names", clip_count=2)
    rater = make_user("names-rater", "rater")
    headphone_pass_give(rater)
    for name, title, clip in (
        ("aaa-clotho-gold-check", "Zebra study", clips[0]),
        ("zzz-plain", "Apple study", clips[1]),
    ):
        campaign_setup(name=name, title=title, dataset=dataset, clips=[clip], task_type="thumbs", systems=systems,
                       judgements_per_item=1, raters=[rater])  # fmt: skip
    client = Client()
    client.force_login(rater)
    page = client.get(reverse("ratings:home")).content.decode()
    assert page.index("Apple study") < page.index("Zebra study")
    assert [row["study"] for row in client.get("/api/assignments/").json()["results"]] == ["Apple study", "Zebra study"]


def test_opening_change_directly_is_logged_like_the_change_button(make_user):
    dataset, _, _ = corpus_build(name="change", clip_count=2)
    rater = make_user("changer", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(name="change-pairs", dataset=dataset, task_type="pairwise", split_counts={"HC": 2},
                              judgements_per_item=1, raters=[rater])  # fmt: skip
    item = campaign.assignments.get().items.order_by("position").first()
    pairwise_item_submit(item=listened_give(item), side="left", seen_version=0)
    client = Client()
    client.force_login(rater)
    page = client.get(reverse("ratings:item", args=[item.token]) + "?change=1")
    assert page.status_code == 200 and 'name="side"' in page.content.decode(), "the form to change the answer is open"
    opened = ItemEvent.objects.filter(item=item, kind=ItemEvent.Kind.CHANGE_OPENED)
    assert opened.count() == 1 and opened.get().previous_answer == {"side": "left"}
    client.get(reverse("ratings:item", args=[item.token]) + "?change=1")  # a reload
    assert opened.count() == 1, "logged once per answer version"
    redirect = client.post(reverse("ratings:item_change", args=[item.token]))
    assert redirect.status_code == 302 and opened.count() == 1
    client.post(reverse("ratings:item", args=[item.token]), {"side": "right", "version": "1"})
    client.get(reverse("ratings:item", args=[item.token]) + "?change=1")
    assert opened.count() == 2, "a new answer version, a new opening"
