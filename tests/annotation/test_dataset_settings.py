"""Per-dataset metric settings (TEAM.md contract 5): defaults, the command, validation, the scoring context."""

import json

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset

pytestmark = pytest.mark.django_db


def test_defaults_and_the_command_changes_and_prints_them(capsys):
    dataset = Dataset.objects.create(name="songs")
    assert (dataset.domain, dataset.date_delta, dataset.airbench_reference) == ("sound", 0.1703, "first")
    call_command("dataset_settings", "--dataset", "songs", "--domain", "music", "--date-delta", "0.25")
    assert json.loads(capsys.readouterr().out) == {
        "dataset": "songs",
        "domain": "music",
        "date_delta": 0.25,
        "airbench_reference": "first",
    }
    call_command("dataset_settings", "--dataset", "songs", "--airbench-reference", "llm")
    dataset.refresh_from_db()
    assert (dataset.domain, dataset.date_delta, dataset.airbench_reference) == ("music", 0.25, "llm")

    from metrics_bridge.services.runs.contexts import version_context_for

    context = version_context_for(dataset=dataset)
    assert (context.dataset.domain, context.dataset.date_delta, context.dataset.airbench_reference) == (
        "music",
        0.25,
        "llm",
    )


def test_bad_values_are_refused_naming_the_field_and_nothing_changes(capsys):
    Dataset.objects.create(name="songs")
    with pytest.raises(CommandError, match="date_delta: Ensure this value is less than or equal to 2"):
        call_command("dataset_settings", "--dataset", "songs", "--date-delta", "5", "--domain", "speech")
    assert Dataset.objects.get(name="songs").domain == "sound"
    with pytest.raises(CommandError, match="invalid choice: 'poetry'"):
        call_command("dataset_settings", "--dataset", "songs", "--domain", "poetry")
    with pytest.raises(CommandError, match='dataset "nope" does not exist'):
        call_command("dataset_settings", "--dataset", "nope")
