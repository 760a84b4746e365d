"""Property-based fuzzing of the CSV importers: system captions (DCASE `file_name,caption_predicted`, or JSON)
and reference captions (Clotho and AudioCaps CSV layouts).

Inputs are small valid files for a dataset made from two Clotho-Eval items, with random edits: cells replaced
by any text (commas, quotes, line breaks, NUL, formula-like text), rows removed or duplicated, columns dropped,
the header renamed, bytes cut or flipped (invalid UTF-8). Every input must either import or be refused with
ImportDataError naming the file (and the row); never another exception, and a refused input leaves every
table row unchanged. An input that imports must be stored as the importers document, read back with Python's
csv module: the system's current caption of each clip named is the row's caption (trimmed), and each clip of a
Clotho file has the row's captions, in caption_N order, as its references.
"""

import csv
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus.models import Caption, Clip
from corpus.services.importing import ImportDataError
from corpus.services.references_import import references_import
from corpus.services.system_captions import system_captions_import
from ratings.services.pairwise_import import pairwise_judgements_import
from tests.fuzz.fuzz_helpers import database_fingerprint, rolled_back

pytestmark = pytest.mark.django_db

SOURCE_NAME = "fuzzed.csv"
DATASET = "fuzz"

cell_texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", " ", ",", '"', '""', "a,b", 'a "quoted" b', "line\nbreak", "\r", "\x00", "=1+1", "é", "x" * 300]
    ),
)


@pytest.fixture
def clip_names(shared_dir) -> list[str]:
    """A dataset of two Clotho-Eval clips (with their references); returns the clips' file names."""
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:2]
    pairwise_judgements_import(data=items, dataset_name=DATASET, source_name="clotho_eval.json")
    return list(Clip.objects.filter(dataset__name=DATASET).order_by("pk").values_list("external_id", flat=True))


