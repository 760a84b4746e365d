"""CALIBRATED on the Django side: load the pairs' stored scores, call the plain-Python model, shape the report.

The model and its cross-validation live in `metrics_bridge.agreement.calibration`; this module only
turns a dataset's stored scores into its inputs (via the per-metric agreement reports, which hold
each pair side's protocol score) and its results into the agreement report's "calibration" entry.
"""

from annotation.models import Dataset
from metrics_bridge.agreement import calibration
from metrics_bridge.agreement.protocol import AgreementReport


def calibrated_cross_validation(
    *, dataset: Dataset, reports: dict[str, AgreementReport], seed: int = calibration.DEFAULT_SEED
) -> tuple[AgreementReport, dict]:
    """(agreement report, calibration description) of CALIBRATED on `dataset`, held out by 5-fold CV grouped by clip.

    `reports` are the dataset's per-metric agreement reports (the features). The coefficients
    shown are those of a model fitted on every pair (what `--calibrate-on` transfers); the
    accuracy is the cross-validated one only.
    """
    names, rows = calibration.pair_rows(reports)
    validation = calibration.cross_validate(names, rows, seed=seed)
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
        "model_on_all_pairs": full_model.as_dict(),
        "clips_per_fold": _clips_per_fold(validation.fold_of_clip, validation.folds),
    }
    return validation.report, description


def calibrated_transfer(
    *,
    dataset: Dataset,
    reports: dict[str, AgreementReport],
    training_dataset: Dataset,
    training_reports: dict[str, AgreementReport],
    seed: int = calibration.DEFAULT_SEED,
) -> tuple[AgreementReport, dict]:
    """(agreement report, description) of CALIBRATED fitted on all pairs of `training_dataset`, applied to `dataset`."""
    features = [name for name in reports if name in training_reports]
    if not features:
        raise ValueError(f"CALIBRATED: {training_dataset.name} and {dataset.name} have no metric scored in common")
    training_names, training_rows = calibration.pair_rows({name: training_reports[name] for name in features})
    names, rows = calibration.pair_rows({name: reports[name] for name in features})
    model = calibration.fit_calibrated_model(training_names, training_rows, seed=seed)
    report = calibration.agreement_from_decisions(rows, model.decisions(rows))
    description = {
        "mode": "transfer",
        "held_out": True,
        "seed": seed,
        "trained_on": training_dataset.name,
        "evaluated_on": dataset.name,
        "features": list(names),
        "model_on_all_pairs": model.as_dict(),
        "shared_clips": _shared_clip_count(training_dataset=training_dataset, dataset=dataset),
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
