"""Blinding by construction (no rater learns who wrote a caption from order, audio or ids): per-assignment
order keys, served-audio records, pair artefacts.

- every assignment gets its own random order key (the field's default would give all existing rows one);
- captions that pair generation copied onto a clip for an HI pair (caption b of a generated HI pair:
  source key `campaign-<n>-HI-<k>`, a human candidate) are marked as pair artefacts, with the caption
  they copy when it can be found (same text, in the clip the copy's source label names). Imported HI
  pairs (e.g. Clotho-Eval's) are the dataset's own data and stay as they are.
"""

import re

from django.db import migrations, models

import ratings.models

GENERATED_HI_KEY = re.compile(r"^campaign-\d+-HI-\d+$")


def order_keys_fill(apps, schema_editor):
    Assignment = apps.get_model("ratings", "Assignment")
    batch = []
    for assignment in Assignment.objects.only("pk").iterator():
        assignment.order_key = ratings.models.opaque_token()
        batch.append(assignment)
    Assignment.objects.bulk_update(batch, ["order_key"], batch_size=1000)


def pair_artefacts_mark(apps, schema_editor):
    CaptionPair = apps.get_model("ratings", "CaptionPair")
    Caption = apps.get_model("annotation", "Caption")
    copies = {}
    for pair in CaptionPair.objects.filter(split="HI").select_related("caption_b__clip").iterator():
        caption = pair.caption_b
        if GENERATED_HI_KEY.match(pair.source_key) and caption.role == "candidate" and caption.author_kind == "human":
            copies[caption.pk] = caption
    for caption in copies.values():
        caption.pair_artefact = True
        sources = Caption.objects.filter(
            clip__dataset_id=caption.clip.dataset_id, text=caption.text, role="reference", pair_artefact=False
        ).exclude(clip_id=caption.clip_id)
        named = [
            source
            for source in sources.select_related("clip")
            if caption.source_label.startswith(f"{source.clip.external_id}_")
        ]
        source = named[0] if named else sources.order_by("pk").first()
        caption.copied_from_id = source.pk if source else None
    Caption.objects.bulk_update(list(copies.values()), ["pair_artefact", "copied_from"], batch_size=1000)


def pair_artefacts_unmark(apps, schema_editor):
    apps.get_model("annotation", "Caption").objects.filter(pair_artefact=True).update(
        pair_artefact=False, copied_from=None
    )


class Migration(migrations.Migration):
    dependencies = [
        ("ratings", "0003_campaign_bound_judgements"),
        ("annotation", "0009_clip_rater_audio_caption_pair_artefact"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="order_key",
            field=models.CharField(default=ratings.models.opaque_token, editable=False, max_length=32),
        ),
        migrations.AddField(
            model_name="assignmentitem",
            name="audio_first_served_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="assignmentitem",
            name="audio_served",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(order_keys_fill, migrations.RunPython.noop),
        migrations.RunPython(pair_artefacts_mark, pair_artefacts_unmark),
    ]