def _csv_bytes(rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue().encode("utf-8")


@st.composite
def mutated_csv(draw, rows: list[list[str]]) -> bytes:
    """`rows` (header first) with 1..3 edits, written as CSV; sometimes the bytes themselves are damaged."""
    rows = [list(row) for row in rows]
    for _ in range(draw(st.integers(1, 3))):
        operation = draw(st.sampled_from(["cell", "cell", "delete_row", "duplicate_row", "drop_column", "add_cell"]))
        index = draw(st.integers(0, len(rows) - 1)) if rows else 0
        if not rows:
            rows.append([draw(cell_texts)])
        elif operation == "cell" and rows[index]:
            rows[index][draw(st.integers(0, len(rows[index]) - 1))] = draw(cell_texts)
        elif operation == "delete_row":
            del rows[index]
        elif operation == "duplicate_row":
            rows.insert(index, list(rows[index]))
        elif operation == "drop_column" and rows[index]:
            del rows[index][draw(st.integers(0, len(rows[index]) - 1))]
        else:
            rows[index].append(draw(cell_texts))
    content = _csv_bytes(rows)
    damage = draw(st.sampled_from(["none", "none", "none", "truncate", "flip", "bom"]))
    if damage == "truncate" and content:
        content = content[: draw(st.integers(0, len(content) - 1))]
    elif damage == "flip" and content:
        position = draw(st.integers(0, len(content) - 1))
        content = content[:position] + bytes([draw(st.integers(0x80, 0xFF))]) + content[position + 1 :]
    elif damage == "bom":
        content = b"\xef\xbb\xbf" + content
    return content


def _csv_rows(content: bytes) -> tuple[list[str], list[list[str]]]:
    """The file as Python's csv module reads it: the header (trimmed, lower case) and the non-blank rows."""
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"), newline="")))
    return [cell.strip().lower() for cell in rows[0]], [row for row in rows[1:] if any(cell.strip() for cell in row)]


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else name


def _clip_named(name: str, dataset: str = DATASET) -> Clip:
    """The clip a row names: by external id or file name, with or without extension (the importers' rule)."""
    for clip in Clip.objects.filter(dataset__name=dataset):
        names = {clip.external_id, clip.file_name, _stem(clip.external_id), _stem(clip.file_name)} - {""}
        if name in names or _stem(name) in names:
            return clip
    raise AssertionError(f"accepted, but no clip is named {name!r}")


def _cell(row: list[str], index: int) -> str:
    return row[index].strip() if index < len(row) else ""


def system_captions_as_documented(content: bytes, system_name: str) -> None:
    header, rows = _csv_rows(content)
    name, caption = header.index("file_name"), header.index("caption_predicted")
    expected = {_clip_named(_cell(row, name)).pk: _cell(row, caption) for row in rows}
    stored = Caption.objects.filter(system__name=system_name, superseded_at__isnull=True)
    assert dict(stored.values_list("clip_id", "text")) == expected and stored.count() == len(rows)


def references_as_documented(content: bytes) -> None:
    header, rows = _csv_rows(content)
    if "file_name" not in header:
        return  # the AudioCaps layout: checked by tests/annotation/test_references_import.py on its own files
    columns = sorted((int(column.split("_")[1]), index) for index, column in enumerate(header)
                     if column.startswith("caption_") and column.split("_")[1].isdigit())
    for row in rows:
        clip = _clip_named(_cell(row, header.index("file_name")))
        stored = clip.captions.filter(role="reference").order_by("position").values_list("text", flat=True)
        assert list(stored) == [_cell(row, index) for _, index in columns], clip.external_id


def _import_or_refusal(importer, content: bytes, **names) -> None:
    """Import `content`; a refusal must name the file and change nothing; an accepted file is stored as documented."""
    with rolled_back():
        before = database_fingerprint()
        try:
            importer(content=content, source_name=SOURCE_NAME, dataset_name=DATASET, **names)
        except ImportDataError as error:
            # one line per problem, each naming the file (a value quoted in a line may itself hold a line break)
            assert str(error).startswith(SOURCE_NAME), f"the error does not name the file: {error}"
            assert database_fingerprint() == before, f"a refused import changed the database ({error})"
        else:
            if importer is system_captions_import:
                system_captions_as_documented(content, names["system_name"])
            else:
                references_as_documented(content)


def _system_rows(clip_names: list[str]) -> list[list[str]]:
    return [["file_name", "caption_predicted"], *([name, f"a sound number {i}"] for i, name in enumerate(clip_names))]


def _clotho_reference_rows(clip_names: list[str]) -> list[list[str]]:
    header = ["file_name", *(f"caption_{k}" for k in range(1, 6))]
    return [header, *([name, *(f"reference {k} of {name}" for k in range(1, 6))] for name in clip_names)]


AUDIOCAPS_REFERENCE_ROWS = [
    ["audiocap_id", "youtube_id", "start_time", "caption"],
    ["91139", "r1nicOVtvkQ", "130", "A woman talks nearby as water pours"],
    ["91140", "r1nicOVtvkQ", "130", "Water pours while a woman speaks"],
    ["58146", "UDGBjjwyaqE", "20", "Multiple clanging and clanking sounds"],
]


def test_the_unmutated_files_import(clip_names):
    """The fuzz starts from valid files (so refusals come from the edits, not from the base), and each is stored
    with exactly its rows' captions: the system's caption per clip, the Clotho references in caption_N order,
    the AudioCaps captions grouped by video in the file's order."""
    with rolled_back():
        content = _csv_bytes(_system_rows(clip_names))
        system_captions_import(content=content, source_name=SOURCE_NAME, dataset_name=DATASET, system_name="s")
        system_captions_as_documented(content, "s")
        stored = Caption.objects.filter(system__name="s", superseded_at__isnull=True)
        assert sorted(stored.values_list("clip__external_id", "text")) == sorted(
            (name, f"a sound number {i}") for i, name in enumerate(clip_names)
        )

        content = _csv_bytes(_clotho_reference_rows(clip_names))
        references_import(content=content, source_name=SOURCE_NAME, dataset_name=DATASET)
        references_as_documented(content)
        for name in clip_names:
            references = Clip.objects.get(dataset__name=DATASET, external_id=name).captions.filter(role="reference")
            assert list(references.order_by("position").values_list("text", flat=True)) == [
                f"reference {k} of {name}" for k in range(1, 6)
            ]

        references_import(content=_csv_bytes(AUDIOCAPS_REFERENCE_ROWS), source_name=SOURCE_NAME, dataset_name="fuzz-ac")
        by_video = {
            clip.external_id: list(
                clip.captions.filter(role="reference").order_by("position").values_list("text", flat=True)
            )
            for clip in Clip.objects.filter(dataset__name="fuzz-ac")
        }
        assert by_video == {
            "r1nicOVtvkQ": ["A woman talks nearby as water pours", "Water pours while a woman speaks"],
            "UDGBjjwyaqE": ["Multiple clanging and clanking sounds"],
        }


def test_a_nul_character_in_a_csv_is_refused_naming_its_line(clip_names):
    """Found by the long fuzz run: a NUL in a caption cell failed inside PostgreSQL with an unhandled DataError.
    Now both CSV importers refuse it before any write, naming the line."""
    rows = _system_rows(clip_names)
    rows[2][1] = "a dog\x00 barks"
    with rolled_back(), pytest.raises(ImportDataError, match=r"^fuzzed\.csv: line 3: contains a NUL character"):
        system_captions_import(content=_csv_bytes(rows), source_name=SOURCE_NAME, dataset_name=DATASET, system_name="s")
    rows = _clotho_reference_rows(clip_names)
    rows[1][3] = "\x00"
    with rolled_back(), pytest.raises(ImportDataError, match=r"^fuzzed\.csv: line 2: contains a NUL character"):
        references_import(content=_csv_bytes(rows), source_name=SOURCE_NAME, dataset_name=DATASET)


@given(data=st.data())
def test_system_captions_importer_refuses_malformed_csv_cleanly(clip_names, data):
    content = data.draw(mutated_csv(_system_rows(clip_names)))
    _import_or_refusal(system_captions_import, content, system_name="fuzzed-system")


@given(data=st.data())
def test_reference_importer_refuses_malformed_clotho_csv_cleanly(clip_names, data):
    _import_or_refusal(references_import, data.draw(mutated_csv(_clotho_reference_rows(clip_names))))


@given(data=st.data())
def test_reference_importer_refuses_malformed_audiocaps_csv_cleanly(clip_names, data):
    _import_or_refusal(references_import, data.draw(mutated_csv(AUDIOCAPS_REFERENCE_ROWS)))
