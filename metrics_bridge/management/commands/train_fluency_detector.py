from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from metrics_bridge.scoring import fluency
from metrics_bridge.scoring.fluency import corpus
from metrics_bridge.scoring.fluency.training import TrainingSettings, train_detector


class Command(BaseCommand):
    help = (
        "Train the fluency error detector FENSE uses on errors synthesized from clean reference captions "
        "(CPU, minutes; deterministic for a seed). The shipped detector was made, disjoint from every benchmark "
        "the product imports, with: " + fluency.SHIPPED_RECIPE
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "captions",
            nargs="+",
            help=(
                "FENSE-format JSON files (their references), X-ACE caption-graph JSON (whole sentences of the "
                "captions), AudioCaps-F annotation JSON (captions written from the events, sources and "
                "attributes), or text files with one clean caption per line"
            ),
        )
        parser.add_argument(
            "--per-source",
            type=int,
            default=None,
            help="use at most N captions of each file (drawn with the seed, kept in file order)",
        )
        parser.add_argument(
            "--exclude",
            action="append",
            default=[],
            help="a file whose texts (any JSON string, CSV cell or line) must not be trained on; repeatable",
        )
        parser.add_argument("--out", default=str(fluency.SHIPPED_DETECTOR), help="where to write the .safetensors file")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--epochs", type=int, default=TrainingSettings.epochs)
        parser.add_argument("--threads", type=int, default=TrainingSettings.threads)
        parser.add_argument("--max-captions", type=int, default=None, help="use only the first N captions (smoke runs)")

    def handle(
        self,
        *args,
        captions: list[str],
        exclude: list[str],
        per_source: int | None,
        out: str,
        seed: int,
        epochs: int,
        threads: int,
        max_captions,
        **options,
    ):
        texts: list[str] = []
        descriptions: list[str] = []
        for name in captions:
            source_texts, source_description = read_captions(Path(name), seed=seed)
            chosen = corpus.sample(source_texts, per_source, seed=seed)
            texts.extend(chosen)
            drawn = f" ({len(chosen)} drawn)" if len(chosen) < len(source_texts) else ""
            descriptions.append(source_description + drawn)
        texts = list(dict.fromkeys(texts))
        if exclude:
            excluded = [text for name in exclude for text in read_excluded(Path(name))]
            kept = corpus.without_texts(texts, excluded)
            self.stderr.write(f"{len(texts) - len(kept)} captions dropped: their text is in " + ", ".join(exclude))
            texts = kept
            descriptions.append("none of the texts of " + ", ".join(Path(name).name for name in exclude))
        if not texts:
            raise CommandError("no captions found in " + ", ".join(captions))
        settings = TrainingSettings(seed=seed, epochs=epochs, threads=threads, max_captions=max_captions)
        description = "; ".join(descriptions)
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


def read_captions(path: Path, *, seed: int = 0) -> tuple[list[str], str]:
    """(clean captions, what they are) of a training file (`corpus.read_source` tells the formats apart)."""
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        return corpus.read_source(path, seed=seed)
    except (ValueError, TypeError, AttributeError) as error:
        raise CommandError(f"{path}: not a FENSE-format, X-ACE or AudioCaps-F file ({error})") from None


def read_excluded(path: Path) -> list[str]:
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    return corpus.read_excluded(path)
