"""The THumBS workbook layout of the original study (see ../shared/docs/protocols.md §2 and P1_excel.xlsx).

Sheet `Assessment`: instruction lines, a section line, a header row, then one row per caption with
the clip number and record ID (merged over the clip's rows) on the first row of each clip.
"""

import re

EXAMPLE_SHEET = "Example"
ASSESSMENT_SHEET = "Assessment"
# Very hidden sheet in workbooks this app exports: record ID -> the answer's version at export time.
VERSIONS_SHEET = "_versions"

# Field -> 1-based column in the workbooks we write (the study's order).
COLUMNS = {
    "number": 1,
    "record_id": 2,
    "caption_label": 3,
    "caption_text": 4,
    "precision": 5,
    "recall": 6,
    "fluency": 7,
    "conciseness": 8,
    "irrelevance": 9,
    "synthesized": 10,
    "comment": 11,
}
SCORE_FIELDS = ("precision", "recall", "fluency", "conciseness", "irrelevance")
PENALTY_FIELDS = ("fluency", "conciseness", "irrelevance")

# The caption-text column has no header in the study's workbooks; a text there would make the
# header row look like a caption row to tools that look for "Caption ..." with a text beside it.
HEADER_LABELS = {
    "number": "No.",
    "record_id": "Record ID",
    "caption_label": "Caption",
    "caption_text": None,
    "precision": "Precision ( [1, 5] )",
    "recall": "Recall ( [1, 5] )",
    "fluency": "Fluency (negative) ( [-2, 0] )",
    "conciseness": "Conciseness (negative) ( [-2, 0] )",
    "irrelevance": "Irrelevance (negative) ( [-2, 0] )",
    "synthesized": "Is this audio synthesized? (yes/no)",
    "comment": "Comments",
}

ASSESSMENT_INSTRUCTIONS = (
    "Please wear headphones to participate in this assessment.",
    "Please read the instructions in the Examples Sheet first and adjust the volume of your laptop or headphones.",
)
EXAMPLE_INSTRUCTIONS = (
    "Please wear headphones to participate in this assessment.",
    "The rows below show how two captions of one clip were scored; adjust the volume of your laptop or headphones "
    "on the first clip of the Assessment sheet.",
)
# The study's example captions and scores (Example sheet of P1_excel.xlsx). Its clip is not sent with the workbook
# (it was the study's own recording), so the record says it is an example rather than naming a file that is not there.
EXAMPLE_RECORD_ID = "Example (no audio)"
EXAMPLE_ROWS = (
    (
        "In this park, there are a few crisp bird songs accompanied by the rumbling wind at the beginning, and there "
        "is a regular birdsong at the end of the audio clip. The overall atmosphere feels quiet, peaceful, and "
        "pleasant.",
        (4, 4, 0, 0, 0),
    ),
    (
        "This seems to be a park close to the street, with regular bird songs and wind-like noises. The birdsong "
        "sounds from  loud to gradually disappear, making people feel natural and comfortable.",
        (3, 3, 0, 0, 0),
    ),
)
EXAMPLE_SYNTHESIZED = "No"
EXAMPLE_NOTES = (
    "Precision and Recall: whole numbers from 1 to 5. Fluency, Conciseness and Irrelevance: penalties from -2 to 0 "
    "(one decimal allowed, e.g. -0.1 for a minor fluency issue; leave blank or 0 for no penalty).",
    "Answer 'Is this audio synthesized?' once per clip with yes or no. Captions are shown without saying who wrote "
    "them. Use the Comments column for anything you want to add.",
)

# Stray comments further right than this column are not read (a sheet's used range can reach XFD).
MAX_READ_COLUMNS = 40

_HEADER_PREFIXES = (
    ("precision", "precision"),
    ("recall", "recall"),
    ("fluency", "fluency"),
    ("conciseness", "conciseness"),
    ("irrelevance", "irrelevance"),
    ("comment", "comment"),
    ("caption_label", "caption"),
)
_RECORD_ID_ALIASES = {"audioid", "clipid", "clip", "file", "filename"}
_NUMBER_HEADER = re.compile(r"^(no|nr|number|#)\.?$")
CAPTION_LABEL = re.compile(r"^caption\s*\d*$", re.IGNORECASE)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def is_header_row(first_cell) -> bool:
    """A header row starts with `No.` (or `No`, `Nr.`, `Number`) in column A."""
    return isinstance(first_cell, str) and bool(_NUMBER_HEADER.match(_squash(first_cell)))


def header_field(text) -> str | None:
    """The field a header cell names, whatever its spacing or capitalisation; None if unknown or blank."""
    if not isinstance(text, str) or not text.strip():
        return None
    squashed = _squash(text)
    if "record" in squashed or squashed in _RECORD_ID_ALIASES:
        return "record_id"
    if "synthesi" in squashed:
        return "synthesized"
    for field, prefix in _HEADER_PREFIXES:
        if squashed.startswith(prefix):
            return field
    return None


def caption_label(index: int) -> str:
    return f"Caption {index}"


def section_title(clip_count: int) -> str:
    return f"Dataset 1: {clip_count} audio clips"


def closing_lines(clip_count: int) -> tuple[str, ...]:
    return (f"Thank you for evaluating the {clip_count} audio clips. Your input is invaluable.",)
