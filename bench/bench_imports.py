"""Time the corpus importers on the real data in ../shared (first run and idempotent second run).

Run from the project root:  .venv/bin/python bench/bench_imports.py
Uses a throwaway SQLite database and media folder unless DATABASE_URL is set (then it must be a scratch database).
"""

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "datasets"
sys.path.insert(0, str(ROOT))
scratch = tempfile.mkdtemp(prefix="bench-imports-")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch}/db.sqlite3")
os.environ.setdefault("MEDIA_ROOT", f"{scratch}/media")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()
from django.core.management import call_command  # noqa: E402

from annotation.services.audiocaps_f import audiocaps_f_import_from_path  # noqa: E402
from annotation.services.audiocaps_f_exporting import audiocaps_f_export_to_path  # noqa: E402
from corpus.models import Clip, Dataset  # noqa: E402
from corpus.services.audio_import import audio_directory_import  # noqa: E402
from ratings.selectors import dataset_stats  # noqa: E402
from ratings.services.pairwise_import import pairwise_judgements_import_from_path  # noqa: E402


def timed(label, function, **kwargs):
    started = time.perf_counter()
    result = function(**kwargs)
    print(f"{label:<48} {time.perf_counter() - started:7.2f} s")
    return result


def main() -> None:
    call_command("migrate", verbosity=0)
    clotho = SHARED / "clotho_eval.json"
    timed(
        "Clotho-Eval pairwise import (first run)",
        pairwise_judgements_import_from_path,
        path=clotho,
        dataset_name="clotho-eval",
    )
    timed(
        "Clotho-Eval pairwise import (second run)",
        pairwise_judgements_import_from_path,
        path=clotho,
        dataset_name="clotho-eval",
    )
    print("  ", dataset_stats(dataset=Dataset.objects.get(name="clotho-eval")))

    acf = SHARED / "audiocaps_f_annotations.json"
    timed("AudioCaps-F import (first run)", audiocaps_f_import_from_path, path=acf, dataset_name="acf")
    timed("AudioCaps-F import (second run)", audiocaps_f_import_from_path, path=acf, dataset_name="acf")
    timed("AudioCaps-F export", audiocaps_f_export_to_path, dataset_name="acf", path=Path(scratch) / "acf.json")
    print("  ", dataset_stats(dataset=Dataset.objects.get(name="acf")))

    dataset = Dataset.objects.create(name="study")
    for name in ("34", "35", "36", "Example"):
        Clip.objects.create(dataset=dataset, external_id=name)
    timed(
        "Audio import of 4 real clips (first run)",
        audio_directory_import,
        directory=SHARED / "audio",
        dataset_name="study",
    )
    timed(
        "Audio import of 4 real clips (second run)",
        audio_directory_import,
        directory=SHARED / "audio",
        dataset_name="study",
    )


if __name__ == "__main__":
    main()
