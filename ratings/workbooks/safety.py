"""Refuse files that are not xlsx workbooks, and zip bombs, before openpyxl parses anything.

Everything here reads only the zip's end record (the member count, before anything else is parsed) and
its central directory (sizes as declared there). That is enough:
Python's zipfile never inflates a member past its declared size (a member that lies about its size
fails its CRC check instead), so the declared sizes bound what openpyxl can be made to decompress.
"""

import zipfile
from typing import BinaryIO

from common.zip_limits import zip_member_count

ZIP_MAGIC = b"PK\x03\x04"
CONTENT_TYPES = "[Content_Types].xml"
WORKBOOK_PART = "xl/workbook.xml"
# Office XML compresses well (20-40x for repetitive sheets); a bomb compresses 1000x.
MAX_COMPRESSION_RATIO = 150
# Below this size a member's ratio does not matter: it cannot hurt.
RATIO_CHECK_MIN_BYTES = 1024 * 1024
# An xlsx has a few dozen parts. The count is read from the zip's end record before the directory is
# parsed: zipfile keeps an object of some 400 bytes per member, so a directory of a million empty members
# (a 50 MB file) would cost far more memory than any workbook.
MAX_MEMBERS = 1000


class WorkbookRejectedError(Exception):
    """The file is not an acceptable xlsx workbook; the message says why, for the person who sent it."""


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def member_count_check(stream: BinaryIO, *, name: str) -> None:
    """Raise WorkbookRejectedError when the zip declares more than MAX_MEMBERS members (its directory unread)."""
    count = zip_member_count(stream)
    if count is not None and count > MAX_MEMBERS:
        raise WorkbookRejectedError(
            f"{name} has {count} parts inside; an .xlsx workbook has at most {MAX_MEMBERS}: refused without opening it"
        )


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
    member_count_check(stream, name=name)
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
    if len(members) > MAX_MEMBERS:  # a directory that disagrees with its end record
        raise WorkbookRejectedError(
            f"{name} has {len(members)} parts inside; an .xlsx workbook has at most {MAX_MEMBERS}"
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
