"""Offline THumBS workbooks: the public names of the export (workbook_export.py) and the import
(workbook_import.py) services, for commands, pages and other apps."""

from ratings.services.workbook_export import (
    LINKS_LOCAL,
    LINKS_URL,
    RaterWorkbook,
    WorkbookExportError,
    participant_number,
    rater_workbook_export,
    rater_workbook_save,
    rater_workbook_zip,
)
from ratings.services.workbook_import import (
    WORKBOOK_CAPTION_LABEL,
    WorkbookImportError,
    workbook_import,
    workbook_parse_checked,
    workbook_upload_create,
    workbook_upload_import,
)

__all__ = [
    "LINKS_LOCAL",
    "LINKS_URL",
    "WORKBOOK_CAPTION_LABEL",
    "RaterWorkbook",
    "WorkbookExportError",
    "WorkbookImportError",
    "participant_number",
    "rater_workbook_export",
    "rater_workbook_save",
    "rater_workbook_zip",
    "workbook_import",
    "workbook_parse_checked",
    "workbook_upload_create",
    "workbook_upload_import",
]
