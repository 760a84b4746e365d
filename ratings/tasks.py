"""Celery tasks of the crowd studies: thin, by id, safe to run twice (the service decides under a row lock)."""

from celery import shared_task


@shared_task(acks_late=True, max_retries=0)
def study_admission_apply(study_id: int) -> str:
    """Pause or start the study on Prolific for its admission limit (ratings/platforms/admission.py)."""
    from ratings.models_study import Study
    from ratings.platforms import PlatformError
    from ratings.platforms.actions import PlanError, admission_apply

    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return "no such study"
    try:
        return admission_apply(study=study)
    except (PlanError, PlatformError) as error:  # logged as a PlatformAction when a request went out
        return str(error)
