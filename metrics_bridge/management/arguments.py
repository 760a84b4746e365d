"""Parsing shared by the metric commands: a dataset by name, a comma-separated metric list."""

from django.core.management.base import CommandError

from corpus.models import Dataset


def dataset_named(name: str) -> Dataset:
    try:
        return Dataset.objects.get(name=name)
    except Dataset.DoesNotExist:
        raise CommandError(f"no dataset named {name!r}") from None


def metric_names_from(text: str | None) -> list[str] | None:
    """ "BLEU_4, SBERT" -> ["BLEU_4", "SBERT"]; None or empty -> None (every available metric)."""
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    return names or None
