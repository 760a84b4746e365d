"""Per-dataset metric settings: domain (LLM judge guidance), DATE's delta, the AIR-Bench reference choice."""

from django.core.exceptions import ValidationError
from django.db import transaction

from corpus.models import Dataset

SETTINGS_FIELDS = ("domain", "date_delta", "airbench_reference")


def dataset_settings_of(*, dataset: Dataset) -> dict:
    return {field: getattr(dataset, field) for field in SETTINGS_FIELDS}


@transaction.atomic
def dataset_settings_update(*, dataset: Dataset, **changes) -> dict:
    """Set any of domain / date_delta / airbench_reference (None leaves a field as it is).

    Raises ValidationError naming the field and the allowed values; nothing is saved then. Scores computed
    under the old settings stay stored under their own versions; the next metric run computes the new ones.
    """
    unknown = set(changes) - set(SETTINGS_FIELDS)
    if unknown:
        raise ValidationError(f"unknown dataset setting(s): {', '.join(sorted(unknown))}")
    for field, value in changes.items():
        if value is not None:
            setattr(dataset, field, value)
    dataset.full_clean(exclude=["name", "description"])
    dataset.save(update_fields=[field for field, value in changes.items() if value is not None] or None)
    return dataset_settings_of(dataset=dataset)
