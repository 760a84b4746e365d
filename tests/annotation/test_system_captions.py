"""import_system_captions: DCASE CSV / JSON, every problem listed, idempotent, a changed file supersedes captions."""

import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Caption, CaptioningSystem
from corpus.services.system_captions import system_captions_import
from ratings.models import Campaign, ThumbsRating
from ratings.services.pairwise_import import pairwise_judgements_import
from tests.annotation.table_counts import all_rows_snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def clotho_slice(shared_dir) -> list[dict]:
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:4]
    pairwise_judgements_import(data=items, dataset_name="slice", source_name="clotho_eval.json")
    return items


def _csv(tmp_path, rows, header="file_name,caption_predicted", name="system.csv"):
    path = tmp_path / name
    lines = [header, *(f'{clip},"{caption}"' for clip, caption in rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _current(system="mine") -> dict[str, str]:
    captions = Caption.objects.filter(system__name=system, superseded_at__isnull=True).select_related("clip")
    return {caption.clip.external_id: caption.text for caption in captions}


def test_csv_with_and_without_extensions_and_json_give_the_same_captions(tmp_path, clotho_slice):
    names = [item["raw_name"] for item in clotho_slice]
    rows = [(names[0], "a dog barks"), (names[1].rsplit(".", 1)[0], "rain falls"), (names[2], "birds sing")]
    call_command("import_system_captions", str(_csv(tmp_path, rows)), "--dataset", "slice", "--system", "mine")
    assert _current() == {names[0]: "a dog barks", names[1]: "rain falls", names[2]: "birds sing"}
    caption = Caption.objects.get(system__name="mine", clip__external_id=names[0])
    assert (caption.role, caption.author_kind, caption.source_label) == ("candidate", "machine", names[0])

    json_path = tmp_path / "other.json"
    json_path.write_text(json.dumps({names[0]: "a dog barks", names[3].rsplit(".", 1)[0]: "wind"}))
    call_command("import_system_captions", str(json_path), "--dataset", "slice", "--system", "other")
    assert _current("other") == {names[0]: "a dog barks", names[3]: "wind"}


def test_the_same_file_twice_changes_nothing(tmp_path, clotho_slice):
    path = _csv(tmp_path, [(clotho_slice[0]["raw_name"], "a dog barks")])
    call_command("import_system_captions", str(path), "--dataset", "slice", "--system", "mine")
    before = all_rows_snapshot()
    summary = system_captions_import(
        content=path.read_bytes(), source_name="s.csv", dataset_name="slice", system_name="mine"
    )
    assert all_rows_snapshot() == before
    assert not summary.changed_anything


def test_a_changed_file_supersedes_old_captions_and_keeps_their_ratings(tmp_path, clotho_slice, make_user):
    first, second = clotho_slice[0]["raw_name"], clotho_slice[1]["raw_name"]
    call_command(
        "import_system_captions",
        str(_csv(tmp_path, [(first, "old one"), (second, "kept")])),
        "--dataset",
        "slice",
        "--system",
        "mine",
    )
    old = Caption.objects.get(text="old one")
    study = Campaign.objects.create(name="study", dataset=old.clip.dataset, task_type="thumbs")
    rating = ThumbsRating.objects.create(
        rater=make_user("r", "rater"), caption=old, campaign=study, precision=3, recall=3, fluency=Decimal("0")
    )

    call_command(
        "import_system_captions",
        str(_csv(tmp_path, [(first, "new one")], name="v2.csv")),
        "--dataset",
        "slice",
        "--system",
        "mine",
    )

    assert _current() == {first: "new one", second: "kept"}
    old.refresh_from_db()
    assert old.superseded_at is not None and ThumbsRating.objects.get(pk=rating.pk).caption_id == old.pk
    # going back to the first text brings the old caption back instead of a duplicate
    call_command(
        "import_system_captions",
        str(_csv(tmp_path, [(first, "old one")], name="v3.csv")),
        "--dataset",
        "slice",
        "--system",
        "mine",
    )
    assert _current() == {first: "old one", second: "kept"}
    assert Caption.objects.filter(system__name="mine", clip__external_id=first).count() == 2
    old.refresh_from_db()
    assert old.superseded_at is None


def test_every_problem_is_listed_with_its_row_and_nothing_is_written(tmp_path, clotho_slice):
    name = clotho_slice[0]["raw_name"]
    path = _csv(
        tmp_path,
        [
            (name, "fine"),
            ("nope.wav", "a caption"),
            (clotho_slice[1]["raw_name"], "  "),
            (name.rsplit(".", 1)[0], "again"),
        ],
    )
    before = all_rows_snapshot()
    with pytest.raises(CommandError) as raised:
        call_command("import_system_captions", str(path), "--dataset", "slice", "--system", "mine")
    lines = str(raised.value).splitlines()
    assert lines == [
        'system.csv: row 3: file_name "nope.wav": no clip of this dataset has that file name or id',
        f'system.csv: row 4: caption for "{clotho_slice[1]["raw_name"]}" is empty',
        f'system.csv: row 5: file_name "{name.rsplit(".", 1)[0]}": the same clip as row 2',
    ]
    assert all_rows_snapshot() == before
    assert not CaptioningSystem.objects.filter(name="mine").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("clip,caption\nx,y\n", "system.csv: row 1: header must have columns file_name, caption_predicted"),
        ('{"a": 3}', 'system.csv: entry 1: file_name "a": no clip of this dataset'),
        ('{"x": "y"', "system.csv: not valid JSON"),
        ("file_name,caption_predicted\n", "system.csv: no captions in the file"),
    ],
)
def test_malformed_files(tmp_path, clotho_slice, content, message):
    path = tmp_path / "system.csv"
    path.write_text(content)
    with pytest.raises(CommandError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        call_command("import_system_captions", str(path), "--dataset", "slice", "--system", "mine")


def test_json_duplicates_and_non_text_captions_are_reported(tmp_path, clotho_slice):
    name = clotho_slice[0]["raw_name"]
    path = tmp_path / "s.json"
    path.write_text(f'{{"{name}": "one", "{name}": "two", "{clotho_slice[1]["raw_name"]}": null}}')
    with pytest.raises(CommandError) as raised:
        call_command("import_system_captions", str(path), "--dataset", "slice", "--system", "mine")
    assert str(raised.value).splitlines() == [
        f's.json: entry 2: file_name "{name}": the same clip as entry 1',
        f's.json: entry 3: caption for "{clotho_slice[1]["raw_name"]}" must be a string, got null',
    ]


def test_unknown_dataset(tmp_path):
    with pytest.raises(CommandError, match='dataset "nope" does not exist'):
        call_command("import_system_captions", str(_csv(tmp_path, [("a", "b")])), "--dataset", "nope", "--system", "x")
