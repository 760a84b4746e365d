"""The page that imports a pairwise judgement file (FENSE or BRACE): it lives here because ratings owns that
importer; the page itself is annotation's data file import page (annotation/views_import.py)."""

from accounts.roles import ADMIN, roles_required
from annotation.views_import import file_import_page
from ratings.services.judgement_files import JUDGEMENTS


@roles_required(ADMIN)
def import_judgements(request):
    """Who: admins. Upload a FENSE or BRACE judgement file into a dataset (created if new); a worker imports it."""
    return file_import_page(request, JUDGEMENTS)
