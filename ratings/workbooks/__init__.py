"""Offline THumBS workbooks: the Excel layout of the original study (P1_excel.xlsx), written and read.

Plain Python on top of openpyxl; the Django side (which clips, which rater, saving ratings) lives in
`ratings/services/workbooks.py`.

- `layout`: sheet names, columns, header labels and how headers typed by people are recognised.
- `safety`: refuse files that are not xlsx, and zip bombs, before openpyxl parses anything.
- `values`: reading score cells the way raters type them, with the rule each value breaks.
- `reader`: a filled workbook -> clips, captions and ratings, or every error with its cell.
- `writer`: clips and captions -> a workbook in the study's layout (validation, protection, links).
- `packaging`: the zip sent to a rater (workbooks + audio folder).
"""
