"""Judgement files (FENSE, BRACE) as a kind of data file the import page takes and a worker imports
(annotation/services/file_imports.py); registered by RatingsConfig.ready()."""

from annotation.services.file_imports import FileImportKind, json_importer
from ratings.services.pairwise_import import pairwise_judgements_import

JUDGEMENTS = FileImportKind(
    kind="judgements",
    page="ratings:import_judgements",
    title="Import a judgement file",
    intro=(
        "Pairwise human judgements as JSON: the FENSE layout (Clotho-Eval, AudioCaps-Eval: HC/HI/HM/MM pairs with "
        "one vote per judge) or BRACE's (BRACE-Main, BRACE-Hallucination), told apart by the content. Clips, "
        "references, candidate captions, captioning systems, pairs and votes are created; judges become accounts "
        "<dataset>-judge-<n> that cannot sign in. Every problem names its item and key; nothing is written unless "
        "the whole file is good, and importing the same file again changes nothing. A dataset holds pairs of one "
        "layout only."
    ),
    file_label="Judgements (.json)",
    accept=".json,application/json",
    importer=json_importer(pairwise_judgements_import),
)
