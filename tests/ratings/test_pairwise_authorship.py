"""Authorship comes from the split, not from label spelling; earlier label-based imports are corrected on re-import."""

import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from corpus.models import Caption, CaptioningSystem
from ratings.models import Campaign, CaptionPair, ThumbsRating
from ratings.services.pairwise_import import pairwise_judgements_import, system_name_from_label

pytestmark = pytest.mark.django_db


def opaque_label_items() -> list[dict]:
    """AudioCaps-Eval-like: audio_id everywhere, raw_name once, opaque human ids, `<method>_<run>` machine labels,
    a repeated reference, MM_2 null, MM_5 missing on one item, an extra field before the votes."""
    return [
        {
            "audio_id": "aaa111",
            "raw_name": "Yaaa111.wav",
            "references": ["a dog barks", "a dog barks", "a man talks", "wind blows", "birds chirp"],
            "HC": ["a dog barks", "a dog barks", "7f3a9c", "q81zz", [1, 0, -1, 1]],
            "HI": ["wind blows", "rain falls on a tin roof", "k2j4", "x9x9", {"extra": 1}, [1, 1, 1, -1]],
            "HM": ["birds chirp", "a dog is barking loudly", "h5h5", "acT_12345", [-1, -1, 0, 1]],
            "MM_1": ["a dog is barking loudly", "dog barking", "acT_12345", "base_678", [1, 1, 1, 1]],
            "MM_2": None,
        },
        {
            "audio_id": "bbb222",
            "references": ["rain falls", "heavy rain", "it rains", "rain on a roof", "rain and thunder"],
            "HC": ["heavy rain", "someone describes rain", "p0p0", "zz1", [0, 1, 0, 1]],
            "MM_3": ["rain", "rain falls", "acT_99999", "trf_5", [-1, 1, -1, 1]],
            "MM_5": ["water", "thunder", "cnn_1000", "cnn_1001", "note", [1, -1, 1, -1]],
        },
    ]


def canonical_pairs() -> list[tuple]:
    """Every pair as (clip, key, split, side a, side b), each side as (role, position, author, system, label, text)."""

    def side(caption: Caption) -> tuple:
        system = caption.system.name if caption.system else None
        return (caption.role, caption.position, caption.author_kind, system, caption.source_label, caption.text)

    pairs = CaptionPair.objects.select_related("clip", "caption_a__system", "caption_b__system")
    return sorted(
        (pair.clip.external_id, pair.source_key, pair.split, side(pair.caption_a), side(pair.caption_b))
        for pair in pairs
    )


def test_system_names_drop_only_run_numbers_of_three_or_more_digits():
    assert system_name_from_label("acT_12345") == "acT"
    assert system_name_from_label("base_678") == "base"
    assert system_name_from_label("rl_dbs_3") == "rl_dbs_3"
    assert system_name_from_label("fc_temp1.5") == "fc_temp1.5"
    assert system_name_from_label("trf_55") == "trf_55"
    assert system_name_from_label("_123") == "_123"


def test_the_split_decides_who_wrote_each_caption(capsys):
    pairwise_judgements_import(data=opaque_label_items(), dataset_name="ace", source_name="ace.json")

    assert sorted(CaptioningSystem.objects.values_list("name", flat=True)) == ["acT", "base", "cnn", "trf_5"]
    hc = CaptionPair.objects.get(clip__external_id="aaa111", source_key="HC")
    assert (hc.caption_a.role, hc.caption_a.position, hc.caption_b.position) == ("reference", 0, 1)
    hi = CaptionPair.objects.get(clip__external_id="aaa111", source_key="HI")
    assert (hi.caption_a.position, hi.caption_b.role, hi.caption_b.author_kind) == (3, "candidate", "human")
    assert hi.caption_b.source_label == "x9x9" and hi.caption_b.system is None
    hm = CaptionPair.objects.get(clip__external_id="aaa111", source_key="HM")
    assert hm.caption_a.position == 4
    assert (hm.caption_b.system.name, hm.caption_b.source_label) == ("acT", "acT_12345")
    mm1 = CaptionPair.objects.get(clip__external_id="aaa111", source_key="MM_1")
    assert mm1.caption_a_id == hm.caption_b_id  # one machine caption in two pairs
    hc2 = CaptionPair.objects.get(clip__external_id="bbb222", source_key="HC")
    assert (hc2.caption_a.position, hc2.caption_b.role, hc2.caption_b.source_label) == (1, "candidate", "zz1")
    mm5 = CaptionPair.objects.get(clip__external_id="bbb222", source_key="MM_5")
    assert (mm5.caption_a.system.name, mm5.caption_b.system.name) == ("cnn", "cnn")
    assert (mm5.caption_a.source_label, mm5.caption_b.source_label) == ("cnn_1000", "cnn_1001")
    # no human-written caption is filed under a system, and no reference is stored twice
    human_texts = {
        "a dog barks",
        "a man talks",
        "wind blows",
        "birds chirp",
        "heavy rain",
        "someone describes rain",
        "rain falls on a tin roof",
    }
    assert not Caption.objects.filter(author_kind="machine", text__in=human_texts).exists()
    assert Caption.objects.filter(role="reference").count() == 10

    call_command("dataset_stats", "--dataset", "ace", "--format", "json")
    stats = json.loads(capsys.readouterr().out)
    assert (stats["human_candidates"], stats["machine_candidates"]) == (2, 6)
    assert stats["systems"] == ["acT", "base", "cnn", "trf_5"]
    assert stats["candidate_captions"] == 8


