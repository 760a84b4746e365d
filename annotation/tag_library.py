"""The AudioCaps-F attribute tag library shipped with the product (annotation/data/attribute_tags.json)."""
import json
from pathlib import Path

TAGS_FILE = Path(__file__).resolve().parent / "data" / "attribute_tags.json"
# The released tag file calls the variation category "Change"; the X-ACE paper (Table 9) and the
# schema name it "Variation".
CATEGORY_NAMES = {"Change": "Variation"}


def attribute_tags_seed(tag_model) -> None:
    """Create or update every library tag; takes the model so data migrations can pass the historical one."""
    for text, entry in json.loads(TAGS_FILE.read_text()).items():
        tag_model.objects.update_or_create(
            text=text,
            defaults={
                "category": CATEGORY_NAMES.get(entry["class"], entry["class"]),
                "synonym_group": entry["sym"],
                "antonym_groups": entry.get("ant", []),
            },
        )
