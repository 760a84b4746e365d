"""The page that imports a pairwise judgement file (FENSE or BRACE): it lives here because ratings owns that
importer; the page itself is annotation's generic file import page (annotation/views_import.py)."""

from accounts.roles import ADMIN, roles_required
from annotation.services.import_uploads import json_content_load
from annotation.views_import import FileImport, file_import_page
from ratings.services.pairwise_import import pairwise_judgements_import

JUDGEMENTS = FileImport(
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
    importer=lambda content, source_name, dataset_name: pairwise_judgements_import(
        data=json_content_load(content=content, source_name=source_name),
        dataset_name=dataset_name,
        source_name=source_name,
    ),
)


@roles_required(ADMIN)
def import_judgements(request):
    """Who: admins. Upload a FENSE or BRACE judgement file into a dataset (created if new)."""
    return file_import_page(request, JUDGEMENTS)
