"""CALIBRATED on the Django side: load the pairs' stored scores, call the plain-Python model, shape the report.

The model and its cross-validation live in `metrics_bridge.agreement.calibration`; this module only
turns a dataset's stored scores into its inputs (via the per-metric agreement reports, which hold
each pair side's protocol score) and its results into the agreement report's "calibration" entry.

What a held-out figure may not have seen (docs/metrics.md, "The overlap rule"), by content
(`agreement.fingerprints`), never by dataset name:
- a model "trained elsewhere" (`--calibrate-on`, the benchmark's column) is fitted only on datasets sharing no
  clip audio and no judged pair with the evaluated one (`training_overlap_error`); of the rest, every training
  pair holding a caption text of the evaluated dataset (as one of its captions or its clip's references) is
  left out of the fit, and the report says how many;
- the fluency detector behind the `fluency_error` feature declares the texts it was trained on
  (fingerprints.read_training_texts); on a dataset whose judged captions are among them, or with a detector
  that declares nothing, CALIBRATED goes without every feature carrying its output (DETECTOR_FEATURES), and the
  report carries a note (`detector_check`).
"""

import hashlib
import json
from dataclasses import dataclass, replace

from corpus.models import Caption, Clip, Dataset
from metrics_bridge.agreement import calibration, calibration_transfer, fingerprints
from metrics_bridge.agreement.protocol import AgreementReport
from metrics_bridge.services.runs.contexts import metric_resources
from ratings.models import CaptionPair

FLUENCY_FEATURE = "fluency_error"
#: CALIBRATED's features whose values carry the fluency detector's output: its own error probability, and the
#: metrics that multiply their score by its penalty (FENSE; MACE). Where the detector saw the dataset's captions
#: (or does not say what it saw) every one of them is left out of the model.
DETECTOR_FEATURES = (FLUENCY_FEATURE, "FENSE", "MACE")


def model_versions(*models: str) -> list[list[str]]:
    """[[model, its version]] for these CALIBRATED models ("in-study", "transfer": the names their descriptions
    give them), read when asked: a stored figure or table made with another version of a model is another figure,
    never to be shown as current, so its key or fingerprint carries these."""
    versions = {"in-study": calibration.VERSION, "transfer": calibration_transfer.VERSION}
    return [[model, versions[model]] for model in models]


def model_versions_tag(*models: str) -> str:
    """A short tag of `model_versions(*models)`, for a storage key."""
    return hashlib.sha256(json.dumps(model_versions(*models)).encode()).hexdigest()[:12]


def dataset_content(*, dataset: Dataset) -> fingerprints.ContentFingerprint:
    """Every clip (audio hash or file name, references) and judged pair (its two texts) of the dataset."""
    references: dict[int, list[str]] = {}
    rows = Caption.objects.filter(clip__dataset=dataset, role=Caption.Role.REFERENCE).order_by()
    for clip_id, text in rows.values_list("clip_id", "text"):
        references.setdefault(clip_id, []).append(text)
    pair_rows = CaptionPair.objects.filter(clip__dataset=dataset).order_by("pk")
    pairs = []
    for clip_id, text_a, text_b, own_references in pair_rows.values_list(
        "clip_id", "caption_a__text", "caption_b__text", "references"
    ):
        pairs.append(fingerprints.PairContent(clip_key=str(clip_id), caption_a=text_a, caption_b=text_b))
        if own_references:  # BRACE-Hallucination pairs carry their own references
            references.setdefault(clip_id, []).extend(own_references)
    clips = [
        fingerprints.ClipContent(
            key=str(pk), audio_sha256=sha256, names=(file_name, external_id), references=tuple(references.get(pk, ()))
        )
        for pk, sha256, file_name, external_id in Clip.objects.filter(dataset=dataset)
        .order_by("pk")
        .values_list("pk", "sha256", "file_name", "external_id")
    ]
    return fingerprints.content_fingerprint(clips, pairs)


def training_overlap_error(*, dataset: Dataset, training_dataset: Dataset, overlap: fingerprints.Overlap) -> str:
    return (
        f"{training_dataset.name} shares {overlap.describe()} with {dataset.name}: a CALIBRATED model fitted on it "
        f"would have seen the data it is evaluated on"
    )


# --- the fluency detector's training texts ----------------------------------------------------------------


