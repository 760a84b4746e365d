"""Which CALIBRATED transfers between studies: every variant, chosen by transfer between dev halves only.

    .venv/bin/python bench/calibration_transfer_variants.py /tmp/calibration_features.npz \
        --files clotho-eval=../shared/datasets/clotho_eval.json audiocaps-eval=../shared/datasets/audiocaps_eval.json

Input: the archive of `bench/calibration_features_export.py` (the product's own features per judged pair). Each
study is cut into two clip-disjoint halves exactly as `bench/split_fense_dataset.py` cuts its file (seed 0): the
first half ("a") is the dev half, the second ("b") the test half. Features carrying the fluency detector's output
are dropped on a study whose captions the detector saw (the product's overlap rule), from both sides of a transfer.

Selection rule (declared before any figure was looked at): for every variant, its C is the grid value with the
best mean accuracy over the two dev transfers (dev half of one study -> dev half of the other, both ways); the
chosen variant is the one with the best such mean; a variant within 0.3 points of the best and with fewer
features or fewer model columns wins (simpler carries better). Full-set and test-half transfer figures are
printed for every variant but never enter the choice.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from split_fense_dataset import split_items  # noqa: E402

from metrics_bridge.agreement import calibration, calibration_transfer, intervals  # noqa: E402
from metrics_bridge.agreement.protocol import JudgedPair  # noqa: E402

DETECTOR_FEATURES = ("fluency_error", "FENSE", "MACE")
GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
CAPTION_FEATURES = set(calibration.CAPTION_FEATURES)
TIE_MARGIN = 0.3


class Study:
    def __init__(self, archive, name: str, items: list[dict]):
        self.name = name
        self.names = [str(value) for value in archive[f"{name}/names"]]
        self.leaks = bool(archive[f"{name}/detector_leaks"])
        differences = archive[f"{name}/differences"]
        similarity = archive[f"{name}/similarity"]
        truth = archive[f"{name}/truth"]
        clips = archive[f"{name}/clip"]
        splits = archive[f"{name}/split"]
        self.rows = [
            calibration.PairRow(
                pair=JudgedPair(split=str(split), caption_a="", caption_b="", votes=(int(vote),), pair_id=index),
                clip_key=str(clip),
                differences=tuple(float(value) for value in row),
                similarity=float(sim) if np.isfinite(sim) else None,
            )
            for index, (row, sim, vote, clip, split) in enumerate(
                zip(differences, similarity, truth, clips, splits, strict=True)
            )
        ]
        self.singles = {
            key.split("/", 1)[1][len("single_") : -len("_correct")]: archive[key]
            for key in archive.files
            if key.startswith(f"{name}/single_")
        }
        first, _second = split_items(items, 0)
        dev_names = {str(item.get("raw_name")) for item in first} | {str(item.get("audio_id")) for item in first}
        files, externals = archive[f"{name}/clip_file"], archive[f"{name}/clip_external"]
        self.dev = np.array([str(f) in dev_names or str(e) in dev_names for f, e in zip(files, externals, strict=True)])

    def part(self, which: str) -> list[calibration.PairRow]:
        if which == "full":
            return self.rows
        mask = self.dev if which == "dev" else ~self.dev
        return [row for row, keep in zip(self.rows, mask, strict=True) if keep]

    def single_best(self, which: str, excluded: set[str]) -> tuple[str, float]:
        mask = np.ones(len(self.rows), bool) if which == "full" else (self.dev if which == "dev" else ~self.dev)
        best = ("", -1.0)
        for metric, correct in self.singles.items():
            if metric in excluded:
                continue
            counted = correct[mask] >= 0
            accuracy = 100.0 * correct[mask][counted].mean()
            best = max(best, (metric, accuracy), key=lambda item: item[1])
        return best


def accuracy(rows, decisions) -> float:
    truth = np.array([row.truth for row in rows])
    counted = truth != 0
    return 100.0 * float(np.mean(decisions[counted] * truth[counted] > 0))


def selected(names, rows, keep):
    index = [names.index(name) for name in keep]
    from dataclasses import replace

    return [replace(row, differences=tuple(row.differences[i] for i in index)) for row in rows]


# --- the variants (declared before running) ----------------------------------------------------------------


def feature_set(kind: str, common: list[str]) -> list[str]:
    metrics = [name for name in common if name not in CAPTION_FEATURES]
    if kind == "all":
        return common
    if kind == "no-words":
        return [name for name in common if name != "caption_words"]
    if kind == "metrics":
        return metrics
    if kind == "no-copies":  # X-ACE_CAPTIONS duplicates X-ACE where no clip has a gold graph
        return [name for name in common if not name.startswith("XACE_CAPTIONS")]
    raise ValueError(kind)


VARIANTS = {
    # name: (features, blocks, per-dataset scaling, sign constraints, C from the grid)
    "V0 in-study model as shipped (training RMS, inner-CV C, margin+similarity[+votes])": ("all", None, False, False),
    "V1 margins, training RMS, unconstrained": ("all", ("margin",), False, False),
    "V2 margins, per-dataset RMS, unconstrained": ("all", ("margin",), True, False),
    "V3 margins, per-dataset RMS, sign-constrained": ("all", ("margin",), True, True),
    "V4 V3 without caption_words": ("no-words", ("margin",), True, True),
    "V5 V3 metrics only (no caption features)": ("metrics", ("margin",), True, True),
    "V6 V3 + similarity block": ("all", ("margin", "margin × similarity"), True, True),
    "V7 votes only, sign-constrained": ("all", ("vote",), True, True),
    "V8 margins + votes, per-dataset RMS, sign-constrained": ("all", ("margin", "vote"), True, True),
    "V9 V3 without the XACE_CAPTIONS copies": ("no-copies", ("margin",), True, True),
}


def run_variant(spec, source: Study, target: Study, which_train: str, which_test: str, regularisation: float):
    kind, blocks, per_dataset, signed = spec
    excluded = set(DETECTOR_FEATURES) if (source.leaks or target.leaks) else set()
    common = [name for name in source.names if name in target.names and name not in excluded]
    keep = feature_set(kind, common)
    train = selected(source.names, source.part(which_train), keep)
    test = selected(target.names, target.part(which_test), keep)
    if blocks is None:
        model = calibration.fit_calibrated_model(keep, train)
        return accuracy(test, model.decisions(test)), len(keep), model.decisions(test)
    if per_dataset:
        model = calibration_transfer.fit_transfer_model(
            keep, [train], regularisation=regularisation, blocks=blocks, signed=signed
        )
        return accuracy(test, model.decisions(test)), len(keep), model.decisions(test)
    matrix = calibration.model_matrix(train, blocks)
    scales = calibration._scales(matrix)
    labels = np.array([1 if row.truth > 0 else 0 for row in train if row.truth != 0])
    counted = [row.truth != 0 for row in train]
    coefficients = calibration_transfer.fit_logistic((matrix / scales)[counted], labels, regularisation=regularisation)
    decisions = calibration.model_matrix(test, blocks) / scales @ coefficients
    return accuracy(test, decisions), len(keep), decisions


def clip_intervals(target: Study, decisions: np.ndarray) -> dict[str, list[float]]:
    """Figure and 95 % interval over 1,000 clip resamples (the product's draws: intervals.clip_resample_weights) of
    the model, of every single metric, and of the model's lead over the best single metric with and without the
    metrics carrying the detector's output."""
    truth = np.array([row.truth for row in target.rows])
    correct = {"CALIBRATED": np.where(truth != 0, (decisions * truth > 0).astype(int), -1)}
    correct.update(target.singles)
    clips = sorted(set(target.rows[i].clip_key for i in range(len(target.rows))))
    position = {clip: index for index, clip in enumerate(clips)}
    owner = np.array([position[row.clip_key] for row in target.rows])
    weights = intervals.clip_resample_weights(len(clips), resamples=1000, seed=intervals.DEFAULT_SEED)
    samples, figures = {}, {}
    for name, values in correct.items():
        numerator = np.bincount(owner, weights=(values == 1).astype(float), minlength=len(clips))
        denominator = np.bincount(owner, weights=(values >= 0).astype(float), minlength=len(clips))
        samples[name] = 100.0 * (weights @ numerator) / (weights @ denominator)
        figures[name] = 100.0 * numerator.sum() / denominator.sum()
    result = {name: [figures[name], *np.percentile(samples[name], [2.5, 97.5])] for name in correct}
    for label, excluded in (
        ("lead over best single", set()),
        ("lead over best single without detector", set(DETECTOR_FEATURES)),
    ):
        best = max((name for name in target.singles if name not in excluded), key=lambda name: figures[name])
        lead = samples["CALIBRATED"] - samples[best]
        result[f"{label} ({best})"] = [figures["CALIBRATED"] - figures[best], *np.percentile(lead, [2.5, 97.5])]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archive", type=Path)
    parser.add_argument("--files", nargs=2, required=True, help="name=path of each study's FENSE file")
    parser.add_argument("--json", type=Path, help="write every figure here")
    arguments = parser.parse_args()
    archive = np.load(arguments.archive)
    studies = []
    for entry in arguments.files:
        name, path = entry.split("=", 1)
        studies.append(Study(archive, name, json.loads(Path(path).read_text(encoding="utf-8"))))
    first, second = studies
    print(f"detector: {archive['detector']}; leaks: {first.name} {first.leaks}, {second.name} {second.leaks}")
    results = {}
    directions = ((first, second), (second, first))
    for label, spec in VARIANTS.items():
        grid = (None,) if spec[1] is None else GRID
        best = None
        for regularisation in grid:
            dev = [run_variant(spec, a, b, "dev", "dev", regularisation)[0] for a, b in directions]
            if best is None or np.mean(dev) > np.mean(best[1]):
                best = (regularisation, dev)
        regularisation, dev = best
        full = [run_variant(spec, a, b, "full", "full", regularisation)[:2] for a, b in directions]
        test = [run_variant(spec, a, b, "test", "test", regularisation)[0] for a, b in directions]
        results[label] = {
            "C": regularisation,
            "features": full[0][1],
            "columns": full[0][1] * (1 if spec[1] is None else len(spec[1])),
            "dev": dev,
            "dev_mean": float(np.mean(dev)),
            "full": [value for value, _ in full],
            "test": test,
        }
        row = results[label]
        print(
            f"{label}: C={regularisation} dev {dev[0]:.1f}/{dev[1]:.1f} (mean {row['dev_mean']:.2f}) | "
            f"full {row['full'][0]:.1f}/{row['full'][1]:.1f} | test halves {test[0]:.1f}/{test[1]:.1f}"
        )
    top = max(row["dev_mean"] for row in results.values())
    close = [label for label, row in results.items() if row["dev_mean"] >= top - TIE_MARGIN]
    chosen = min(
        close, key=lambda label: (results[label]["features"], results[label]["columns"], -results[label]["dev_mean"])
    )
    print(f"chosen by the rule: {chosen}")
    for which in ("dev", "full", "test"):
        for target in (second, first):
            excluded = set(DETECTOR_FEATURES) if target.leaks else set()
            metric, value = target.single_best(which, excluded)
            with_all = target.single_best(which, set())
            print(
                f"best single metric on {target.name} {which}: {metric} {value:.1f} "
                f"(with detector metrics: {with_all[0]} {with_all[1]:.1f})"
            )
    intervals_of_choice = {}
    for source, target in directions:
        regularisation = results[chosen]["C"]
        decisions = run_variant(VARIANTS[chosen], source, target, "full", "full", regularisation)[2]
        intervals_of_choice[f"{source.name} -> {target.name}"] = clip_intervals(target, decisions)
        for name, figure in intervals_of_choice[f"{source.name} -> {target.name}"].items():
            print(f"{source.name} -> {target.name}: {name} {figure}")
    if arguments.json:
        arguments.json.write_text(
            json.dumps({"variants": results, "chosen": chosen, "intervals": intervals_of_choice}, indent=1),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
