"""CALIBRATED on the Django side: load the pairs' stored scores, call the plain-Python model, shape the report.

The model and its cross-validation live in `metrics_bridge.agreement.calibration`; this module only
turns a dataset's stored scores into its inputs (via the per-metric agreement reports, which hold
each pair side's protocol score) and its results into the agreement report's "calibration" entry.
"""

from dataclasses import replace

from annotation.models import Dataset
from metrics_bridge.agreement import calibration
from metrics_bridge.agreement.protocol import AgreementReport


def calibration_rows(
    *, dataset: Dataset, reports: dict[str, AgreementReport], clips=None
) -> tuple[tuple[str, ...], list[calibration.PairRow]]:
    """Feature names and rows: the metrics' score differences, plus the caption features when the dataset's
    clips are given (their references) and the sentence model and fluency detector are there."""
    names, rows = calibration.pair_rows(reports)
    if clips is not None and calibration.caption_features_available():
        references = {clip.clip_key: clip.references for clip in clips}
        names, rows = calibration.with_caption_features(
            names, rows, references, protocol_name=dataset.agreement_protocol
        )
    return names, rows


def calibrated_cross_validation(
    *, dataset: Dataset, reports: dict[str, AgreementReport], clips=None, seed: int = calibration.DEFAULT_SEED
) -> tuple[AgreementReport, dict]:
    """(agreement report, calibration description) of CALIBRATED on `dataset`, held out by 5-fold CV grouped by clip.

    `reports` are the dataset's per-metric agreement reports (the features). The coefficients
    shown are those of a model fitted on every pair (what `--calibrate-on` transfers); the
    accuracy is the cross-validated one only, counted under the dataset's protocol.
    """
    names, rows = calibration_rows(dataset=dataset, reports=reports, clips=clips)
    validation = calibration.cross_validate(names, rows, seed=seed, protocol_name=dataset.agreement_protocol)
    full_model = calibration.fit_calibrated_model(names, rows, seed=seed)
    description = {
        "mode": "cross-validation",
        "held_out": True,
        "folds": validation.folds,
        "grouped_by": "clip",
        "seed": seed,
        "trained_on": dataset.name,
        "evaluated_on": dataset.name,
        "features": list(names),
        "fold_coefficients": validation.coefficient_summary(),
        "fold_regularisation_C": [model.regularisation for model in validation.fold_models],
        "fold_blocks": validation.blocks_per_fold(),
        "model_on_all_pairs": full_model.as_dict(),
        "clips_per_fold": _clips_per_fold(validation.fold_of_clip, validation.folds),
    }
    return validation.report, description


def calibrated_transfer(
    *,
    dataset: Dataset,
    reports: dict[str, AgreementReport],
    training: list[tuple],
    clips=None,
    seed: int = calibration.DEFAULT_SEED,
) -> tuple[AgreementReport, dict]:
    """(agreement report, description) of CALIBRATED fitted on every pair of the `training` datasets, each given
    as (dataset, its per-metric reports, its protocol clips or None), any layout, applied to `dataset` and
    counted under its protocol. Caption features are used when every dataset's clips are given."""
    use_clips = clips is not None and all(entry[2] is not None for entry in training)
    names_in_training = [set(entry[1]) for entry in training]
    features = [name for name in reports if all(name in names for names in names_in_training)]
    training_names = ", ".join(entry[0].name for entry in training)
    if not features:
        raise ValueError(f"CALIBRATED: {training_names} and {dataset.name} have no metric scored in common")
    training_rows = []
    for training_dataset, training_reports, training_clips in training:
        _names, rows = calibration_rows(
            dataset=training_dataset,
            reports={name: training_reports[name] for name in features},
            clips=training_clips if use_clips else None,
        )
        # clips of two training datasets never share a group (the inner search for C groups by clip)
        training_rows += [replace(row, clip_key=f"{training_dataset.pk}:{row.clip_key}") for row in rows]
    names, rows = calibration_rows(
        dataset=dataset, reports={name: reports[name] for name in features}, clips=clips if use_clips else None
    )
    model = calibration.fit_calibrated_model(names, training_rows, seed=seed)
    report = calibration.agreement_from_decisions(rows, model.decisions(rows), protocol_name=dataset.agreement_protocol)
    description = {
        "mode": "transfer",
        "held_out": True,
        "seed": seed,
        "trained_on": training_names,
        "evaluated_on": dataset.name,
        "features": list(names),
        "model_on_all_pairs": model.as_dict(),
        "shared_clips": sum(_shared_clip_count(training_dataset=entry[0], dataset=dataset) for entry in training),
    }
    return report, description


def _clips_per_fold(fold_of_clip: dict, folds: int) -> list[int]:
    counts = [0] * folds
    for fold in fold_of_clip.values():
        counts[fold] += 1
    return counts


def _shared_clip_count(*, training_dataset: Dataset, dataset: Dataset) -> int:
    """Clips of the evaluated dataset whose audio file name also appears in the training dataset (0 = disjoint)."""
    from annotation.models import Clip

    training_names = set(Clip.objects.filter(dataset=training_dataset).values_list("external_id", flat=True))
    return Clip.objects.filter(dataset=dataset, external_id__in=training_names).count()
