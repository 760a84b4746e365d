"""The FENSE-format pairwise import (Clotho-Eval, AudioCaps-Eval): counts, caption identity, idempotence, errors."""

import json
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from corpus.services.importing import ImportDataError
from ratings.models import CaptionPair, PairwiseVote
from ratings.services.pairwise_import import pairwise_judgements_import, pairwise_judgements_import_from_path
from tests.annotation.table_counts import all_rows_snapshot, all_table_counts
from tests.ratings.pairwise_data import audiocaps_eval_like

SIGNED = {"a": 1, "b": -1, "none": 0}


def signed(vote) -> int:
    """The FENSE file's encoding of a vote: +1 when a is better, -1 when b is better, 0 without preference."""
    return SIGNED[vote.choice]


@pytest.fixture(scope="module")
def clotho_items(shared_dir):
    return json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())


@pytest.mark.django_db
def test_clotho_eval_import_gives_the_published_counts_and_a_second_run_changes_nothing(shared_dir):
    path = shared_dir / "datasets" / "clotho_eval.json"
    call_command("import_pairwise_judgements", str(path), "--dataset", "clotho-eval")

    dataset = Dataset.objects.get(name="clotho-eval")
    assert Clip.objects.filter(dataset=dataset).count() == 250
    assert Caption.objects.filter(role=Caption.Role.REFERENCE).count() == 1250
    assert Counter(CaptionPair.objects.values_list("split", flat=True)) == {"HC": 250, "HI": 250, "HM": 250, "MM": 1000}
    assert PairwiseVote.objects.count() == 7000
    assert set(PairwiseVote.objects.values_list("source", flat=True)) == {"import"}
    counts_after_first, rows_after_first = all_table_counts(), all_rows_snapshot()

    summary = pairwise_judgements_import_from_path(path=path, dataset_name="clotho-eval")

    assert all_table_counts() == counts_after_first
    assert all_rows_snapshot() == rows_after_first
    assert not summary.changed_anything
    assert summary.count("votes", "unchanged") == 7000


@pytest.mark.django_db
def test_clotho_eval_captions_pairs_and_votes_match_the_file(clotho_items):
    pairwise_judgements_import(data=clotho_items, dataset_name="clotho-eval", source_name="clotho_eval.json")

    pairs = {
        (pair.clip.external_id, pair.source_key): pair
        for pair in CaptionPair.objects.select_related("clip", "caption_a__system", "caption_b__system")
    }
    votes = {
        (vote.pair_id, vote.rater.username): signed(vote)
        for vote in PairwiseVote.objects.select_related("rater").order_by("pk")
    }
    for item in clotho_items:
        clip = Clip.objects.get(external_id=item["raw_name"])
        assert clip.file_name == item["raw_name"]
        references = list(
            clip.captions.filter(role=Caption.Role.REFERENCE).order_by("position").values_list("text", flat=True)
        )
        assert references == item["references"]
        for key in ("HC", "HI", "HM", "MM_1", "MM_2", "MM_3", "MM_4"):
            text_a, text_b, source_a, source_b, judge_votes = item[key]
            pair = pairs[(item["raw_name"], key)]
            assert (pair.caption_a.text, pair.caption_b.text, pair.split) == (text_a, text_b, key[:2])
            assert [votes[(pair.pk, f"clotho-eval-judge-{n}")] for n in range(1, 5)] == judge_votes
            if key == "HC":  # both are references, at the slot their human_k names
                assert pair.caption_a.role == pair.caption_b.role == Caption.Role.REFERENCE
                assert pair.caption_a.position == int(source_a.rsplit("_", 1)[1]) - 1
                assert pair.caption_b.position == int(source_b.rsplit("_", 1)[1]) - 1
            elif key in ("HI", "HM"):
                assert pair.caption_a.role == Caption.Role.REFERENCE
            if key == "HI":  # a human caption of another clip, kept as a candidate of this clip
                assert (pair.caption_b.role, pair.caption_b.author_kind) == ("candidate", "human")
                assert pair.caption_b.source_label == source_b
                assert pair.caption_b.clip_id == clip.pk
            if key.startswith("MM") or key == "HM":
                assert pair.caption_b.system.name == source_b
                if key.startswith("MM"):
                    assert pair.caption_a.system.name == source_a

    judges = get_user_model().objects.filter(username__startswith="clotho-eval-judge-")
    assert sorted(judges.values_list("username", flat=True)) == [f"clotho-eval-judge-{n}" for n in range(1, 5)]
    assert all(not judge.has_usable_password() and judge.groups.filter(name="rater").exists() for judge in judges)
    assert set(CaptioningSystem.objects.values_list("name", flat=True)) >= {
        "fc_dbs_2",
        "rl_temp1.5",
        "attn_temp0.5",
        "nn",
    }


