import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from metrics_bridge.agreement.protocol import clips_from_fense_items
from metrics_bridge.scoring import fluency
from metrics_bridge.scoring.fluency.training import TrainingSettings, train_detector


class Command(BaseCommand):
    help = (
        "Train the fluency error detector FENSE uses on errors synthesized from clean reference captions "
        "(CPU, minutes; deterministic for a seed). The shipped detector was made with: "
        "train_fluency_detector ../shared/datasets/clotho_eval.json"
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "captions",
            nargs="+",
            help="FENSE-format JSON files (their `references` are used) or text files with one clean caption per line",
        )
        parser.add_argument("--out", default=str(fluency.SHIPPED_DETECTOR), help="where to write the .safetensors file")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--epochs", type=int, default=TrainingSettings.epochs)
        parser.add_argument("--threads", type=int, default=TrainingSettings.threads)
        parser.add_argument("--max-captions", type=int, default=None, help="use only the first N captions (smoke runs)")

    def handle(
        self, *args, captions: list[str], out: str, seed: int, epochs: int, threads: int, max_captions, **options
    ):
        texts: list[str] = []
        for name in captions:
            texts.extend(read_captions(Path(name)))
        texts = list(dict.fromkeys(texts))
        if not texts:
            raise CommandError("no captions found in " + ", ".join(captions))
        settings = TrainingSettings(seed=seed, epochs=epochs, threads=threads, max_captions=max_captions)
        description = ", ".join(f"{Path(name).name}:references" for name in captions)
        result = train_detector(
            texts,
            out_path=Path(out),
            settings=settings,
            data_description=description,
            log=lambda line: self.stderr.write(line),
        )
        self.stdout.write(
            f"wrote {result.path} ({Path(result.path).stat().st_size / 1e6:.1f} MB) "
            f"from {result.metadata['captions']} captions, "
            f"{result.examples} examples; held-out synthetic accuracy {result.validation_accuracy:.3f} "
            f"(errors found {result.validation_error_recall:.3f}, "
            f"clean kept {result.validation_clean_specificity:.3f}); "
            f"{result.seconds:.0f} s"
        )


def read_captions(path: Path) -> list[str]:
    """Reference captions of a FENSE-format JSON file (in item order), or the non-empty lines of a text file."""
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    if path.suffix.lower() == ".json":
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
            clips = clips_from_fense_items(items)
        except (ValueError, TypeError, AttributeError) as error:
            raise CommandError(f"{path}: not a FENSE-format file ({error})") from None
        return [text for clip in clips for text in clip.references]
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
