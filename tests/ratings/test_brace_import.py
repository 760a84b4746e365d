"""BRACE-Main and BRACE-Hallucination imports (protocols.md §6): layout from the content, what is stored,
re-import, and refusals that name the file, item and key and write nothing."""

import copy
import json

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from corpus.services.importing import ImportDataError
from ratings.models import CaptionPair, PairwiseVote
from ratings.services.pairwise_import import pairwise_judgements_import
from tests.annotation.table_counts import all_rows_snapshot, all_table_counts

# Imports write in bulk inside one transaction and re-read what they wrote: checked on SQLite too.
pytestmark = [pytest.mark.django_db, pytest.mark.db_specific]


@pytest.fixture
def main_items(shared_dir):
    return json.loads((shared_dir / "datasets" / "brace_format" / "brace_main_sample.json").read_text())


@pytest.fixture
def hallucination_items(shared_dir):
    return json.loads((shared_dir / "datasets" / "brace_format" / "brace_hallucination_sample.json").read_text())


def _import(items, name="brace", source="brace.json"):
    return pairwise_judgements_import(data=items, dataset_name=name, source_name=source)


def test_main_sample_imports_every_pair_with_its_split_systems_and_votes_and_twice_changes_nothing(shared_dir):
    path = shared_dir / "datasets" / "brace_format" / "brace_main_sample.json"
    items = json.loads(path.read_text())
    call_command("import_pairwise_judgements", str(path), "--dataset", "brace-main")

    dataset = Dataset.objects.get(name="brace-main")
    assert dataset.judgement_layout == "brace-main" and dataset.agreement_protocol == "brace"
    assert sorted(Clip.objects.values_list("external_id", "file_name")) == [
        ("kitchen 02.wav", "kitchen 02.wav"),
        ("park_03.wav", "park_03.wav"),
        ("street_01.wav", "street_01.wav"),
    ]
    # types are systems as written: SysB and SysB_broken are two systems
    assert set(CaptioningSystem.objects.values_list("name", flat=True)) == {
        "SysA",
        "SysA_broken",
        "SysB",
        "SysB_broken",
    }
    splits = {key: split for key, split in CaptionPair.objects.values_list("source_key", "split")}
    assert splits == {
        "Human-Human": "HC",
        "Human-Machine_1": "HM",
        "Human-Machine_2": "HM",
        "Machine-Machine_1": "MM",
        "Machine-Machine_2": "MM",
        "Machine-Machine_3": "MM",
    }
    assert CaptionPair.objects.count() == 10 and PairwiseVote.objects.count() == 30
    for item in items:
        clip = Clip.objects.get(external_id=item["file_name"])
        references = list(clip.captions.filter(role="reference").order_by("position").values_list("text", flat=True))
        assert references == item["references"]
        for key, (text_0, text_1, type_0, type_1, votes) in ((k, v) for k, v in item.items() if "-" in k):
            pair = CaptionPair.objects.get(clip=clip, source_key=key)
            assert (pair.caption_a.text, pair.caption_b.text) == (text_0, text_1)
            for caption, label in ((pair.caption_a, type_0), (pair.caption_b, type_1)):
                human = label == "human" or label.startswith("caption_")
                assert caption.author_kind == ("human" if human else "machine")
                assert (caption.system.name if caption.system else None) == (None if human else label)
            # the file's encoding: +1 = caption_0 (a) preferred, -1 = caption_1 (b)
            signed = [{"a": 1, "b": -1}[v.choice] for v in pair.votes.order_by("rater__username")]
            assert signed == votes
    # a reference list that repeats a caption: the Human-Human pair's two equal captions are its two copies
    kitchen = CaptionPair.objects.get(clip__external_id="kitchen 02.wav", source_key="Human-Human")
    assert (kitchen.caption_a.position, kitchen.caption_b.position) == (0, 2)

    counts, rows = all_table_counts(), all_rows_snapshot()
    call_command("import_pairwise_judgements", str(path), "--dataset", "brace-main")
    assert all_table_counts() == counts and all_rows_snapshot() == rows


def test_hallucination_sample_becomes_hallu_pairs_with_their_references_and_known_answer(hallucination_items):
    summary = _import(hallucination_items, name="brace-hallu")

    assert Dataset.objects.get(name="brace-hallu").judgement_layout == "brace-hallucination"
    pairs = {(p.clip.external_id, p.source_key): p for p in CaptionPair.objects.select_related("clip")}
    assert set(pairs) == {("street_01.wav", "caption_1"), ("street_01.wav", "caption_2"), ("park_03.wav", "caption_1")}
    for item in hallucination_items:
        for key, (text_0, text_1, type_0, _type_1, extra) in ((k, v) for k, v in item.items() if k != "file_name"):
            pair = pairs[(item["file_name"], key)]
            assert pair.split == "HALLU" and not pair.votes.exists()
            # whitespace-normalised: "\nTraffic rolls by and a violin sounds" is stored without its newline
            assert (pair.caption_a.text, pair.caption_b.text) == (" ".join(text_0.split()), " ".join(text_1.split()))
            assert pair.gold_choice == ("a" if type_0 == "human" else "b")
            assert pair.references == extra["references"]
            original = pair.caption_a if type_0 == "human" else pair.caption_b
            hallucination = pair.caption_b if type_0 == "human" else pair.caption_a
            assert original.role == "reference"
            assert (hallucination.role, hallucination.author_kind, hallucination.system_id) == (
                "candidate",
                "machine",
                None,
            )
    # the clip's references: every original and every pair reference, once each here
    street = Clip.objects.get(external_id="street_01.wav")
    assert street.captions.filter(role="reference").count() == 5
    assert "Traffic rolls by and a violin sounds" in street.captions.values_list("text", flat=True)
    assert summary.count("pairs", "created") == 3

    counts, rows = all_table_counts(), all_rows_snapshot()
    assert not _import(hallucination_items, name="brace-hallu").changed_anything
    assert all_table_counts() == counts and all_rows_snapshot() == rows