@dataclass(frozen=True)
class DetectorCheck:
    """The configured fluency detector against a dataset's judged captions."""

    detector: str
    declared: bool  # the detector declares its training texts
    shared: int  # distinct judged captions among them
    captions: int  # distinct judged captions
    description: str

    @property
    def leaks(self) -> bool:
        return not self.declared or self.shared > 0

    def note(self) -> str:
        if not self.declared:
            return (
                f"The fluency detector ({self.detector}) does not declare the texts it was trained on, so it may "
                f"have seen these captions: FENSE's penalty and CALIBRATED's {FLUENCY_FEATURE} feature cannot be "
                f"called held out here; CALIBRATED goes without the features it feeds ({', '.join(DETECTOR_FEATURES)})."
            )
        return (
            f"The fluency detector ({self.detector}) was trained on {self.shared:,} of this dataset's "
            f"{self.captions:,} judged captions ({self.description}): FENSE's penalty saw them, and CALIBRATED goes "
            f"without the features it feeds ({', '.join(DETECTOR_FEATURES)}) here."
        )

    def as_dict(self) -> dict:
        return {
            "detector": self.detector,
            "declares_training_texts": self.declared,
            "judged_captions": self.captions,
            "judged_captions_in_training_texts": self.shared,
            "leaks": self.leaks,
            "note": self.note() if self.leaks else "",
        }


def detector_check(*, content: fingerprints.ContentFingerprint, resources=None) -> DetectorCheck:
    """The configured detector (FENSE_ERROR_DETECTOR_PATH, else the shipped one) against the dataset's captions."""
    from metrics_bridge.scoring import fluency

    resources = resources if resources is not None else metric_resources()
    path = fluency.detector_path(resources)
    declared = fingerprints.read_training_texts(path) if path.is_file() else None
    shared = len(content.caption_texts & declared.hashes) if declared is not None else 0
    return DetectorCheck(
        detector=fluency.detector_name(resources),
        declared=declared is not None,
        shared=shared,
        captions=len(content.caption_texts),
        description=declared.description if declared is not None else "",
    )


def dataset_detector_note(*, dataset: Dataset) -> str:
    """The note a report on the dataset carries when the fluency detector saw (or may have seen) its captions."""
    check = detector_check(content=dataset_content(dataset=dataset))
    return check.note() if check.leaks else ""


def _without_features(names: tuple[str, ...], rows: list, features) -> tuple[tuple[str, ...], list]:
    keep = [index for index, name in enumerate(names) if name not in features]
    if len(keep) == len(names):
        return names, rows
    kept = tuple(names[index] for index in keep)
    return kept, [replace(row, differences=tuple(row.differences[index] for index in keep)) for row in rows]


# --- the model ---------------------------------------------------------------------------------------------


