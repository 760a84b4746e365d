"""The corpus the blinding crawls search for: names and database ids that are easy to recognise anywhere."""

from django.db import connection

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from tests.ratings.campaign_data import clip_audio_attach

DATASET = "dsname-kestrel"
SYSTEMS = ("sysname-osprey", "sysname-merlin")


def ids_start_at(model, start: int) -> None:
    """New rows of `model` get ids from `start` on (whole numbers far from anything else on a page)."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), %s)", [start])
        else:
            cursor.execute("DELETE FROM sqlite_sequence WHERE name = %s", [table])
            cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, start])


def crawl_corpus_build(*, clip_count: int) -> tuple[Dataset, list[CaptioningSystem]]:
    """Clips with audio, three labelled references and one caption per system each; every name recognisable."""
    dataset = Dataset.objects.create(name=DATASET, description=f"{DATASET} recordings")
    systems = [CaptioningSystem.objects.create(name=name) for name in SYSTEMS]
    for number in range(1, clip_count + 1):
        clip = Clip.objects.create(dataset=dataset, external_id=f"clipext-heron-{number}.wav")
        clip_audio_attach(clip)
        for position in range(3):
            Caption.objects.create(
                clip=clip,
                text=f"water runs over stones, take {number}{position}",
                role="reference",
                author_kind="human",
                position=position,
                source_label=f"srclabel-plover-h{number}{position}",
            )
        for system in systems:
            Caption.objects.create(
                clip=clip,
                text=f"a stream flows past rocks, version {number} {system.name[-6:]}".replace("sysname-", ""),
                role="candidate",
                author_kind="machine",
                system=system,
                source_label=f"srclabel-plover-{system.name}",
            )
    return dataset, systems