@pytest.mark.django_db
def test_audiocaps_eval_like_file_with_nulls_missing_keys_duplicates_and_extra_fields():
    summary = pairwise_judgements_import(
        data=audiocaps_eval_like(), dataset_name="audiocaps-eval", source_name="audiocaps_eval.json"
    )

    first, second = Clip.objects.get(external_id="abc-DEF_123"), Clip.objects.get(external_id="xyz987")
    assert (first.file_name, second.file_name) == ("Yabc-DEF_123.wav", "")
    assert Caption.objects.filter(role="reference").count() == 10
    assert (
        list(first.captions.filter(role="reference").values_list("text", flat=True))
        == audiocaps_eval_like()[0]["references"]
    )
    assert sorted(CaptionPair.objects.values_list("clip__external_id", "source_key")) == [
        ("abc-DEF_123", "HC"),
        ("abc-DEF_123", "HI"),
        ("abc-DEF_123", "HM"),
        ("abc-DEF_123", "MM_1"),
        ("xyz987", "HC"),
        ("xyz987", "MM_2"),
        ("xyz987", "MM_5"),
    ]
    hc = CaptionPair.objects.get(clip=first, source_key="HC")
    assert (hc.caption_a.position, hc.caption_b.position) == (0, 1)  # equal texts, two reference slots
    hi = CaptionPair.objects.get(clip=first, source_key="HI")
    assert hi.caption_a.position == 2
    assert (hi.caption_b.role, hi.caption_b.author_kind, hi.caption_b.source_label) == (
        "candidate",
        "human",
        "zzz999_human_1",
    )
    hm = CaptionPair.objects.get(clip=first, source_key="HM")
    mm = CaptionPair.objects.get(clip=first, source_key="MM_1")
    assert hm.caption_a.position == 3
    assert hm.caption_b_id == mm.caption_a_id  # the same machine caption appears in two pairs, stored once
    assert [signed(v) for v in hm.votes.order_by("rater__username")] == [-1, -1, 0, 1]
    second_mm = CaptionPair.objects.get(clip=second, source_key="MM_2")
    assert [signed(v) for v in second_mm.votes.order_by("rater__username")] == [-1, 1, -1, 1]
    assert second_mm.split == "MM"
    # Two per clip: MM_5 of the second clip compares the MM_2 captions again, in swapped order.
    assert Caption.objects.filter(role="candidate", author_kind="machine").count() == 4
    assert CaptionPair.objects.get(clip=second, source_key="MM_5").caption_a_id == second_mm.caption_b_id
    assert PairwiseVote.objects.count() == 7 * 4
    assert summary.count("pairs", "created") == 7

    before = all_rows_snapshot()
    again = pairwise_judgements_import(
        data=audiocaps_eval_like(), dataset_name="audiocaps-eval", source_name="audiocaps_eval.json"
    )
    assert all_rows_snapshot() == before
    assert not again.changed_anything


@pytest.mark.django_db
def test_a_changed_vote_is_updated_in_place_on_reimport():
    pairwise_judgements_import(data=audiocaps_eval_like(), dataset_name="ace", source_name="f.json")
    items = audiocaps_eval_like()
    items[0]["HC"][4] = [-1, 0, -1, 1]

    summary = pairwise_judgements_import(data=items, dataset_name="ace", source_name="f.json")

    assert summary.count("votes", "updated") == 1
    assert PairwiseVote.objects.count() == 28
    hc = CaptionPair.objects.get(clip__external_id="abc-DEF_123", source_key="HC")
    assert [signed(v) for v in hc.votes.order_by("rater__username")] == [-1, 0, -1, 1]


