"""AudioCaps-F export: a dataset's GOLD annotations in the AudioCaps-F format, keyed as they came in.

The export writes each clip's file name, else its external id when that names a file, else "Y<external id>.wav",
so every key an import (audiocaps_f.py) read comes back as it was.
"""

import json
import os
import re
import tempfile
from pathlib import Path

from annotation.selectors import annotation_as_audiocaps_f, dataset_gold_annotations
from corpus.models import Clip
from corpus.services.importing import ImportDataError, dataset_get_existing

# An external id that already names a file is exported as it is (a workbook's "34.wav"), not as "Y34.wav.wav".
FILE_NAME = re.compile(r"\.(wav|flac|mp3|ogg|oga|opus|m4a|aac|aif|aiff|wma|webm)$", re.IGNORECASE)


def audiocaps_f_clip_key(clip: Clip) -> str:
    """The key a clip is exported under: its file name as it came in, else its external id when that names a
    file ("34.wav"), else the AudioCaps-F key "Y<external id>.wav" of a YouTube id."""
    if clip.file_name:
        return clip.file_name
    if FILE_NAME.search(clip.external_id):
        return clip.external_id
    return f"Y{clip.external_id}.wav"


def audiocaps_f_export(*, dataset_name: str) -> dict[str, dict]:
    """GOLD annotations of the dataset in the AudioCaps-F format (one per clip), in import order.

    Two clips whose keys would be the same (a file name "Yab.wav" and a YouTube id "ab") are refused with an
    error naming both, rather than one silently overwriting the other."""
    dataset = dataset_get_existing(name=dataset_name)
    exported: dict[str, dict] = {}
    clip_of_key: dict[str, Clip] = {}
    for annotation in dataset_gold_annotations(dataset=dataset):
        key = audiocaps_f_clip_key(annotation.clip)
        if key in clip_of_key:
            raise ImportDataError(
                f'dataset {dataset.name}: clips "{clip_of_key[key].external_id}" and "{annotation.clip.external_id}" '
                f'would both be exported as "{key}"'
            )
        clip_of_key[key] = annotation.clip
        exported[key] = annotation_as_audiocaps_f(annotation)
    return exported


def audiocaps_f_export_notes(*, dataset_name: str) -> dict[str, str]:
    """{clip key: note} of the dataset's GOLD annotations that have a note. The notes travel beside the export,
    not in it: AudioCaps-F readers take every key of a clip as an event name."""
    dataset = dataset_get_existing(name=dataset_name)
    return {
        audiocaps_f_clip_key(annotation.clip): annotation.note
        for annotation in dataset_gold_annotations(dataset=dataset)
        if annotation.note
    }


def audiocaps_f_export_to_path(*, dataset_name: str, path: Path | str) -> int:
    """Write the export as JSON (all or nothing: a temporary file renamed into place); returns the clip count."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ImportDataError(f"{path}: folder {path.parent} does not exist")
    data = audiocaps_f_export(dataset_name=dataset_name)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as output:
            json.dump(data, output, indent=2, ensure_ascii=False)
            output.write("\n")
        os.chmod(temporary, 0o644)  # mkstemp makes it private; the export is an ordinary file
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return len(data)
