"""Model captioning through provider APIs (jobs.py) and the campaign in which people confirm a captioned system
against the dataset's best (confirmation.py)."""
