"""The blinding migrations on existing data: HI copies marked as pair artefacts, order keys, rater audio copies.

Rows are written with the models as they were before (ratings 0003, annotation 0006), then every
migration runs forward, then backward again for the reversible data step.
"""

import io
import wave

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.ratings.campaign_data import tone_wav_bytes
from tests.ratings.test_migration_campaign_bound import _migrate

BEFORE = [("ratings", "0003_campaign_bound_judgements"), ("annotation", "0008_annotation_expert_workspace")]


@pytest.mark.django_db(transaction=True)
def test_existing_hi_copies_get_marked_assignments_keyed_and_clips_a_rater_copy(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    old = _migrate(BEFORE)
    dataset = old.get_model("annotation", "Dataset").objects.create(name="before-17")
    clip_model, caption_model = old.get_model("annotation", "Clip"), old.get_model("annotation", "Caption")
    pair_model = old.get_model("ratings", "CaptionPair")
    rated, donor = (clip_model.objects.create(dataset=dataset, external_id=name) for name in ("rated.wav", "donor.wav"))
    tagged = tone_wav_bytes(seconds=0.2)
    tagged = tagged[:4] + (int.from_bytes(tagged[4:8], "little") + 20).to_bytes(4, "little") + tagged[8:]
    tagged += b"LIST\x0c\x00\x00\x00INFOINAM\x04\x00\x00\x00leak"
    rated.audio.save("rated.wav", ContentFile(tagged), save=True)
    own = caption_model.objects.create(
        clip=rated, text="rain on a roof", role="reference", author_kind="human", position=0
    )
    original = caption_model.objects.create(
        clip=donor, text="a dog barks", role="reference", author_kind="human", position=0
    )
    copy = caption_model.objects.create(
        clip=rated, text="a dog barks", role="candidate", author_kind="human", source_label="donor.wav_human_1"
    )
    imported_b = caption_model.objects.create(
        clip=rated, text="a cat purrs", role="candidate", author_kind="human", source_label="human_3"
    )
    pair_model.objects.create(clip=rated, caption_a=own, caption_b=copy, split="HI", source_key="campaign-4-HI-1")
    pair_model.objects.create(clip=rated, caption_a=own, caption_b=imported_b, split="HI", source_key="HI")
    campaign = old.get_model("ratings", "Campaign").objects.create(name="c", dataset=dataset, task_type="pairwise")
    user_model = old.get_model("auth", "User")
    for name in ("one", "two", "three"):
        old.get_model("ratings", "Assignment").objects.create(
            campaign=campaign, rater=user_model.objects.create(username=name)
        )

    new = _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    captions = new.get_model("corpus", "Caption").objects
    marked = captions.get(pk=copy.pk)
    assert marked.pair_artefact and marked.copied_from_id == original.pk
    assert not captions.get(pk=imported_b.pk).pair_artefact, "an imported HI caption is the dataset's own"
    assert not captions.get(pk=own.pk).pair_artefact and not captions.get(pk=original.pk).pair_artefact
    keys = list(new.get_model("ratings", "Assignment").objects.values_list("order_key", flat=True))
    assert len(set(keys)) == 3 and all(len(key) == 16 for key in keys), "each assignment its own secret key"
    clip = new.get_model("corpus", "Clip").objects.get(pk=rated.pk)
    assert clip.rater_audio.name.startswith("rater-audio/")
    content = clip.rater_audio.read()
    assert b"leak" not in content and b"LIST" not in content
    with wave.open(io.BytesIO(content)) as reader:
        assert (reader.getnchannels(), reader.getframerate(), reader.getnframes()) == (1, 16000, 3200)
    assert new.get_model("corpus", "Clip").objects.get(pk=donor.pk).rater_audio == "", "no audio, no copy"

    back = _migrate([("ratings", "0003_campaign_bound_judgements")])
    assert back.get_model("ratings", "CaptionPair").objects.count() == 2
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
