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