def _file_like_the_label_based_importer(items: list[dict], rater) -> None:
    """Rewrite a correct import into what the importer made of it before authorship came from the split:
    every caption whose label is not `human_k` was filed as a machine caption of a system named after the
    full label (so references a pair compared got a machine twin), and HI's caption b too."""
    systems: dict[str, CaptioningSystem] = {}

    def system(label: str) -> CaptioningSystem:
        if label not in systems:
            systems[label], _ = CaptioningSystem.objects.get_or_create(name=label)
        return systems[label]

    twins: dict[tuple[int, str, str], Caption] = {}
    for pair in CaptionPair.objects.select_related("clip").order_by("pk"):
        item = next(i for i in items if i["audio_id"] == pair.clip.external_id)
        entry = item[pair.source_key]
        for side, text, label in (("caption_a", entry[0], entry[2]), ("caption_b", entry[1], entry[3])):
            key = (pair.clip_id, label, text)
            if key not in twins:
                current = getattr(pair, side)
                if current.role == "candidate" and current.author_kind == "machine":
                    current.system = system(label)
                    current.save()
                    twins[key] = current
                else:
                    twins[key] = Caption.objects.create(
                        clip=pair.clip,
                        text=text,
                        role="candidate",
                        author_kind="machine",
                        system=system(label),
                        source_label=label,
                    )
                    if current.role == "candidate":
                        ThumbsRating.objects.filter(caption=current).update(caption=twins[key])
                        current.delete()
            setattr(pair, side, twins[key])
        pair.save()
    CaptioningSystem.objects.filter(captions__isnull=True).delete()


def test_reimporting_corrects_a_label_based_import_without_duplicating_anything(make_user):
    items = opaque_label_items()
    pairwise_judgements_import(data=items, dataset_name="ace", source_name="ace.json")
    expected_pairs, expected_captions = canonical_pairs(), Caption.objects.count()
    rater = make_user("rita", "rater")
    _file_like_the_label_based_importer(items, rater)
    misfiled_human = Caption.objects.get(system__name="h5h5")  # "birds chirp", a reference, filed as a system
    study = Campaign.objects.create(name="rita-study", dataset=misfiled_human.clip.dataset, task_type="thumbs")
    ThumbsRating.objects.create(
        rater=rater, caption=misfiled_human, campaign=study, precision=4, recall=3, fluency=Decimal("-0.1")
    )
    assert CaptioningSystem.objects.filter(name__in=["7f3a9c", "x9x9", "acT_12345", "cnn_1000"]).count() == 4
    assert canonical_pairs() != expected_pairs

    summary = pairwise_judgements_import(data=items, dataset_name="ace", source_name="ace.json")

    assert canonical_pairs() == expected_pairs
    assert Caption.objects.count() == expected_captions
    assert sorted(CaptioningSystem.objects.values_list("name", flat=True)) == ["acT", "base", "cnn", "trf_5"]
    rating = ThumbsRating.objects.get(rater=rater)
    assert (rating.caption.role, rating.caption.position, rating.caption.text) == ("reference", 4, "birds chirp")
    assert summary.count("misfiled captions", "updated") > 0
    again = pairwise_judgements_import(data=items, dataset_name="ace", source_name="ace.json")
    assert not again.changed_anything and canonical_pairs() == expected_pairs


def test_clotho_eval_yields_exactly_its_machine_systems_and_no_human_caption_under_a_system(shared_dir, capsys):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())
    machine_labels = {entry[3] for item in items for entry in [item["HM"]]}
    machine_labels |= {label for item in items for key in item if key.startswith("MM_") for label in item[key][2:4]}
    human_texts = {(item["raw_name"], item[key][0]) for item in items for key in ("HC", "HI", "HM")}
    human_texts |= {(item["raw_name"], item[key][1]) for item in items for key in ("HC", "HI")}

    pairwise_judgements_import(data=items, dataset_name="clotho-eval", source_name="clotho_eval.json")

    call_command("dataset_stats", "--dataset", "clotho-eval", "--format", "json")
    stats = json.loads(capsys.readouterr().out)
    assert stats["systems"] == sorted(machine_labels) and len(stats["systems"]) == 16
    machine = set(Caption.objects.filter(author_kind="machine").values_list("clip__external_id", "text"))
    assert not machine & human_texts
    assert stats["machine_candidates"] + stats["human_candidates"] == stats["candidate_captions"]
