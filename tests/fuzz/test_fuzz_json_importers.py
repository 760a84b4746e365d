"""Property-based fuzzing of the JSON importers: pairwise judgements (FENSE format) and AudioCaps-F.

Inputs are small real documents from ../shared with random edits (values replaced by any JSON, keys and
elements removed, duplicated or renamed) and, now and then, arbitrary JSON. Every input must either import
or be refused with ImportDataError naming the file (and the key / item inside it); never another
exception, and a refused input leaves every table row unchanged. An input that imports must be stored as
the importers document: AudioCaps-F exports back exactly as it came in (keys, order, texts); a FENSE file
gives one clip per item with its references as listed and each pair's captions and judges' votes.
"""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.services.audiocaps_f import audiocaps_f_import
from annotation.services.audiocaps_f_exporting import audiocaps_f_export
from corpus.models import Clip, Dataset
from corpus.services.importing import ImportDataError
from ratings.models import CaptionPair
from ratings.services.pairwise_import import PAIR_KEY, pairwise_judgements_import
from tests.fuzz.fuzz_helpers import database_fingerprint, json_values, mutated_json, rolled_back

pytestmark = pytest.mark.django_db

SOURCE_NAME = "fuzzed.json"


@pytest.fixture(scope="module")
def pairwise_base(shared_dir) -> list:
    """Two Clotho-Eval items (every split, five votes per pair)."""
    return json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:2]


@pytest.fixture(scope="module")
def audiocaps_f_base(shared_dir) -> dict:
    """Three AudioCaps-F clips with their events, sources and attributes."""
    data = json.loads((shared_dir / "datasets" / "audiocaps_f_annotations.json").read_text())
    return dict(list(data.items())[:3])


CHOICES = {1: "a", -1: "b", 0: "none"}


def audiocaps_f_round_trip(data) -> None:
    """Import -> export reproduces the input (annotation/services/audiocaps_f_parsing.py): clips and events in
    their order, texts as given; an event without "source" or "attr" (or with null) comes back with an empty list."""
    exported = audiocaps_f_export(dataset_name="fuzz")
    expected = {
        clip: {
            event: {**node, "source": node.get("source") or [], "attr": node.get("attr") or []}
            for event, node in events.items()
        }
        for clip, events in data.items()
    }
    assert list(exported) == list(expected), "clips in another order"
    for clip, events in expected.items():
        assert list(exported[clip]) == list(events), f"{clip}: events in another order"
        assert exported[clip] == events, f"accepted, but exported differently:\n{exported[clip]}\nvs\n{events}"


def pairwise_as_documented(data) -> None:
    """ratings/services/pairwise_import.py: a clip per item (keyed by audio_id, else raw_name), its references
    exactly as listed, each pair with its two captions, one vote per judge column (+1 a, -1 b, 0 none)."""
    dataset = Dataset.objects.get(name="fuzz")
    assert Clip.objects.filter(dataset=dataset).count() == len(data)
    for item in data:
        clip = Clip.objects.get(dataset=dataset, external_id=item.get("audio_id") or item.get("raw_name"))
        references = clip.captions.filter(role="reference").order_by("position").values_list("text", flat=True)
        assert list(references) == list(item["references"])
        for key, entry in item.items():
            if not PAIR_KEY.match(key) or entry is None:
                continue
            pair = CaptionPair.objects.select_related("caption_a", "caption_b").get(clip=clip, source_key=key)
            assert (pair.caption_a.text, pair.caption_b.text) == (entry[0], entry[1]), key
            votes = {vote.rater.username: vote.choice for vote in pair.votes.select_related("rater")}
            assert votes == {f"fuzz-judge-{n}": CHOICES[value] for n, value in enumerate(entry[-1], start=1)}, key


STORED_AS_DOCUMENTED = {audiocaps_f_import: audiocaps_f_round_trip, pairwise_judgements_import: pairwise_as_documented}


def _import_or_refusal(importer, data, *, refusal_expected: bool = False) -> None:
    """Import `data`; a refusal must name the file and change nothing (re-raised if `refusal_expected`), an
    accepted input must be stored as documented."""
    with rolled_back():
        before = database_fingerprint()
        try:
            importer(data=data, dataset_name="fuzz", source_name=SOURCE_NAME)
        except ImportDataError as error:
            assert str(error).startswith(SOURCE_NAME), f"the error does not name the file: {error}"
            assert database_fingerprint() == before, f"a refused import changed the database ({error})"
            if refusal_expected:
                raise
        else:
            STORED_AS_DOCUMENTED[importer](data)


def test_the_unmutated_documents_import(pairwise_base, audiocaps_f_base):
    """The fuzz starts from valid documents (so refusals come from the edits, not from the base)."""
    with rolled_back():
        pairwise_judgements_import(data=pairwise_base, dataset_name="fuzz", source_name=SOURCE_NAME)
        pairwise_as_documented(pairwise_base)
        votes = sum(len(entry[-1]) for item in pairwise_base for key, entry in item.items() if PAIR_KEY.match(key))
        assert CaptionPair.objects.filter(clip__dataset__name="fuzz").count() > 0 and votes > 0
        assert sum(pair.votes.count() for pair in CaptionPair.objects.filter(clip__dataset__name="fuzz")) == votes
    with rolled_back():
        audiocaps_f_import(data=audiocaps_f_base, dataset_name="fuzz", source_name=SOURCE_NAME)
        audiocaps_f_round_trip(audiocaps_f_base)
        assert len(audiocaps_f_export(dataset_name="fuzz")) == 3


def test_a_nul_character_is_refused_naming_its_place(pairwise_base, audiocaps_f_base):
    """Found by the long fuzz run: PostgreSQL text cannot hold U+0000, and the import failed inside the
    database with an unhandled DataError. Now it is refused before any write, naming where it is."""
    pairwise = json.loads(json.dumps(pairwise_base))
    pairwise[1]["references"][2] = "a dog\x00 barks"
    with pytest.raises(ImportDataError, match=r'^fuzzed\.json: index 1 key "references" index 2: contains a NUL'):
        _import_or_refusal(pairwise_judgements_import, pairwise, refusal_expected=True)
    annotations = json.loads(json.dumps(audiocaps_f_base))
    key, events = next(iter(annotations.items()))
    events[next(iter(events))]["source"] = ["dog\x00"]
    with pytest.raises(ImportDataError, match=rf'^fuzzed\.json: key "{key}" key ".+" key "source" index 0: contains'):
        _import_or_refusal(audiocaps_f_import, annotations, refusal_expected=True)


@given(data=st.data())
def test_pairwise_importer_refuses_malformed_input_cleanly(pairwise_base, data):
    _import_or_refusal(pairwise_judgements_import, data.draw(mutated_json(pairwise_base)))


@given(data=st.data())
def test_audiocaps_f_importer_refuses_malformed_input_cleanly(audiocaps_f_base, data):
    _import_or_refusal(audiocaps_f_import, data.draw(mutated_json(audiocaps_f_base)))


@given(document=json_values)
def test_importers_refuse_arbitrary_json_cleanly(document):
    _import_or_refusal(pairwise_judgements_import, document)
    _import_or_refusal(audiocaps_f_import, document)
