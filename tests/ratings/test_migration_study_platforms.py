"""The migration from one platform per study to a list: forward each study recruits on its one platform (an MTurk
study's last sync stays MTurk's); backward each keeps the first of its platforms. Rows are written with the models
as they were before (ratings 0014)."""

import datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# db_specific: migrations run SQL of their own on each engine
pytestmark = pytest.mark.db_specific

BEFORE = [("ratings", "0014_platform_mturk_assignment_states")]
AFTER = [("ratings", "0015_study_platforms")]
SYNCED = datetime.datetime(2026, 11, 1, 12, 0, tzinfo=datetime.UTC)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _study(apps, name: str, **fields):
    dataset = apps.get_model("annotation", "Dataset").objects.create(name=f"{name}-data")
    campaign = apps.get_model("ratings", "Campaign").objects.create(name=name, dataset=dataset, task_type="pairwise")
    return apps.get_model("ratings", "Study").objects.create(
        campaign=campaign, slug=f"slug-{name}", consent_text="ok", **fields
    )


@pytest.mark.django_db(transaction=True)
def test_each_study_keeps_its_platform_forward_and_backward():
    old = _migrate(BEFORE)
    on_prolific = _study(old, "was-prolific", platform="prolific")
    on_mturk = _study(old, "was-mturk", platform="mturk", reward_currency="USD")
    on_panel = _study(old, "was-panel", platform="generic")
    link_model = old.get_model("ratings", "StudyPlatformLink")
    link_model.objects.create(study_id=on_mturk.pk, mturk_hit_id="3HIT", synced_at=SYNCED)
    link_model.objects.create(study_id=on_prolific.pk, prolific_study_id="ab" * 12, synced_at=SYNCED)

    new = _migrate(AFTER)
    studies = new.get_model("ratings", "Study").objects
    assert {s.campaign.name: s.platforms for s in studies.select_related("campaign")} == {
        "was-prolific": ["prolific"],
        "was-mturk": ["mturk"],
        "was-panel": ["generic"],
    }
    links = {link.study_id: link for link in new.get_model("ratings", "StudyPlatformLink").objects.all()}
    assert (links[on_mturk.pk].synced_at, links[on_mturk.pk].mturk_synced_at) == (None, SYNCED)
    assert (links[on_prolific.pk].synced_at, links[on_prolific.pk].mturk_synced_at) == (SYNCED, None)
    # After the migration a study may recruit on both; going back it keeps the first (the pages' order).
    studies.filter(pk=on_prolific.pk).update(platforms=["prolific", "mturk"])
    studies.filter(pk=on_panel.pk).update(platforms=["mturk", "generic"])

    back = _migrate(BEFORE)
    platforms = dict(back.get_model("ratings", "Study").objects.values_list("pk", "platform"))
    assert platforms == {on_prolific.pk: "prolific", on_mturk.pk: "mturk", on_panel.pk: "mturk"}
    links = {link.study_id: link for link in back.get_model("ratings", "StudyPlatformLink").objects.all()}
    assert links[on_mturk.pk].synced_at == SYNCED and links[on_prolific.pk].synced_at == SYNCED

    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
