"""A gold AudioCaps-F import applies gold publishing's rules in a useful order and says truly what it did:
events named twice up to case ("Dog" / "dog") are refused by the rule publishing applies; the cheap checks
(spans within the clip, others' gold) refuse a file before any phrase is embedded; a refused file leaves no
phrase vectors behind; the notes say what became of each clip with conflicting attributes."""

import json

import pytest

from annotation.models import ExpertAnnotation
from annotation.services import gold_duplicates
from annotation.services.annotation_checks import draft_checks
from annotation.services.audiocaps_f import audiocaps_f_import
from annotation.vocabulary import AttributeVocabulary
from corpus.models import Clip, Dataset
from corpus.services.importing import ImportDataError
from metrics_bridge.models import PhraseVector
from tests.annotation.table_counts import all_table_counts

pytestmark = pytest.mark.django_db

SUBMITTED_CHOICE = 'choose "import as submitted" for duplicate events (command: --duplicate-events submitted)'


@pytest.fixture
def finder_calls(monkeypatch) -> list:
    """Replace the matching rule by one that records its documents and calls "crash" / "smash" one sound."""
    calls = []

    def finder(documents):
        calls.append(documents)
        return [
            [{"first": "crash", "second": "smash", "score": 0.9, "needed": 0.5}]
            if {"crash", "smash"} <= set(doc)
            else []
            for doc in documents
        ]

    monkeypatch.setattr(gold_duplicates, "_finders", [finder])
    return calls


def _event(*spans, attr=()) -> dict:
    return {"source": ["glass"], "attr": list(attr), "spans": [list(span) for span in spans]}


def test_events_named_twice_up_to_case_are_refused_as_publishing_refuses_them():
    data = {"40.wav": {"Dog": _event((0, 1)), "dog": _event((3, 4))}}
    # The reference: publishing's own checks call this draft's second event a repeat (an error).
    draft = {
        "events": [
            {"id": "e1", "label": "Dog", "sources": ["glass"], "attributes": [], "spans": [[0, 1]]},
            {"id": "e2", "label": "dog", "sources": ["glass"], "attributes": [], "spans": [[3, 4]]},
        ],
        "relations": [],
    }
    codes = [check.code for check in draft_checks(draft=draft, library=AttributeVocabulary([]), gold=True)]
    assert "duplicate_event" in codes
    before = all_table_counts()

    with pytest.raises(ImportDataError) as refused:
        audiocaps_f_import(data=data, dataset_name="acf", source_name="f.json")

    assert str(refused.value) == (
        "f.json: key \"40.wav\": Event 2 'dog' repeats event 1; merge them or tell them apart, which gold publishing "
        f"refuses: rename or merge them in the file, or {SUBMITTED_CHOICE}"
    )
    assert all_table_counts() == before

    summary = audiocaps_f_import(data=data, dataset_name="acf", source_name="f.json", duplicates_as="submitted")
    assert ExpertAnnotation.objects.get().status == "submitted"
    assert summary.extra["clips with events named twice"] == 1


def test_a_clip_without_spans_naming_an_event_twice_is_refused_too():
    data = {"41.wav": {"Dog": {"source": [], "attr": []}, "DOG ": {"source": [], "attr": []}}}
    with pytest.raises(ImportDataError, match=r"key \"41\.wav\": Event 2 'DOG' repeats event 1"):
        audiocaps_f_import(data=data, dataset_name="acf", source_name="f.json")


def test_a_span_past_the_clip_end_is_refused_before_any_phrase_is_embedded(finder_calls):
    dataset = Dataset.objects.create(name="acf")
    Clip.objects.create(dataset=dataset, external_id="42", file_name="42.wav", duration_seconds=10.0)
    data = {"42.wav": {"crash": _event((1, 2)), "smash": _event((1, 12))}}

    with pytest.raises(ImportDataError, match=r"after the clip's end \(10\.00 s\)"):
        audiocaps_f_import(data=data, dataset_name="acf", source_name="f.json")

    assert finder_calls == []


def test_gold_of_another_account_is_refused_before_any_phrase_is_embedded(finder_calls, make_user):
    reviewer = make_user("rev", "reviewer")
    dataset = Dataset.objects.create(name="acf")
    clip = Clip.objects.create(dataset=dataset, external_id="43", file_name="43.wav")
    ExpertAnnotation.objects.create(clip=clip, annotator=reviewer, status="gold")
    data = {"43.wav": {"barking": _event((1, 2)), "slam": _event((1, 2))}}

    with pytest.raises(ImportDataError, match=r'the clip has gold published by "rev"'):
        audiocaps_f_import(data=data, dataset_name="acf", source_name="f.json")

    assert finder_calls == []
    # A clip the duplicate check holds back as submitted does not replace that gold, so it is not refused.
    data = {"43.wav": {"crash": _event((1, 2)), "smash": _event((1, 2))}}
    audiocaps_f_import(data=data, dataset_name="acf", source_name="f.json", duplicates_as="submitted")
    assert len(finder_calls) == 1
    assert sorted(ExpertAnnotation.objects.values_list("status", flat=True)) == ["gold", "submitted"]


def test_the_notes_say_a_clip_with_conflicting_attributes_held_back_for_a_duplicate_is_submitted(finder_calls):
    data = {
        "44.wav": {"crash": _event((1, 2), attr=("loud", "quiet")), "smash": _event((1, 2))},
        "45.wav": {"hum": _event((0, 5), attr=("loud", "quiet")), "click": _event((6, 7))},
    }

    summary = audiocaps_f_import(data=data, dataset_name="acf", source_name="f.json", duplicates_as="submitted")

    statuses = dict(ExpertAnnotation.objects.values_list("clip__file_name", "status"))
    assert statuses == {"44.wav": "submitted", "45.wav": "gold"}
    assert summary.extra["clips with conflicting attributes"] == 2
    notes = [note for note in summary.notes if "tag library calls opposites" in note]
    assert len(notes) == 2, notes
    [kept] = [note for note in notes if "kept gold" in note]
    [held] = [note for note in notes if "imported as submitted" in note]
    assert kept.startswith("1 clips") and "clip 45.wav" in kept and "44.wav" not in kept
    assert held.startswith("1 clips") and "clip 44.wav" in held and "45.wav" not in held


def test_a_file_refused_for_a_duplicate_leaves_no_phrase_vectors(shared_dir):
    """The real matching rule (Sentence-BERT): the insects' buzzing and the cicadas' chirring over the same
    seconds are one sound (docs/annotation.md). The embedding runs inside the import's transaction."""
    data = {
        "37.wav": {
            "buzzing": {"source": ["insects"], "attr": ["loud"], "spans": [[1.0, 9.0]]},
            "chirring": {"source": ["cicadas"], "attr": [], "spans": [[1.0, 9.0]]},
        }
    }
    assert PhraseVector.objects.count() == 0
    before = all_table_counts()

    with pytest.raises(ImportDataError, match=r'events "buzzing" and "chirring" may be one sound'):
        audiocaps_f_import(data=json.loads(json.dumps(data)), dataset_name="acf", source_name="f.json")

    assert PhraseVector.objects.count() == 0
    assert all_table_counts() == before
