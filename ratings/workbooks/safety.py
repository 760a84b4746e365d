"""Refuse files that are not xlsx workbooks, and zip bombs, before openpyxl parses anything.

Everything here reads only the zip's central directory (sizes as declared there). That is enough:
Python's zipfile never inflates a member past its declared size (a member that lies about its size
fails its CRC check instead), so the declared sizes bound what openpyxl can be made to decompress.
"""

import zipfile
from typing import BinaryIO

ZIP_MAGIC = b"PK\x03\x04"
CONTENT_TYPES = "[Content_Types].xml"
WORKBOOK_PART = "xl/workbook.xml"
# Office XML compresses well (20-40x for repetitive sheets); a bomb compresses 1000x.
MAX_COMPRESSION_RATIO = 150
# Below this size a member's ratio does not matter: it cannot hurt.
RATIO_CHECK_MIN_BYTES = 1024 * 1024
MAX_MEMBERS = 10_000


class WorkbookRejectedError(Exception):
    """The file is not an acceptable xlsx workbook; the message says why, for the person who sent it."""


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def xlsx_check(stream: BinaryIO, *, max_uncompressed_bytes: int, name: str = "the file") -> None:
    """Raise WorkbookRejectedError unless `stream` looks like an xlsx that is safe to open.

    Checks, in order: the zip magic number, a readable zip directory, `[Content_Types].xml` and
    `xl/workbook.xml` present, the member count, the total uncompressed size, and each large
    member's compression ratio. Leaves the stream at position 0.
    """
    stream.seek(0)
    magic = stream.read(4)
    stream.seek(0)
    if magic != ZIP_MAGIC:
        raise WorkbookRejectedError(
            f"{name} is not an Excel .xlsx workbook (it is not a zip archive; save it as .xlsx)"
        )
    try:
        with zipfile.ZipFile(stream) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise WorkbookRejectedError(f"{name} is not a readable .xlsx workbook (broken zip archive: {error})") from None
    finally:
        stream.seek(0)
    names = {member.filename for member in members}
    if CONTENT_TYPES not in names or WORKBOOK_PART not in names:
        raise WorkbookRejectedError(
            f"{name} is a zip archive but not an .xlsx workbook (no {CONTENT_TYPES} / {WORKBOOK_PART} inside)"
        )
    if len(members) > MAX_MEMBERS:
        raise WorkbookRejectedError(
            f"{name} has {len(members)} parts inside; an .xlsx workbook has a few dozen at most"
        )
    total = sum(member.file_size for member in members)
    if total > max_uncompressed_bytes:
        raise WorkbookRejectedError(
            f"{name} would unpack to {_megabytes(total)}, more than the {_megabytes(max_uncompressed_bytes)} allowed "
            "(WORKBOOK_MAX_UNCOMPRESSED_BYTES); refused without opening it"
        )
    for member in members:
        if member.file_size < RATIO_CHECK_MIN_BYTES:
            continue
        ratio = member.file_size / max(member.compress_size, 1)
        if ratio > MAX_COMPRESSION_RATIO:
            raise WorkbookRejectedError(
                f"{name}: part {member.filename} is compressed {ratio:.0f}:1 "
                f"({_megabytes(member.file_size)} unpacked), more than {MAX_COMPRESSION_RATIO}:1 — "
                "this looks like a zip bomb; refused without opening it"
            )
