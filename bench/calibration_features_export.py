"""Export CALIBRATED's features for every judged pair of some datasets, to study transfer between studies offline.

    source /tmp/research/env.sh   # a database holding the datasets and their stored scores
    .venv/bin/python bench/calibration_features_export.py clotho-eval audiocaps-eval --out /tmp/calibration_features.npz

The features are exactly the product's: the per-metric agreement reports the agreement table builds from stored
scores (`services.agreement`), turned into rows by `services.calibration.calibration_rows` with the caption
features (word count, the configured fluency detector's error probability, Sentence-BERT max/min cosine with the
side's references) and every feature, including those carrying the detector's output (the product drops them
where the detector saw the dataset's captions; the export says where). Re-run it
after the detector or a metric changes. Per dataset the archive holds `<dataset>/differences` (pairs x features,
NaN where a score is missing), `similarity`, `truth` (vote sum or known answer), `clip` (clip keys),
`clip_file` and `clip_external` (its file name and external id), `split`, `names`, `detector_leaks`, and
`single_<metric>_correct` (each metric's own verdict per pair under the protocol: 1 right, 0 wrong, -1 not
counted), so the best single metric is counted the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def export_dataset(name: str) -> dict[str, np.ndarray]:
    from corpus.models import Clip, Dataset
    from metrics_bridge.scoring import registry
    from metrics_bridge.services.evaluation import agreement
    from metrics_bridge.services.evaluation.calibration import calibration_rows, dataset_content, detector_check
    from metrics_bridge.services.runs.contexts import version_context_for

    dataset = Dataset.objects.get(name=name)
    clips = agreement._dataset_clips(dataset)
    wanted = registry.available_metric_names(version_context_for(dataset=dataset))
    reports, _ = agreement._metric_reports(dataset=dataset, clips=clips, metric_names=wanted)
    # a metric with no stored score was not computed on this database: it is no feature of the study here
    reports = {
        metric: report
        for metric, report in reports.items()
        if any(decision.score_a is not None for decision in report.decisions)
    }
    names, rows = calibration_rows(dataset=dataset, reports=reports, clips=clips, without_detector=False)
    clip_names = {
        str(pk): (file_name, external_id or "")
        for pk, file_name, external_id in Clip.objects.filter(dataset=dataset).values_list(
            "pk", "file_name", "external_id"
        )
    }
    leaks = detector_check(content=dataset_content(dataset=dataset)).leaks
    arrays = {
        "names": np.array(names),
        "differences": np.array([row.differences for row in rows], dtype=float),
        "similarity": np.array([np.nan if row.similarity is None else row.similarity for row in rows], dtype=float),
        "truth": np.array([row.truth for row in rows], dtype=int),
        "clip": np.array([str(row.clip_key) for row in rows]),
        "clip_file": np.array([clip_names[str(row.clip_key)][0] for row in rows]),
        "clip_external": np.array([clip_names[str(row.clip_key)][1] for row in rows]),
        "split": np.array([row.pair.split for row in rows]),
        "pair": np.array([str(row.pair.pair_id) for row in rows]),
        "detector_leaks": np.array(leaks),
        "protocol": np.array(dataset.agreement_protocol),
    }
    order = {str(row.pair.pair_id): index for index, row in enumerate(rows)}
    for metric, report in reports.items():
        correct = np.full(len(rows), -1, dtype=int)
        for decision in report.decisions:
            if decision.correct is not None:
                correct[order[str(decision.pair.pair_id)]] = int(decision.correct)
        arrays[f"single_{metric}_correct"] = correct
    return arrays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    arguments = parser.parse_args()
    import django

    django.setup()
    from metrics_bridge.scoring import fluency
    from metrics_bridge.services.runs.contexts import metric_resources

    archive = {"detector": np.array(fluency.detector_name(metric_resources()))}
    for name in arguments.datasets:
        for key, value in export_dataset(name).items():
            archive[f"{name}/{key}"] = value
        print(f"{name}: {len(archive[f'{name}/truth'])} pairs, {len(archive[f'{name}/names'])} features")
    np.savez(arguments.out, **archive)
    print(f"wrote {arguments.out} (detector {archive['detector']})")


if __name__ == "__main__":
    main()
