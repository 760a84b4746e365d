"""The corpus models' move from `annotation` to `corpus` on existing data, forward and back.

Rows are written with the models as they were before the move (annotation 0014, no corpus app), then every
migration runs forward, then back again. The move changes Django's state only: the rows must be read through
the moved models, the tables must keep their names, the foreign keys of the other apps must still reach them,
and the models' content types (and the permissions on them) must follow the app label both ways.
"""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# db_specific: the state-only operations must emit no SQL on either engine, and the test proves it by the data.
pytestmark = pytest.mark.db_specific

BEFORE = [
    ("annotation", "0014_expert_annotation_note"),
    ("ratings", "0015_study_platforms"),
    ("metrics_bridge", "0009_model_answer_endpoint_key"),
    ("corpus", None),
    # Pinned at their latest so the state the test writes with has today's content types and permissions.
    ("contenttypes", "0002_remove_content_type_name"),
    ("auth", "0012_alter_user_first_name_max_length"),
]
MOVED_TABLES = {
    "annotation_dataset",
    "annotation_clip",
    "annotation_captioningsystem",
    "annotation_caption",
    "annotation_systemsubmission",
    "annotation_datasetupload",
}


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    executor.loader.build_graph()
    # (app, None) means "none of the app's migrations": it has no node in the graph, so no state either.
    return executor.loader.project_state([target for target in targets if target[1] is not None]).apps


def _latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _tables() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def _write_corpus(apps, user) -> dict[str, int]:
    """One row of each moved model plus rows of other apps pointing at them; returns their primary keys."""
    dataset = apps.get_model("annotation", "Dataset").objects.create(name="moved-data", date_delta=0.25)
    clip = apps.get_model("annotation", "Clip").objects.create(
        dataset=dataset, external_id="rain.wav", duration_seconds=9.5, waveform_peaks=[0.1, 0.9]
    )
    other_clip = apps.get_model("annotation", "Clip").objects.create(dataset=dataset, external_id="dog.wav")
    system = apps.get_model("annotation", "CaptioningSystem").objects.create(name="attn_temp0.5")
    captions = apps.get_model("annotation", "Caption").objects
    reference = captions.create(clip=clip, text="rain on a roof", role="reference", author_kind="human", position=0)
    candidate = captions.create(
        clip=clip, text="water falls", role="candidate", author_kind="machine", system=system, note="first 30 s"
    )
    submission = apps.get_model("annotation", "SystemSubmission").objects.create(
        dataset=dataset, system_name="attn_temp0.5", file="submissions/ab/x.json", original_name="x.json",
        sha256="ab" * 32, uploaded_by=user, status="imported", summary={"captions": 1},
    )
    upload = apps.get_model("annotation", "DatasetUpload").objects.create(
        dataset_name="moved-data", uploaded_by=user, dataset=dataset, audio_total=2, audio_done=1
    )
    pair = apps.get_model("ratings", "CaptionPair").objects.create(
        clip=clip, caption_a=reference, caption_b=candidate, split="HM", source_key="HM-1"
    )
    campaign = apps.get_model("ratings", "Campaign").objects.create(name="c", dataset=dataset, task_type="pairwise")
    campaign.captions.add(reference, candidate)
    annotation_campaign = apps.get_model("annotation", "AnnotationCampaign").objects.create(
        name="events", dataset=dataset, created_by=user
    )
    annotation_campaign.clips.add(clip, other_clip)
    expert = apps.get_model("annotation", "ExpertAnnotation").objects.create(clip=clip, annotator=user)
    return {
        "dataset": dataset.pk, "clip": clip.pk, "other_clip": other_clip.pk, "system": system.pk,
        "reference": reference.pk, "candidate": candidate.pk, "submission": submission.pk, "upload": upload.pk,
        "pair": pair.pk, "campaign": campaign.pk, "annotation_campaign": annotation_campaign.pk, "expert": expert.pk,
    }


