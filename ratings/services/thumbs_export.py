"""Export a campaign's THumBS ratings: one row per rating, and per-caption averages per clip.

Rows (JSON keys, CSV/xlsx columns): rater, record_id, caption, precision, recall, fluency,
conciseness, irrelevance, synthesized (true/false/null), comment (null when empty), overall
((P + R) / 2 + F + C + I, a float). Caption authorship (author_kind, system) is added only when
asked for: it is for admins, never for raters.

`record_id` is the identifier *that rater* knew the clip by: the random token of their assignment
item (in their page URLs and their workbook), or, for a study run outside the app, the record ID of
their own workbook (e.g. "3.wav"). So a rater's workbook and their rows match on (record_id, caption),
and record IDs differ between raters of the same clip on purpose (see ratings/services/workbook_export.py).

Averages follow the study's results file (SoundSCaper_expert_evaluation_results.xlsx): one row per
clip and caption with the mean of each score over the raters who rated it.

Excluded raters (Campaign.excluded_raters) are left out of *reports*; a data export keeps them
unless `skip_excluded` is set, which keeps only the ratings every figure counts
(ratings.selectors.included_thumbs_ratings: also no attention-check answers or study previews).
"""

import csv
import io
import json
from collections import defaultdict
from decimal import Decimal

from openpyxl import Workbook
from openpyxl.styles import Font

from ratings.models import AssignmentItem, Campaign, ThumbsRating
from ratings.selectors import included_thumbs_ratings
from ratings.workbooks.writer import FORMULA_STARTS, text_put

RATING_KEYS = (
    "rater",
    "record_id",
    "caption",
    "precision",
    "recall",
    "fluency",
    "conciseness",
    "irrelevance",
    "synthesized",
    "comment",
    "overall",
)
AUTHORSHIP_KEYS = ("author_kind", "system")
# (JSON key, spreadsheet header as in the study's results file)
AVERAGE_COLUMNS = (
    ("no", "No."),
    ("record_id", "Audio ID"),
    ("caption", "Caption"),
    ("ratings", "Ratings"),
    ("precision_avg", "Precision_Avg"),
    ("recall_avg", "Recall_Avg"),
    ("fluency_avg", "Fluency_Avg"),
    ("conciseness_avg", "Conciseness_Avg"),
    ("irrelevance_avg", "Irrelevance_Avg"),
    ("overall_avg", "OverallScore_Avg"),
)
AVERAGE_AUTHORSHIP_COLUMNS = (("author_kind", "Author kind"), ("system", "System"))
TEXT_KEYS = {"rater", "record_id", "caption", "comment", "system", "author_kind"}
_SCORES = ("precision", "recall", "fluency", "conciseness", "irrelevance")


def _synthesized(value: str) -> bool | None:
    return {ThumbsRating.Synthesized.YES: True, ThumbsRating.Synthesized.NO: False}.get(value)


def thumbs_rating_rows(
    *, campaign: Campaign, include_authorship: bool = False, skip_excluded: bool = False
) -> list[dict]:
    """One dict per rating of the campaign, ordered by clip, caption and rater."""
    ratings = ThumbsRating.objects.filter(campaign=campaign)
    if skip_excluded:
        ratings = included_thumbs_ratings(ratings)
    fields = [
        "rater__username",
        "rater_id",
        "caption__clip_id",
        "caption_id",
        "caption__text",
        "caption__clip__external_id",
        *_SCORES,
        "synthesized",
        "comment",
    ]
    if include_authorship:
        fields += ["caption__author_kind", "caption__system__name"]
    record_ids = _record_ids(campaign)
    rows = []
    for values in ratings.order_by("caption__clip__external_id", "caption_id", "rater__username").values(*fields):
        overall = (
            Decimal(values["precision"] + values["recall"]) / 2
            + values["fluency"]
            + values["conciseness"]
            + values["irrelevance"]
        )
        row = {
            "rater": values["rater__username"],
            "record_id": record_ids.get(
                (values["rater_id"], values["caption__clip_id"]), values["caption__clip__external_id"]
            ),
            "caption": values["caption__text"],
            "precision": values["precision"],
            "recall": values["recall"],
            "fluency": float(values["fluency"]),
            "conciseness": float(values["conciseness"]),
            "irrelevance": float(values["irrelevance"]),
            "synthesized": _synthesized(values["synthesized"]),
            "comment": values["comment"] or None,
            "overall": float(overall),
        }
        if include_authorship:
            row["author_kind"] = values["caption__author_kind"]
            row["system"] = values["caption__system__name"]
        row["_caption_id"] = values["caption_id"]
        row["_clip"] = values["caption__clip__external_id"]
        rows.append(row)
    return rows


