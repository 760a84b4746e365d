"""The zip sent to one rater: the workbook(s) at the top and the audio folder their links point to."""

import re
import shutil
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

AUDIO_FOLDER = "audio"
_UNSAFE = re.compile(r"[^A-Za-z0-9._()-]+")


@dataclass
class AudioEntry:
    file_name: str  # inside the audio folder
    open: Callable[[], BinaryIO]


def audio_file_name(record_id: str, *, stored_name: str = "", taken: set[str]) -> str:
    """A safe, unique file name for a clip's audio, from its record ID ("3.wav" stays "3.wav").

    Path parts and odd characters are dropped (a record ID must not escape the audio folder); the
    stored file's extension is added when the record ID has none; `taken` collects the names used.
    """
    base = PurePosixPath(record_id.replace("\\", "/")).name
    name = _UNSAFE.sub("_", base).strip("._") or "clip"
    stored_suffix = PurePosixPath(stored_name).suffix.lower()
    if stored_suffix and not PurePosixPath(name).suffix:
        name += stored_suffix
    candidate, counter = name, 2
    while candidate.lower() in taken:
        stem, suffix = PurePosixPath(name).stem, PurePosixPath(name).suffix
        candidate, counter = f"{stem}-{counter}{suffix}", counter + 1
    taken.add(candidate.lower())
    return candidate


def rater_zip_write(*, stream: BinaryIO, workbooks: dict[str, bytes], audio: Iterable[AudioEntry]) -> None:
    """Write the zip: workbooks deflated, audio stored as is (already compressed or barely compressible)."""
    with zipfile.ZipFile(stream, "w") as archive:
        for name, content in workbooks.items():
            archive.writestr(name, content, compress_type=zipfile.ZIP_DEFLATED)
        for entry in audio:
            info = zipfile.ZipInfo(f"{AUDIO_FOLDER}/{entry.file_name}")
            info.compress_type = zipfile.ZIP_STORED
            with entry.open() as source, archive.open(info, "w", force_zip64=True) as target:
                shutil.copyfileobj(source, target, 1024 * 1024)
