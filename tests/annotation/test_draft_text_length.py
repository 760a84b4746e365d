"""Text past the 255-character limit is refused with an error naming the field (never cut short), and the API
help describes an event's time as "spans"."""

import pytest
import yaml

from annotation.models import AnnotationTask
from annotation.services.annotation_campaigns import annotation_task_next
from tests.annotation.workspace_data import api_client, draft_of, workspace_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def task_and_client(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    return annotation_task_next(campaign=workspace.campaign, annotator=annotator), api_client(annotator)


@pytest.mark.parametrize(
    ("where", "field"),
    [("label", "events[0].label"), ("source", "events[0].sources[0]"), ("attribute", "events[0].attributes[1]")],
)
def test_text_past_255_characters_is_a_length_error_naming_the_field(task_and_client, where, field):
    task, client = task_and_client
    url = f"/api/annotation-tasks/{task.pk}/draft/"
    long_text, fitting = "ü" * 256, "b" * 255
    texts = {"label": fitting, "source": fitting, "attribute": fitting, where: long_text}
    draft = draft_of((texts["label"], [texts["source"]], ["loud", texts["attribute"]]))
    refused = client.put(url, {"base_version": 0, "draft": draft}, format="json")
    assert refused.status_code == 400
    assert field in str(refused.json()) and "longer than 255 characters" in str(refused.json())
    assert AnnotationTask.objects.get(pk=task.pk).draft_version == 0  # nothing stored
    # 255 characters fit and are stored exactly
    texts[where] = fitting
    draft = draft_of((texts["label"], [texts["source"]], ["loud", texts["attribute"]]))
    assert client.put(url, {"base_version": 0, "draft": draft}, format="json").status_code == 200
    stored = AnnotationTask.objects.get(pk=task.pk).draft["events"][0]
    assert (stored["label"], stored["sources"], stored["attributes"]) == (fitting, [fitting], ["loud", fitting])


def test_the_api_help_describes_spans_not_onset_and_offset(make_user):
    schema = yaml.safe_load(api_client(make_user("boss", staff=True)).get("/api/schema/").content)
    helps = []

    def collect(node):
        if isinstance(node, dict):
            if "draft" in (node.get("properties") or {}):
                helps.append(node["properties"]["draft"].get("description", ""))
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(schema)
    helps = [text for text in helps if '"events"' in text]  # those that describe the draft's shape
    assert helps, "no schema documents the draft"
    for text in helps:
        assert '"spans": [[onset, offset], ...]' in text and '"onset", "offset"' not in text