def _record_ids(campaign: Campaign) -> dict[tuple[int, int], str]:
    """(rater id, clip id) -> the record ID that rater knew the clip by in this campaign."""
    items = AssignmentItem.objects.filter(assignment__campaign=campaign, pair__isnull=True)
    return {
        (rater_id, clip_id): outside_record_id or token
        for rater_id, clip_id, outside_record_id, token in items.values_list(
            "assignment__rater_id", "clip_id", "outside_record_id", "token"
        )
    }


def thumbs_caption_averages(rows: list[dict]) -> list[dict]:
    """Per clip and caption: how many ratings, and the mean of each score and of overall."""
    groups: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        groups[row["_caption_id"]].append(row)
    averages = []
    for number, group in enumerate(
        sorted(groups.values(), key=lambda group: (group[0]["_clip"], group[0]["_caption_id"])), start=1
    ):
        first = group[0]
        # Raters know a clip by different record IDs; the per-clip sheet (an admin report) names the clip itself.
        entry = {"no": number, "record_id": first["_clip"], "caption": first["caption"], "ratings": len(group)}
        for name in (*_SCORES, "overall"):
            entry[f"{name}_avg"] = float(sum(Decimal(str(row[name])) for row in group) / len(group))
        if "author_kind" in first:
            entry["author_kind"], entry["system"] = first["author_kind"], first["system"]
        averages.append(entry)
    return averages


def _public(row: dict) -> dict:
    return {key: value for key, value in row.items() if not key.startswith("_")}


def ratings_json(rows: list[dict]) -> str:
    return json.dumps([_public(row) for row in rows], ensure_ascii=False, indent=1)


def averages_json(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    return json.dumps([{key: row.get(key) for key, _ in columns} for row in rows], ensure_ascii=False, indent=1)


def _csv_cell(key: str, value):
    # A spreadsheet opening the CSV would run text that starts like a formula; a leading apostrophe stops it.
    if key in TEXT_KEYS and isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    if value is None:
        return ""
    return value


def rows_csv(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([header for _, header in columns])
    for row in rows:
        writer.writerow([_csv_cell(key, row.get(key)) for key, _ in columns])
    return buffer.getvalue()


def rating_columns(*, include_authorship: bool) -> list[tuple[str, str]]:
    keys = RATING_KEYS + (AUTHORSHIP_KEYS if include_authorship else ())
    return [(key, key) for key in keys]


def average_columns(*, include_authorship: bool) -> list[tuple[str, str]]:
    return list(AVERAGE_COLUMNS) + (list(AVERAGE_AUTHORSHIP_COLUMNS) if include_authorship else [])


def _sheet_fill(sheet, rows: list[dict], columns: list[tuple[str, str]]) -> None:
    sheet.append([header for _, header in columns])
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    for row_number, row in enumerate(rows, start=2):
        for column_number, (key, _) in enumerate(columns, start=1):
            value = row.get(key)
            cell = sheet.cell(row_number, column_number)
            if isinstance(value, str):
                text_put(cell, value)
            elif isinstance(value, bool):
                cell.value = "yes" if value else "no"
            else:
                cell.value = value
    sheet.freeze_panes = "A2"


def ratings_xlsx(rows: list[dict], *, include_authorship: bool) -> bytes:
    """Sheet `Ratings` (one row per rating) and sheet `Per clip` (averages per clip and caption)."""
    book = Workbook()
    ratings_sheet = book.active
    ratings_sheet.title = "Ratings"
    _sheet_fill(ratings_sheet, rows, rating_columns(include_authorship=include_authorship))
    _sheet_fill(
        book.create_sheet("Per clip"),
        thumbs_caption_averages(rows),
        average_columns(include_authorship=include_authorship),
    )
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()
