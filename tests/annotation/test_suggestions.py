"""The editor's type-ahead: words of every dataset's annotations, then the product's list of sound sources;
never other people's words about the clip being annotated (nor about the same audio in another dataset)."""

import pytest

from annotation.selectors_workspace import source_suggestions
from annotation.services.expert_annotations import expert_annotation_save
from annotation.vocabulary import sound_sources
from corpus.models import Clip, Dataset

pytestmark = pytest.mark.django_db


def _annotate(clip, user, label, sources):
    expert_annotation_save(clip=clip, annotator=user, events=[{"label": label, "sources": sources, "attributes": []}])


def test_a_new_dataset_gets_the_words_of_the_others_and_the_list_of_sound_sources(make_user):
    annotator, other = make_user("ann-s", "annotator"), make_user("ann-t", "annotator")
    old = Dataset.objects.create(name="old")
    for number in range(3):
        _annotate(Clip.objects.create(dataset=old, external_id=f"o{number}"), other, "purring", ["tabby"])
    _annotate(Clip.objects.create(dataset=old, external_id="o9"), other, "mewing", ["kitten"])
    new_clip = Clip.objects.create(dataset=Dataset.objects.create(name="new"), external_id="n1")

    words = source_suggestions(clip=new_clip, user=annotator)

    assert words["events"][:2] == ["purring", "mewing"]  # most used first
    assert words["sources"][:2] == ["tabby", "kitten"]
    assert "kitten" in sound_sources()  # the list follows, without repeating a word already there
    assert words["sources"][2:] == [word for word in sound_sources() if word != "kitten"]


def test_other_peoples_words_about_this_clip_or_its_audio_elsewhere_are_left_out(make_user):
    annotator, other = make_user("ann-s", "annotator"), make_user("ann-t", "annotator")
    first, second = Dataset.objects.create(name="first"), Dataset.objects.create(name="second")
    clip = Clip.objects.create(dataset=first, external_id="c", sha256="ab" * 32)
    same_audio = Clip.objects.create(dataset=second, external_id="c-copy", sha256="ab" * 32)
    _annotate(clip, other, "yowling", ["siamese"])
    _annotate(same_audio, other, "hissing", ["persian"])
    _annotate(clip, annotator, "purring", ["tabby"])  # the annotator's own words stay

    words = source_suggestions(clip=clip, user=annotator)

    assert "yowling" not in words["events"] and "hissing" not in words["events"]
    assert "siamese" not in words["sources"] and "persian" not in words["sources"]
    assert words["events"] == ["purring"] and words["sources"][0] == "tabby"


def test_attributes_most_used_first_free_text_once_two_annotations_used_it_and_blind_to_this_clip(make_user):
    annotator, other = make_user("ann-s", "annotator"), make_user("ann-t", "annotator")
    dataset = Dataset.objects.create(name="tags")
    clip = Clip.objects.create(dataset=dataset, external_id="c")
    used = [["Quiet", "sparkly", "on a table"], ["quiet ", "muffled", "Sparkly"], ["quiet", "glassy"]]
    for number, attributes in enumerate(used):
        expert_annotation_save(
            clip=Clip.objects.create(dataset=dataset, external_id=f"o{number}"),
            annotator=other,
            events=[{"label": "purring", "sources": ["cat"], "attributes": attributes}],
        )
    expert_annotation_save(  # another person's words about this clip stay out
        clip=clip, annotator=other, events=[{"label": "purring", "sources": ["cat"], "attributes": ["loud"]}]
    )

    words = source_suggestions(clip=clip, user=annotator)

    # quiet 3 times (whatever the case and edge spaces); the free text "sparkly" twice; the tag "muffled" and
    # the filled template "on a table" once each (alphabetical among equals); the free text "glassy" once: left out
    assert words["attributes"] == ["quiet", "sparkly", "muffled", "on a table"]
