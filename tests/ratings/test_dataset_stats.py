"""dataset_stats prints exact counts in the documented JSON shape."""

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.services.audiocaps_f import audiocaps_f_import
from corpus.models import Clip
from ratings.services.pairwise_import import pairwise_judgements_import
from tests.ratings.pairwise_data import audiocaps_eval_like


@pytest.mark.django_db
def test_json_output_is_exactly_the_documented_line(capsys):
    pairwise_judgements_import(data=audiocaps_eval_like(), dataset_name="ace", source_name="ace.json")
    audiocaps_f_import(
        data={
            "Yabc-DEF_123.wav": {
                "barks": {"source": ["dog"], "attr": ["Loud"]},
                "speaks": {"source": ["man"], "attr": []},
            }
        },
        dataset_name="ace",
        source_name="acf.json",
    )
    Clip.objects.filter(external_id="xyz987").update(audio="audio/ace/x.wav")

    call_command("dataset_stats", "--dataset", "ace", "--format", "json")

    assert capsys.readouterr().out == (
        '{"clips": 2, "clips_with_audio": 1, "reference_captions": 10, "candidate_captions": 5, '
        '"pairs": {"HC": 2, "HI": 1, "HM": 1, "MM": 3}, "votes": 28, "expert_annotations": 1, "events": 2, '
        '"human_candidates": 1, "machine_candidates": 4, "systems": ["sys_a", "sys_b", "sys_c"]}\n'
    )


@pytest.mark.django_db
def test_table_output_and_unknown_dataset(capsys):
    pairwise_judgements_import(data=audiocaps_eval_like(), dataset_name="ace", source_name="ace.json")
    call_command("dataset_stats", "--dataset", "ace", "--format", "table")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Dataset ace"
    counts = ["2", "0", "10", "5", "2", "1", "1", "3", "28", "0", "0", "1", "4"]
    assert [line.split()[-1] for line in lines[1:-1]] == counts
    assert lines[-1].split(None, 1) == ["systems", "sys_a, sys_b, sys_c"]
    with pytest.raises(CommandError, match='dataset "nope" does not exist'):
        call_command("dataset_stats", "--dataset", "nope", "--format", "json")


@pytest.mark.django_db
def test_counts_only_the_named_dataset(capsys):
    pairwise_judgements_import(data=audiocaps_eval_like(), dataset_name="one", source_name="a.json")
    pairwise_judgements_import(data=audiocaps_eval_like()[:1], dataset_name="two", source_name="b.json")
    call_command("dataset_stats", "--dataset", "two", "--format", "json")
    stats = json.loads(capsys.readouterr().out)
    assert (stats["clips"], stats["reference_captions"], stats["votes"], stats["pairs"]) == (
        1,
        5,
        16,
        {"HC": 1, "HI": 1, "HM": 1, "MM": 1},
    )
