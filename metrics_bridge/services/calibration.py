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
    accuracy is the cross-validated one only, counted under the dataset's protocol.
    """
    names, rows = calibration.pair_rows(reports)
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
        "model_on_all_pairs": full_model.as_dict(),
        "clips_per_fold": _clips_per_fold(validation.fold_of_clip, validation.folds),
    }
    return validation.report, description


def calibrated_transfer(
    *,
    dataset: Dataset,
    reports: dict[str, AgreementReport],
    training: list[tuple[Dataset, dict[str, AgreementReport]]],
    seed: int = calibration.DEFAULT_SEED,
) -> tuple[AgreementReport, dict]:
    """(agreement report, description) of CALIBRATED fitted on every pair of the `training` datasets (each with
    its per-metric reports, any layout), applied to `dataset` and counted under its protocol."""
    names_in_training = [set(training_reports) for _, training_reports in training]
    features = [name for name in reports if all(name in names for names in names_in_training)]
    training_names = ", ".join(training_dataset.name for training_dataset, _ in training)
    if not features:
        raise ValueError(f"CALIBRATED: {training_names} and {dataset.name} have no metric scored in common")
    training_rows = []
    for training_dataset, training_reports in training:
        _names, rows = calibration.pair_rows({name: training_reports[name] for name in features})
        # clips of two training datasets never share a group (the inner search for C groups by clip)
        training_rows += [
            calibration.PairRow(row.pair, f"{training_dataset.pk}:{row.clip_key}", row.differences) for row in rows
        ]
    names, rows = calibration.pair_rows({name: reports[name] for name in features})
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
        "shared_clips": sum(
            _shared_clip_count(training_dataset=training_dataset, dataset=dataset) for training_dataset, _ in training
        ),
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
