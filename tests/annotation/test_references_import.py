"""import_references: Clotho and AudioCaps CSV layouts, idempotence, corrections, errors."""

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Caption, Clip
from ratings.services.pairwise_import import pairwise_judgements_import
from tests.annotation.table_counts import all_rows_snapshot

pytestmark = pytest.mark.django_db

CLOTHO = """file_name,caption_1,caption_2,caption_3,caption_4,caption_5
a.wav,one a,two a,three a,four a,five a
b.wav,"one, b",two b,three b,four b,five b
"""
AUDIOCAPS = """audiocap_id,youtube_id,start_time,caption
91139,r1nicOVtvkQ,130,A woman talks nearby as water pours
58146,UDGBjjwyaqE,20,Multiple clanging and clanking sounds
91140,r1nicOVtvkQ,130,Water pours as a woman speaks
"""


def _refs(external_id: str) -> list[str]:
    clip = Clip.objects.get(external_id=external_id)
    return list(clip.captions.filter(role="reference").order_by("position").values_list("text", flat=True))


def test_clotho_layout_twice_changes_nothing(tmp_path):
    path = tmp_path / "clotho_captions.csv"
    path.write_text(CLOTHO)
    call_command("import_references", str(path), "--dataset", "new-set")
    assert _refs("a.wav") == ["one a", "two a", "three a", "four a", "five a"]
    assert _refs("b.wav")[0] == "one, b"
    assert Clip.objects.get(external_id="b.wav").file_name == "b.wav"
    before = all_rows_snapshot()
    call_command("import_references", str(path), "--dataset", "new-set")
    assert all_rows_snapshot() == before


def test_audiocaps_layout_groups_rows_by_video_and_matches_existing_clips(tmp_path):
    pairwise_judgements_import(
        data=[{"audio_id": "r1nicOVtvkQ", "references": ["x"], "HC": ["x", "y", "1", "2", [1]]}],
        dataset_name="ace",
        source_name="p.json",
    )
    path = tmp_path / "test.csv"
    path.write_text(AUDIOCAPS)
    call_command("import_references", str(path), "--dataset", "ace")
    assert _refs("r1nicOVtvkQ") == ["A woman talks nearby as water pours", "Water pours as a woman speaks"]
    assert _refs("UDGBjjwyaqE") == ["Multiple clanging and clanking sounds"]
    assert Clip.objects.filter(dataset__name="ace").count() == 2
    assert Clip.objects.get(external_id="UDGBjjwyaqE").file_name == "YUDGBjjwyaqE.wav"
    labels = Caption.objects.filter(clip__external_id="r1nicOVtvkQ", role="reference").values_list(
        "source_label", flat=True
    )
    assert sorted(labels) == ["audiocap_91139", "audiocap_91140"]


def test_a_corrected_file_updates_texts_and_refuses_to_drop_judged_references(tmp_path):
    pairwise_judgements_import(
        data=[{"raw_name": "a.wav", "references": ["r1", "r2", "r3"], "HC": ["r1", "r3", "h1", "h3", [1, -1]]}],
        dataset_name="d",
        source_name="p.json",
    )
    path = tmp_path / "refs.csv"
    path.write_text("file_name,caption_1,caption_2\na,r1,r2 fixed\n")
    before = all_rows_snapshot()
    with pytest.raises(CommandError, match=r'clip "a.wav" would lose reference 3 \("r3"\), which judged pairs'):
        call_command("import_references", str(path), "--dataset", "d")
    assert all_rows_snapshot() == before
    path.write_text("file_name,caption_1,caption_2,caption_3\na,r1,r2 fixed,r3\n")
    call_command("import_references", str(path), "--dataset", "d")
    assert _refs("a.wav") == ["r1", "r2 fixed", "r3"]


def test_bad_rows_are_all_listed(tmp_path):
    path = tmp_path / "refs.csv"
    path.write_text("audiocap_id,youtube_id,start_time,caption\n1,abc,0,\n1,abc,0,fine\n2,,0,x\n")
    with pytest.raises(CommandError) as raised:
        call_command("import_references", str(path), "--dataset", "d")
    assert str(raised.value).splitlines() == [
        'refs.csv: row 2: caption of "abc" is empty',
        'refs.csv: row 3: audiocap_id "1" already given in row 2',
        "refs.csv: row 4: youtube_id is empty",
    ]
    path.write_text("name,text\n")
    with pytest.raises(CommandError, match="refs.csv: row 1: expected a Clotho header"):
        call_command("import_references", str(path), "--dataset", "d")