def _bad_item_file(tmp_path, items, name="clotho_eval.json"):
    path = tmp_path / name
    path.write_text(json.dumps(items))
    return path


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("mutate", "expected_message"),
    [
        (
            lambda items: items[1].__setitem__("HM", "not a list"),
            'clotho_eval.json: item 1 key "HM": expected [caption_a, caption_b, source_a, source_b, votes]',
        ),
        (
            lambda items: items[1].__setitem__("HC", ["a", "b", "human_1", "human_2"]),
            'clotho_eval.json: item 1 key "HC": expected [caption_a, caption_b, source_a, source_b, votes]',
        ),
        (
            lambda items: items[1]["MM_2"][-1].__setitem__(2, 5),
            'clotho_eval.json: item 1 key "MM_2" vote 2: expected +1, -1 or 0, got 5',
        ),
        (lambda items: items[1].pop("references"), 'clotho_eval.json: item 1 key "references": missing'),
        (
            lambda items: items[1].__setitem__("references", "a dog"),
            'clotho_eval.json: item 1 key "references": expected a non-empty list',
        ),
        (
            lambda items: items.append(items[0]),
            'clotho_eval.json: item 2: clip "abc-DEF_123" already appears in item 0',
        ),
        (
            lambda items: items[0].pop("audio_id") and items[0].pop("raw_name"),
            'clotho_eval.json: item 0: needs "audio_id" or "raw_name"',
        ),
        (lambda items: items.__setitem__(1, ["not", "an", "object"]), "clotho_eval.json: item 1: expected an object"),
    ],
)
def test_bad_input_names_file_and_key_and_writes_nothing(tmp_path, mutate, expected_message):
    pairwise_judgements_import(data=audiocaps_eval_like()[:1], dataset_name="existing", source_name="x.json")
    items = audiocaps_eval_like()
    mutate(items)
    path = _bad_item_file(tmp_path, items)
    before = all_rows_snapshot()

    with pytest.raises(CommandError) as raised:
        call_command("import_pairwise_judgements", str(path), "--dataset", "clotho-eval")

    assert str(raised.value).startswith(expected_message)
    assert all_rows_snapshot() == before
    assert not Dataset.objects.filter(name="clotho-eval").exists()


@pytest.mark.django_db
def test_file_that_is_not_json_or_not_there_or_not_a_list(tmp_path):
    not_json = tmp_path / "clotho_eval.json"
    not_json.write_text('[{"HC": ')
    wrong_shape = _bad_item_file(tmp_path, {"HC": []}, name="shape.json")
    before = all_table_counts()

    with pytest.raises(CommandError, match=r"^clotho_eval\.json: not valid JSON \(line 1 column 9"):
        call_command("import_pairwise_judgements", str(not_json), "--dataset", "d")
    with pytest.raises(CommandError, match=r"^shape\.json: expected a list of items, got an object"):
        call_command("import_pairwise_judgements", str(wrong_shape), "--dataset", "d")
    with pytest.raises(CommandError, match=r"missing\.json: no such file"):
        call_command("import_pairwise_judgements", str(tmp_path / "missing.json"), "--dataset", "d")
    with pytest.raises(ImportDataError, match=r'dataset name "no spaces" must contain only'):
        pairwise_judgements_import(data=[], dataset_name="no spaces", source_name="x.json")

    assert all_table_counts() == before


@pytest.mark.django_db
def test_the_command_prints_a_summary(tmp_path, capsys):
    path = _bad_item_file(tmp_path, audiocaps_eval_like(), name="ace.json")
    call_command("import_pairwise_judgements", str(path), "--dataset", "ace")
    output = capsys.readouterr().out
    assert "Imported ace.json:" in output
    assert "pairs" in output and "7 created, 0 updated, 0 unchanged" in output
    assert "votes" in output and "28 created" in output


@pytest.mark.django_db
def test_equal_reference_texts_with_unhelpful_source_numbers_stay_two_captions():
    item = {
        "audio_id": "dup",
        "references": ["x", "y", "x", "z", "w"],
        "HC": ["x", "x", "human_4", "human_5", [1, 1, 1, 1]],
    }

    pairwise_judgements_import(data=[item], dataset_name="dups", source_name="dups.json")

    pair = CaptionPair.objects.get()
    assert (pair.caption_a.role, pair.caption_a.position) == ("reference", 0)
    assert (pair.caption_b.role, pair.caption_b.position) == ("reference", 2)
