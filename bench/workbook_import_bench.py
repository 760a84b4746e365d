"""How long importing a 10,000-rating THumBS workbook takes (5,000 clips x 2 captions), and how many queries.

Builds the workbook with the app's writer (scores typed in, some as text, as raters do), then, on a
throwaway SQLite database (or DATABASE_URL if you pass --use-env-database), times:
- parsing alone (safety checks + openpyxl read-only parse + validation),
- the first import into a new campaign (creates dataset, campaign, clips, captions, assignment, ratings),
- importing the same file again (everything unchanged),
- importing an edited file (every rating updated),
- exporting that rater's workbook again (5,000 clips, ratings filled in).

Run: .venv/bin/python bench/workbook_import_bench.py [--clips 5000] [--keep FILE.xlsx]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_workbook(clip_count: int, seed: int, shift: int = 0) -> bytes:
    from ratings.workbooks.writer import SheetCaption, SheetClip, thumbs_workbook_build

    rng = random.Random(seed)
    clips = []
    for number in range(1, clip_count + 1):
        captions = []
        for caption_index in (1, 2):
            scores = {
                "precision": 1 + (rng.randint(1, 5) + shift) % 5,
                "recall": rng.randint(1, 5),
                "fluency": Decimal(rng.choice(["0", "-0.1", "-0.5", "-1"])),
                "conciseness": Decimal(rng.choice(["0", "0", "-0.2"])),
                "irrelevance": Decimal(rng.choice(["0", "-1.5", "-2"])),
            }
            text = f"Clip {number}, caption {caption_index}: birds chirp while a car passes in the distance."
            captions.append(SheetCaption(text=text, scores=scores, comment=rng.choice(["", "", "muffled"])))
        clips.append(
            SheetClip(
                record_id=f"{number}.wav", link=f"audio/{number}.wav", captions=captions, synthesized=rng.random() < 0.3
            )
        )
    return thumbs_workbook_build(clips=clips)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=5000)
    parser.add_argument("--keep", help="also save the generated workbook here")
    parser.add_argument(
        "--use-env-database", action="store_true", help="use DATABASE_URL instead of a temp SQLite file"
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="workbook-bench-"))
    if not args.use_env_database:
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.setdefault("MEDIA_ROOT", str(workdir / "media"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from ratings.models import Campaign, ThumbsRating
    from ratings.services.workbooks import rater_workbook_export, workbook_import, workbook_parse_checked

    call_command("migrate", verbosity=0)
    rater, _ = get_user_model().objects.get_or_create(username="bench-rater")

    started = time.perf_counter()
    content = build_workbook(args.clips, seed=1)
    edited = build_workbook(args.clips, seed=1, shift=1)
    print(
        f"generated 2 workbooks of {2 * args.clips} caption rows in {time.perf_counter() - started:.1f} s "
        f"({len(content) / 1e6:.1f} MB each)"
    )
    if args.keep:
        Path(args.keep).write_bytes(content)

    started = time.perf_counter()
    parsed = workbook_parse_checked(content=content, name="bench.xlsx")
    print(f"parse + validate only: {time.perf_counter() - started:.2f} s ({len(parsed.ratings)} ratings)")

    for label, data in (("first import", content), ("same file again", content), ("edited file", edited)):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            summary = workbook_import(
                content=data, file_name="bench.xlsx", campaign_name="bench", rater=rater, create_if_missing=True
            )
            seconds = time.perf_counter() - started
        print(
            f"{label}: {seconds:.2f} s, {len(queries)} queries — created {summary['ratings_created']}, "
            f"updated {summary['ratings_updated']}, unchanged {summary['ratings_unchanged']}, "
            f"clips created {summary['clips_created']}, captions created {summary['captions_created']}"
        )
    print(f"ratings in the database: {ThumbsRating.objects.count()} ({connection.vendor})")

    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        export = rater_workbook_export(campaign=Campaign.objects.get(name="bench"), rater=rater)
        seconds = time.perf_counter() - started
    print(f"export of the rater's workbook: {seconds:.2f} s, {len(queries)} queries, {export.clip_count} clips")


if __name__ == "__main__":
    main()
