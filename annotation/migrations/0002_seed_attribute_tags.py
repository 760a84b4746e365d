"""Seed the AudioCaps-F attribute tag library from the copy shipped in annotation/data/."""
from django.db import migrations

from annotation.tag_library import attribute_tags_seed


def seed_tags(apps, schema_editor):
    attribute_tags_seed(apps.get_model("annotation", "AttributeTag"))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]
    operations = [migrations.RunPython(seed_tags, migrations.RunPython.noop)]