def _assert_corpus_readable(apps, label: str, keys: dict[str, int]) -> None:
    """The rows written before, read through the models of app `label` and through the other apps' keys."""
    dataset = apps.get_model(label, "Dataset").objects.get(pk=keys["dataset"])
    assert (dataset.name, dataset.date_delta) == ("moved-data", 0.25)
    clip = apps.get_model(label, "Clip").objects.get(pk=keys["clip"])
    assert (clip.dataset_id, clip.external_id, clip.duration_seconds, clip.waveform_peaks) == (
        keys["dataset"], "rain.wav", 9.5, [0.1, 0.9]
    )
    candidate = apps.get_model(label, "Caption").objects.get(pk=keys["candidate"])
    assert (candidate.clip_id, candidate.system.name, candidate.note) == (keys["clip"], "attn_temp0.5", "first 30 s")
    submission = apps.get_model(label, "SystemSubmission").objects.get(pk=keys["submission"])
    assert (submission.dataset_id, submission.summary, submission.uploaded_by.username) == (
        keys["dataset"], {"captions": 1}, "owner"
    )
    upload = apps.get_model(label, "DatasetUpload").objects.get(pk=keys["upload"])
    assert (upload.dataset_id, upload.audio_total, upload.audio_done) == (keys["dataset"], 2, 1)
    pair = apps.get_model("ratings", "CaptionPair").objects.get(pk=keys["pair"])
    assert (pair.clip.external_id, pair.caption_a.text, pair.caption_b.text) == (
        "rain.wav", "rain on a roof", "water falls"
    )
    campaign = apps.get_model("ratings", "Campaign").objects.get(pk=keys["campaign"])
    assert sorted(campaign.captions.values_list("pk", flat=True)) == sorted([keys["reference"], keys["candidate"]])
    assert campaign.dataset.name == "moved-data"
    annotation_campaign = apps.get_model("annotation", "AnnotationCampaign").objects.get(
        pk=keys["annotation_campaign"]
    )
    assert set(annotation_campaign.clips.values_list("external_id", flat=True)) == {"rain.wav", "dog.wav"}
    assert apps.get_model("annotation", "ExpertAnnotation").objects.get(pk=keys["expert"]).clip.dataset.name == (
        "moved-data"
    )
    # Reverse relations from the moved models to the ones that stayed, and the other way.
    assert dataset.annotation_campaigns.get().pk == keys["annotation_campaign"]
    assert clip.expert_annotations.get().pk == keys["expert"]
    assert clip.pairs.get().pk == keys["pair"]


def _permission_holders(apps, label: str) -> set[str]:
    """Users holding view_clip through the content type of `label`.clip."""
    permission = apps.get_model("auth", "Permission").objects.get(content_type__app_label=label, codename="view_clip")
    return set(permission.user_set.values_list("username", flat=True))


@pytest.mark.django_db(transaction=True)
def test_corpus_rows_read_through_corpus_models_after_the_move_and_through_annotation_after_going_back():
    old = _migrate(BEFORE)
    assert MOVED_TABLES <= _tables()
    content_types = old.get_model("contenttypes", "ContentType").objects
    # Going back relabelled the content types the test database had made for the corpus app.
    assert set(content_types.filter(app_label="annotation").values_list("model", flat=True)) >= {
        "dataset", "clip", "captioningsystem", "caption", "systemsubmission", "datasetupload"
    }
    assert not content_types.filter(app_label="corpus").exists()
    clip_type = content_types.get(app_label="annotation", model="clip")
    user = old.get_model("auth", "User").objects.create(username="owner")
    user.user_permissions.add(
        old.get_model("auth", "Permission").objects.get(content_type=clip_type, codename="view_clip")
    )
    keys = _write_corpus(old, user)

    new = _migrate(_latest())
    assert MOVED_TABLES <= _tables() and not any(table.startswith("corpus_") for table in _tables())
    _assert_corpus_readable(new, "corpus", keys)
    moved_type = new.get_model("contenttypes", "ContentType").objects.get(app_label="corpus", model="clip")
    assert moved_type.pk == clip_type.pk, "the same row, relabelled"
    assert _permission_holders(new, "corpus") == {"owner"}

    # The models the product imports read the same rows.
    from django.contrib.auth import get_user_model

    from corpus.models import Caption, Clip

    assert Clip.objects.get(pk=keys["clip"]).captions.corpus().count() == 2
    assert Caption.objects.get(pk=keys["reference"]).pairs_as_a.get().pk == keys["pair"]
    assert get_user_model().objects.get(username="owner").has_perm("corpus.view_clip")

    back = _migrate(BEFORE)
    _assert_corpus_readable(back, "annotation", keys)
    assert _permission_holders(back, "annotation") == {"owner"}
    assert not back.get_model("contenttypes", "ContentType").objects.filter(app_label="corpus").exists()

    again = _migrate(_latest())
    _assert_corpus_readable(again, "corpus", keys)
