"""Seed the AudioCaps-F attribute tag library from the copy shipped in annotation/data/."""
import json
from pathlib import Path

from django.db import migrations

TAGS_FILE = Path(__file__).resolve().parent.parent / "data" / "attribute_tags.json"
# The released tag file calls the variation category "Change"; the X-ACE paper (Table 9) and the
# schema name it "Variation".
CATEGORY_NAMES = {"Change": "Variation"}


def seed_tags(apps, schema_editor):
    tag_model = apps.get_model("annotation", "AttributeTag")
    for text, entry in json.loads(TAGS_FILE.read_text()).items():
        tag_model.objects.update_or_create(
            text=text,
            defaults={"category": CATEGORY_NAMES.get(entry["class"], entry["class"]), "synonym_group": entry["sym"], "antonym_groups": entry.get("ant", [])},
        )


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]
    operations = [migrations.RunPython(seed_tags, migrations.RunPython.noop)]