def test_a_changed_vote_or_reference_list_is_updated_in_place(main_items, hallucination_items):
    _import(main_items, name="main")
    changed = copy.deepcopy(main_items)
    changed[0]["Human-Human"][4] = [1, 1, 1]
    summary = _import(changed, name="main")
    assert summary.count("votes", "updated") == 1 and summary.count("pairs", "created") == 0

    _import(hallucination_items, name="hallu")
    changed = copy.deepcopy(hallucination_items)
    changed[1]["caption_1"][4]["references"] = changed[1]["caption_1"][4]["references"][:2]
    _import(changed, name="hallu")
    pair = CaptionPair.objects.get(clip__dataset__name="hallu", clip__external_id="park_03.wav")
    assert pair.references == hallucination_items[1]["caption_1"][4]["references"][:2]


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda items: items[1].update({"Human-Human": ["a", "b", "human", "SysA", [1, 1, 1]]}),
            "brace.json: item 1 key \"Human-Human\": types 'human' and 'SysA' do not fit the key",
        ),
        (
            lambda items: items[0]["Machine-Machine_1"].pop(),
            'brace.json: item 0 key "Machine-Machine_1": expected [caption_0, caption_1, type_0, type_1, [votes]]',
        ),
        (
            lambda items: items[0]["Human-Machine_1"][4].__setitem__(1, 2),
            'brace.json: item 0 key "Human-Machine_1" vote 1: expected +1 or -1, got 2',
        ),
        (lambda items: items[2].update({"file_name": ""}), 'brace.json: item 2 key "file_name": must not be empty'),
        (
            lambda items: items.append({"file_name": "x.wav", "references": ["a"]}),
            'brace.json: item 3: has "file_name" but no pair key of a known layout',
        ),
        (
            lambda items: items.append({"raw_name": "x.wav", "references": ["a"]}),
            "brace.json: item 3: a FENSE item in a file whose item 0 is BRACE-Main",
        ),
        (
            lambda items: items.append(copy.deepcopy(items[0])),
            'brace.json: item 3: clip "street_01.wav" already appears in item 0',
        ),
    ],
)
def test_bad_main_files_are_refused_naming_file_item_and_key_and_nothing_is_written(main_items, edit, message):
    edit(main_items)
    counts = all_table_counts()
    with pytest.raises(ImportDataError) as error:
        _import(main_items)
    assert str(error.value).startswith(message), str(error.value)
    assert all_table_counts() == counts


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda items: items[0]["caption_1"].__setitem__(3, "human"),
            "brace.json: item 0 key \"caption_1\": types 'human' and 'human': expected one \"human\"",
        ),
        (
            lambda items: items[1]["caption_1"][4].pop("references"),
            'brace.json: item 1 key "caption_1" index 4 key "references": missing',
        ),
        (
            lambda items: items[1]["caption_1"].__setitem__(4, ["refs"]),
            'brace.json: item 1 key "caption_1": expected [caption_0, caption_1, type_0, type_1, {"references"',
        ),
        (
            lambda items: items[1]["caption_1"].__setitem__(1, items[1]["caption_1"][0]),
            'brace.json: item 1 key "caption_1": the hallucinated caption is the original caption',
        ),
    ],
)
def test_bad_hallucination_files_are_refused_and_nothing_is_written(hallucination_items, edit, message):
    edit(hallucination_items)
    counts = all_table_counts()
    with pytest.raises(ImportDataError) as error:
        _import(hallucination_items)
    assert str(error.value).startswith(message), str(error.value)
    assert all_table_counts() == counts


def test_a_dataset_keeps_one_layout(main_items, hallucination_items, shared_dir):
    _import(main_items, name="mixed")
    counts = all_table_counts()
    with pytest.raises(ImportDataError, match='a BRACE-Hallucination file, but dataset "mixed" holds BRACE-Main pairs'):
        _import(hallucination_items, name="mixed")
    assert all_table_counts() == counts
    with pytest.raises(CommandError, match="clotho_eval.json: a FENSE file, but dataset"):
        call_command(
            "import_pairwise_judgements", str(shared_dir / "datasets" / "clotho_eval.json"), "--dataset", "mixed"
        )
    assert all_table_counts() == counts


def test_a_human_caption_that_is_not_a_reference_is_a_human_candidate(main_items):
    main_items[0]["Human-Machine_1"][1] = "\n  Someone honks at the cars"
    _import(main_items)
    caption = CaptionPair.objects.get(clip__external_id="street_01.wav", source_key="Human-Machine_1").caption_b
    assert (caption.text, caption.role, caption.author_kind, caption.source_label) == (
        "Someone honks at the cars",
        "candidate",
        "human",
        "human",
    )
    assert Caption.objects.filter(text__startswith="\n").count() == 0
