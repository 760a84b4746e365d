"""Celery tasks of the corpus: thin, by id, safe to run twice (the service claims its row)."""

from celery import shared_task

from annotation.services.dataset_uploads import dataset_upload_import
from corpus.services.system_captions import system_submission_import_pending


@shared_task(acks_late=True, max_retries=0)
def import_dataset_upload(upload_id: int) -> str:
    """Import an uploaded new dataset (audio files, zips, captions); the upload's page shows its progress."""
    return dataset_upload_import(upload_id=upload_id)


@shared_task(acks_late=True, max_retries=0)
def import_system_submission(submission_id: int) -> str:
    """Import a captioning system's uploaded captions; the submission's page shows the outcome."""
    return system_submission_import_pending(submission_id=submission_id)
