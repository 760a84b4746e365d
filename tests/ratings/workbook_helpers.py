"""Shared pieces of the workbook tests: a small THumBS campaign, filling a workbook like a person, counts."""

import io
import re
import struct
import wave
import zipfile
from decimal import Decimal

import openpyxl
from django.apps import apps
from django.core.files.base import ContentFile

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from ratings.services.campaigns import campaign_add_raters, campaign_create

P1_WORKBOOK = "datasets/thumbs/P1_excel.xlsx"
FILL_SCRIPT = "checks/fill_thumbs_workbook.py"


def wav_bytes(frames: int = 800) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(8000)
        audio.writeframes(b"".join(struct.pack("<h", (index * 37) % 2000) for index in range(frames)))
    return buffer.getvalue()


def thumbs_campaign(*, name: str, raters=(), texts: dict[str, list[str]] | None = None, with_audio: bool = False):
    """A THumBS campaign whose clips ("1.wav", ...) each have a human reference and a machine caption."""
    dataset = Dataset.objects.create(name=f"{name}-data")
    system = CaptioningSystem.objects.create(name=f"{name}-system")
    texts = texts or {
        f"{number}.wav": [f"Birds sing near clip {number}.", f"A car passes by in clip {number}."]
        for number in (1, 2, 3)
    }
    captions = []
    for record_id, clip_texts in texts.items():
        clip = Clip.objects.create(dataset=dataset, external_id=record_id, file_name=record_id)
        if with_audio:
            clip.audio.save(record_id if "." in record_id else f"{record_id}.wav", ContentFile(wav_bytes()), save=True)
        for index, text in enumerate(clip_texts):
            if index == 0:
                captions.append(
                    Caption.objects.create(clip=clip, text=text, role="reference", position=0, author_kind="human")
                )
            else:
                captions.append(
                    Caption.objects.create(clip=clip, text=text, role="candidate", author_kind="machine", system=system)
                )
    campaign = campaign_create(name=name, dataset=dataset, task_type="thumbs", captions=captions)
    if raters:
        campaign_add_raters(campaign=campaign, raters=list(raters))
    return campaign


def caption_rows(sheet) -> list[tuple[int, str, str, int]]:
    """(row, record ID, caption text, clip's first row) for each caption row, found like a person would."""
    rows, current = [], None
    for row, values in enumerate(sheet.iter_rows(min_row=1, max_col=4, values_only=True), start=1):
        _, record, label, text = (*values, None, None, None, None)[:4]
        if isinstance(label, str) and label.strip().lower().startswith("caption") and text:
            if record:
                current = (str(record).strip(), row)
            rows.append((row, current[0], text, current[1]))
    return rows


def workbook_fill(
    content: bytes, values: dict[tuple[str, str], dict], synthesized: dict[str, str] | None = None
) -> bytes:
    """Type values into an exported workbook: values[(record_id, caption)] = {column letter: value}."""
    book = openpyxl.load_workbook(io.BytesIO(content))
    sheet = book["Assessment"]
    for row, record_id, text, first_row in caption_rows(sheet):
        for letter, value in values.get((record_id, text), {}).items():
            sheet[f"{letter}{row}"] = value
        if synthesized and record_id in synthesized and row == first_row:
            sheet[f"J{row}"] = synthesized[record_id]
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def overall(precision, recall, fluency, conciseness, irrelevance) -> Decimal:
    return (
        Decimal(precision + recall) / 2 + Decimal(str(fluency)) + Decimal(str(conciseness)) + Decimal(str(irrelevance))
    )


def table_counts() -> dict[str, int]:
    """Rows in every auth/corpus/annotation/ratings table, to prove that a refused import wrote nothing."""
    counted_apps = ("auth", "corpus", "annotation", "ratings")
    return {
        model._meta.label: model.objects.count()
        for model in apps.get_models(include_auto_created=True)
        if model._meta.app_label in counted_apps and model._meta.label != "ratings.WorkbookUpload"
    }


_FULL_ROW_MERGE = re.compile(rb'<mergeCell ref="([A-Z]+)(\d+):XFD(\d+)"/>')


def light_copy(content: bytes) -> bytes:
    """The same workbook with full-row merges (A1:XFD1) narrowed to A:K.

    openpyxl's normal (editing) mode styles every cell of a merged range on load, which takes minutes
    for the study's 16384-column merges; the importer reads in read-only mode and is not affected.
    """
    source = zipfile.ZipFile(io.BytesIO(content))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.startswith("xl/worksheets/sheet"):
                data = _FULL_ROW_MERGE.sub(rb'<mergeCell ref="\1\2:K\3"/>', data)
            target.writestr(info, data)
    return buffer.getvalue()


def clip_of_record(campaign, rater) -> dict[str, str]:
    """The rater's record IDs (their item tokens, as in their workbook) -> the clip's external id."""
    from ratings.models import AssignmentItem

    items = AssignmentItem.objects.filter(assignment__campaign=campaign, assignment__rater=rater).select_related("clip")
    return {item.record_id: item.clip.external_id for item in items}


def outside_workbook_make(*, helper) -> bytes:
    """A filled workbook as a study run outside the app would have it: record IDs are its own file names
    ("study-1.wav" ...), not app tokens. Made by exporting one for `helper` and renaming its records."""
    from ratings.models import Assignment, AssignmentItem
    from ratings.services.workbooks import rater_workbook_export

    source = thumbs_campaign(name="elsewhere")
    content = next(iter(rater_workbook_export(campaign=source, rater=helper).workbooks.values()))
    sheet = openpyxl.load_workbook(io.BytesIO(content))["Assessment"]
    values = {(record_id, text): {"E": 4, "F": 3} for _, record_id, text, _ in caption_rows(sheet)}
    content = workbook_fill(
        content, values, synthesized={record_id: "no" for _, record_id, _, _ in caption_rows(sheet)}
    )
    book = openpyxl.load_workbook(io.BytesIO(content))
    names = {
        item.token: f"study-{item.clip.external_id}"
        for item in AssignmentItem.objects.filter(assignment__rater=helper).select_related("clip")
    }
    for row in book["Assessment"].iter_rows():
        for cell in row:
            if cell.value in names:
                cell.value = names[cell.value]
    del book["_versions"]
    buffer = io.BytesIO()
    book.save(buffer)
    Assignment.objects.filter(rater=helper).delete()
    return buffer.getvalue()


def xlsx_temporary_file(content: bytes) -> str:
    """The workbook in a temporary file (for the import command), kept until the test's temp dir goes."""
    import tempfile

    handle = tempfile.NamedTemporaryFile(suffix=".xlsx", delete=False)
    handle.write(content)
    handle.close()
    return handle.name