def calibration_rows(
    *, dataset: Dataset, reports: dict[str, AgreementReport], clips=None, without_detector: bool = False
) -> tuple[tuple[str, ...], list[calibration.PairRow]]:
    """Feature names and rows: the metrics' score differences, plus the caption features when the dataset's
    clips are given (their references) and the sentence model and the configured fluency detector are there
    (`without_detector`: none of the DETECTOR_FEATURES)."""
    names, rows = calibration.pair_rows(reports)
    resources = metric_resources()
    if clips is not None and calibration.caption_features_available(resources):
        references = {clip.clip_key: clip.references for clip in clips}
        names, rows = calibration.with_caption_features(
            names, rows, references, protocol_name=dataset.agreement_protocol, resources=resources
        )
    if without_detector:
        names, rows = _without_features(names, rows, DETECTOR_FEATURES)
        if not names:
            raise ValueError(
                "CALIBRATED: every feature carries the fluency detector's output, which saw this dataset's captions"
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
    detector = detector_check(content=dataset_content(dataset=dataset))
    names, rows = calibration_rows(dataset=dataset, reports=reports, clips=clips, without_detector=detector.leaks)
    validation = calibration.cross_validate(names, rows, seed=seed, protocol_name=dataset.agreement_protocol)
    full_model = calibration.fit_calibrated_model(names, rows, seed=seed)
    description = {
        "mode": "cross-validation",
        # fitted on the study's own judgements: the model for a lab that calibrates on its own votes
        "model": "in-study",
        "model_version": calibration.VERSION,
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
        "fluency_detector": detector.as_dict(),
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
    counted under its protocol. Caption features are used when every dataset's clips are given.

    ValueError when a training dataset shares clip audio or a judged pair with `dataset` (callers choosing the
    sources leave those out first: `disjoint_sources`); training pairs holding one of `dataset`'s caption texts
    are left out of the fit and counted in the description's "left_out_pairs"."""
    use_clips = clips is not None and all(entry[2] is not None for entry in training)
    names_in_training = [set(entry[1]) for entry in training]
    features = [name for name in reports if all(name in names for names in names_in_training)]
    training_names = ", ".join(entry[0].name for entry in training)
    if not features:
        raise ValueError(f"CALIBRATED: {training_names} and {dataset.name} have no metric scored in common")
    evaluated = dataset_content(dataset=dataset)
    detector = detector_check(content=evaluated)
    training_sets, left_out_pairs = [], {}
    for training_dataset, training_reports, training_clips in training:
        content = dataset_content(dataset=training_dataset)
        overlap = fingerprints.overlap(evaluated, content)
        if overlap.shares_recordings_or_pairs:
            raise ValueError(
                "CALIBRATED: "
                + training_overlap_error(dataset=dataset, training_dataset=training_dataset, overlap=overlap)
            )
        _names, rows = calibration_rows(
            dataset=training_dataset,
            reports={name: training_reports[name] for name in features},
            clips=training_clips if use_clips else None,
            without_detector=detector.leaks,
        )
        shared = evaluated.texts.keys() & content.texts.keys()
        kept = [row for row in rows if not _holds_texts(row, content, shared)]
        # counted as the fit counts pairs: with a human preference (a tied pair teaches nothing anyway)
        dropped = sum(1 for row in rows if row.truth != 0) - sum(1 for row in kept if row.truth != 0)
        if dropped:
            left_out_pairs[training_dataset.name] = {
                "pairs": dropped,
                "shared_texts": len(shared),
                "example": overlap.texts[0],
            }
        # each training dataset is scaled by its own root mean squares, so its rows stay together; clip keys say
        # the dataset (clips of two training datasets are never one group)
        training_sets.append([replace(row, clip_key=f"{training_dataset.pk}:{row.clip_key}") for row in kept])
    names, rows = calibration_rows(
        dataset=dataset,
        reports={name: reports[name] for name in features},
        clips=clips if use_clips else None,
        without_detector=detector.leaks,
    )
    model = calibration_transfer.fit_transfer_model(names, training_sets)
    report = calibration.agreement_from_decisions(rows, model.decisions(rows), protocol_name=dataset.agreement_protocol)
    description = {
        "mode": "transfer",
        # fitted elsewhere: the model chosen for carrying to a study it never saw (calibration_transfer)
        "model": "transfer",
        "model_version": calibration_transfer.VERSION,
        "held_out": True,
        "seed": seed,
        "trained_on": training_names,
        "evaluated_on": dataset.name,
        "features": list(names),
        "model_on_all_pairs": model.as_dict(),
        # by content: clip audio (or file name) and judged pairs shared with the evaluated dataset (always 0 here)
        "shared_clips": 0,
        "left_out_pairs": left_out_pairs,
        "fluency_detector": detector.as_dict(),
    }
    return report, description


def _holds_texts(row: calibration.PairRow, content: fingerprints.ContentFingerprint, shared) -> bool:
    """Whether the training pair holds one of the shared texts: as a caption, or among its clip's references."""
    if not shared:
        return False
    texts = (row.pair.caption_a, row.pair.caption_b, *(row.pair.references or ()))
    return fingerprints.mentions(texts, shared) or bool(content.clip_texts.get(str(row.clip_key), frozenset()) & shared)


def disjoint_sources(*, dataset: Dataset, candidates: list[Dataset]) -> tuple[list[Dataset], dict[str, str]]:
    """The candidates a model evaluated on `dataset` may be fitted on (no shared clip audio or judged pair), and
    {left-out dataset name: what it shares}."""
    evaluated = dataset_content(dataset=dataset)
    usable, left_out = [], {}
    for candidate in candidates:
        overlap = fingerprints.overlap(evaluated, dataset_content(dataset=candidate))
        if overlap.shares_recordings_or_pairs:
            left_out[candidate.name] = overlap.describe()
        else:
            usable.append(candidate)
    return usable, left_out


def _clips_per_fold(fold_of_clip: dict, folds: int) -> list[int]:
    counts = [0] * folds
    for fold in fold_of_clip.values():
        counts[fold] += 1
    return counts
