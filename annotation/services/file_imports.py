"""The data files a page can import (references, AudioCaps-F annotations, judgement files), one registry for all.

Each kind names its page, what the page says and the importer a worker runs on the uploaded bytes
(services/dataset_uploads.py). The importers live in the app that owns their data: annotation registers its
own here, ratings registers the judgement importer from its AppConfig.ready(), so this layer never imports
the one above it and one page, one task and one result page serve every kind. A kind may offer choices
(`options`, e.g. what a gold AudioCaps-F import does with clips holding one sound twice): the page shows each as a
field, the upload record keeps the chosen values and the worker passes them to the importer as keyword arguments.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from annotation.models import ExpertAnnotation
from annotation.services.audiocaps_f import audiocaps_f_import
from corpus.services.import_uploads import json_content_load
from corpus.services.importing import ImportDataError, ImportSummary
from corpus.services.references_import import references_import

# (content, source_name, dataset_name, **chosen options) -> summary; raises ImportDataError
ContentImporter = Callable[..., ImportSummary]


@dataclass(frozen=True)
class FileImportOption:
    """A choice the import page offers: the importer's keyword `name`, its values with their labels, the default."""

    name: str
    label: str
    choices: tuple[tuple[str, str], ...]
    help_text: str = ""

    @property
    def default(self) -> str:
        return self.choices[0][0]


@dataclass(frozen=True)
class FileImportKind:
    """One kind of data file: its page (a URL name), what the page says, the file it takes, its importer."""

    kind: str
    page: str
    title: str
    intro: str
    file_label: str
    accept: str
    importer: ContentImporter
    options: tuple[FileImportOption, ...] = ()

    def options_clean(self, chosen: dict[str, str]) -> dict[str, str]:
        """Every option of the kind with its chosen value (else its default); an unknown option or value is
        refused, naming it (ImportDataError)."""
        offered = {option.name: option for option in self.options}
        for name, value in chosen.items():
            option = offered.get(name)
            if option is None:
                raise ImportDataError(f'"{name}" is not an option of an import of {self.kind}')
            values = [choice for choice, _label in option.choices]
            if value not in values:
                raise ImportDataError(f'{name} "{value}": expected one of {", ".join(values)}')
        return {name: chosen.get(name, option.default) for name, option in offered.items()}


def json_importer(service: Callable[..., ImportSummary]) -> ContentImporter:
    """An importer of JSON bytes for a service taking (data=, dataset_name=, source_name=): the bytes are parsed
    first, so a file that is not JSON is named with where it breaks."""

    def run(content: bytes, source_name: str, dataset_name: str, **options: str) -> ImportSummary:
        data: Any = json_content_load(content=content, source_name=source_name)
        return service(data=data, dataset_name=dataset_name, source_name=source_name, **options)

    return run


_KINDS: dict[str, FileImportKind] = {}


def file_import_kind_register(kind: FileImportKind) -> None:
    _KINDS[kind.kind] = kind


def file_import_kind_get(name: str) -> FileImportKind:
    try:
        return _KINDS[name]
    except KeyError:
        raise ImportDataError(f'"{name}" is not a kind of file this platform imports') from None


def file_import_kind_find(name: str) -> FileImportKind | None:
    return _KINDS.get(name)


REFERENCES = FileImportKind(
    kind="references",
    page="annotation:import_references",
    title="Import reference captions",
    intro=(
        "A CSV in the Clotho layout (file_name,caption_1,…,caption_5; one row per clip) or the AudioCaps layout "
        "(audiocap_id,youtube_id,start_time,caption; one row per caption). Clips are matched by id or file name, "
        "or created. A clip's reference list becomes the file's; references that judged pairs or ratings use are "
        "never removed. Every problem is listed with its row and nothing is written unless the whole file is good."
    ),
    file_label="Reference captions (.csv)",
    accept=".csv,text/csv",
    importer=lambda content, source_name, dataset_name: references_import(
        content=content, source_name=source_name, dataset_name=dataset_name
    ),
)

AUDIOCAPS_F = FileImportKind(
    kind="audiocaps_f",
    page="annotation:import_audiocaps_f",
    title="Import AudioCaps-F annotations",
    intro=(
        'AudioCaps-F expert annotations, JSON keyed by file ({"Y<id>.wav": {event: {"source": [...], "attr": '
        "[...]}}}), imported as the clips' GOLD annotations of the account audiocaps-f-experts (a new gold "
        "annotation supersedes the clip's previous import; gold that a reviewer published is never replaced: such a "
        "file is refused, naming the clip). Every problem names its key; nothing is written unless the whole file "
        "is good, and importing the same file again changes nothing."
    ),
    file_label="Annotations (.json)",
    accept=".json,application/json",
    importer=json_importer(audiocaps_f_import),
    options=(
        FileImportOption(
            name="duplicates_as",
            label="Clips with duplicate events",
            choices=(("refuse", "refuse the file"), (ExpertAnnotation.Status.SUBMITTED.value, "import as submitted")),
            help_text=(
                "Two events of a clip that gold publishing calls one sound (a name given twice, or, when all the "
                "clip's events have spans, two names the review's matching rule calls one sound): refuse the file, "
                "naming the clip, or import such clips as submitted annotations (not gold) for a reviewer."
            ),
        ),
        FileImportOption(
            name="conflicting_as",
            label="Clips with conflicting attributes",
            choices=(
                (ExpertAnnotation.Status.GOLD.value, "keep gold"),
                (ExpertAnnotation.Status.SUBMITTED.value, "import as submitted"),
            ),
            help_text=(
                "Attributes of one event that the tag library calls opposites or different counts: keep such clips "
                "gold as the file gives them (the released AudioCaps-F gold holds some), or import them as submitted."
            ),
        ),
    ),
)

file_import_kind_register(REFERENCES)
file_import_kind_register(AUDIOCAPS_F)
