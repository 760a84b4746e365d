from django.apps import AppConfig


def datasets_rated_in_active_campaigns(user) -> set[int]:
    """The rater lock's provider: datasets of the active campaigns the user is a rater of."""
    from ratings.models import Assignment

    return set(
        Assignment.objects.filter(rater=user, campaign__is_active=True).values_list("campaign__dataset_id", flat=True)
    )


class RatingsConfig(AppConfig):
    name = "ratings"
    verbose_name = "Human judgements"

    def ready(self) -> None:
        from accounts.blinding import blinded_datasets_provider_register
        from annotation.services.file_imports import file_import_kind_register
        from ratings.services.judgement_files import JUDGEMENTS

        blinded_datasets_provider_register(datasets_rated_in_active_campaigns)
        # The worker imports judgement files it finds in annotation's registry: it must know this kind.
        file_import_kind_register(JUDGEMENTS)
        self._admission_on_participant_events()

    def _admission_on_participant_events(self) -> None:
        """Arrivals and endings are ParticipantEvents, whichever service made them: the Prolific admission
        limit is checked after each (ratings/platforms/admission.py)."""
        from django.db.models.signals import post_save

        from ratings.models_study import ParticipantEvent
        from ratings.platforms.admission import admission_schedule, event_changes_admission

        def participant_event_saved(sender, instance, created, **kwargs):
            if created and event_changes_admission(instance.kind):
                admission_schedule(study_id=instance.participant.study_id)

        # weak=False: the receiver is this method's local function, which nothing else holds; a weak reference let
        # the garbage collector drop it (in the web workers too), and no arrival or ending checked the limit then.
        post_save.connect(
            participant_event_saved, sender=ParticipantEvent, weak=False, dispatch_uid="study_admission_check"
        )
