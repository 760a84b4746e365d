"""agreement_report with CALIBRATED: held-out row and description, transfer (--calibrate-on), dashboard block."""

import json
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Dataset
from metrics_bridge.agreement import calibration, fingerprints
from metrics_bridge.agreement.protocol import clips_from_fense_items, fense_agreement
from metrics_bridge.scoring import fluency
from metrics_bridge.scoring.classic import BleuScorer, RougeScorer
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db
METRICS = "BLEU_4,ROUGE_L,CALIBRATED"


@pytest.fixture
def clotho_items(shared_dir) -> list[dict]:
    return json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())


@pytest.fixture
def two_datasets(clotho_items) -> tuple[Dataset, Dataset]:
    pairwise_judgements_import(data=clotho_items[:15], dataset_name="cal-a", source_name="clotho_eval.json")
    pairwise_judgements_import(data=clotho_items[15:30], dataset_name="cal-b", source_name="clotho_eval.json")
    return Dataset.objects.get(name="cal-a"), Dataset.objects.get(name="cal-b")


def report_json(capsys, *arguments) -> dict:
    capsys.readouterr()
    call_command("agreement_report", "--format", "json", *arguments)
    return json.loads(capsys.readouterr().out)


def test_calibrated_is_a_held_out_row_whose_features_are_the_other_metrics(two_datasets, clotho_items, capsys):
    report = report_json(capsys, "--dataset", "cal-a", "--metrics", METRICS)

    assert list(report["metrics"]) == ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "ROUGE_L", "CALIBRATED"]
    assert set(report["metrics"]["CALIBRATED"]) == {"HC", "HI", "HM", "MM", "total"}
    description = report["calibration"]
    assert description["mode"] == "cross-validation" and description["held_out"] is True
    assert description["folds"] == 5 and description["grouped_by"] == "clip"
    # the shipped fluency detector never saw Clotho-Eval's captions: its feature is used
    caption_features = list(calibration.CAPTION_FEATURES)
    assert description["features"] == ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "ROUGE_L", *caption_features]
    assert description["fluency_detector"]["leaks"] is False
    assert sum(description["clips_per_fold"]) == 15 and min(description["clips_per_fold"]) >= 1

    # The same numbers from the plain-Python protocol and model on the same 15 clips, scored directly.
    clips = clips_from_fense_items(clotho_items[:15])
    reports = {**fense_agreement(clips, BleuScorer()), **fense_agreement(clips, RougeScorer())}
    names, rows = calibration.pair_rows(
        {name: reports[name] for name in ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "ROUGE_L"]}
    )
    references = {clip.clip_key: clip.references for clip in clips}
    # the caption features are matched by pair: the file's clip keys stand for the database's clip ids here
    names, rows = calibration.with_caption_features(names, rows, references)
    assert list(names) == description["features"]
    expected = calibration.cross_validate(names, rows).report.as_dict()
    for split in ("HC", "HI", "HM", "MM", "total"):
        assert report["metrics"]["CALIBRATED"][split] == expected[split]


def test_transfer_fits_on_one_dataset_and_evaluates_on_the_other(two_datasets, capsys):
    report = report_json(capsys, "--dataset", "cal-b", "--metrics", METRICS, "--calibrate-on", "cal-a")

    description = report["calibration"]
    assert description["mode"] == "transfer" and description["trained_on"] == "cal-a"
    assert description["evaluated_on"] == "cal-b" and description["shared_clips"] == 0
    # cal-a's pairs holding a caption text of cal-b (HI pairs borrow other clips' captions) are left out of the fit
    left_out = description.get("left_out_pairs", {}).get("cal-a", {}).get("pairs", 0)
    assert (
        description["model_on_all_pairs"]["training_pairs"]
        == report_json(capsys, "--dataset", "cal-a", "--metrics", METRICS)["pairs"]["total"] - left_out
    )
    assert report["metrics"]["CALIBRATED"]["total"] is not None


def test_bad_calibration_requests_are_clear_errors(two_datasets):
    with pytest.raises(CommandError, match="must name another dataset"):
        call_command("agreement_report", "--dataset", "cal-a", "--metrics", METRICS, "--calibrate-on", "cal-a")
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("agreement_report", "--dataset", "cal-a", "--metrics", METRICS, "--calibrate-on", "nope")
    with pytest.raises(CommandError, match="needs CALIBRATED"):
        call_command("agreement_report", "--dataset", "cal-b", "--metrics", "ROUGE_L", "--calibrate-on", "cal-a")


def test_the_agreement_page_shows_the_calibration_block_to_admins(
    client, make_user, two_datasets, clotho_items, capsys, tmp_path, settings
):
    dataset, _ = two_datasets
    url = f"/metrics/datasets/{dataset.pk}/agreement/"
    refresh = f"/metrics/dashboards/agreement/{dataset.pk}/refresh/"  # the dashboard's numbers, computed inline
    client.force_login(make_user("boss", staff=True))
    client.post(refresh)
    assert "No metric scores are stored" in client.get(url).content.decode()

    report_json(capsys, "--dataset", "cal-a", "--metrics", "BLEU_4,ROUGE_L")  # stores the scores
    client.post(refresh)
    page = client.get(url).content.decode()
    assert 'id="calibration"' in page and "held out only" in page and 'id="calibration-coefficients"' in page
    # the shipped fluency detector never saw Clotho-Eval's texts: its feature is in, and no note
    assert "<td>fluency_error</td>" in page and 'id="calibration-detector-note"' not in page
    for name in ["BLEU_1", "BLEU_4", "ROUGE_L"]:
        assert f"<td>{name}</td>" in page

    # a detector declaring one of the study's judged captions among its training texts: the block says so
    planted = tmp_path / "planted_detector.safetensors"
    shutil.copyfile(fluency.SHIPPED_DETECTOR, planted)
    fingerprints.write_training_texts(planted, ["unrelated", clotho_items[0]["HC"][0]], description="planted")
    settings.FENSE_ERROR_DETECTOR_PATH = str(planted)
    client.post(refresh)
    page = client.get(url).content.decode()
    assert 'id="calibration-detector-note"' in page and "was trained on" in page
    assert "<td>fluency_error</td>" not in page


def test_the_dashboard_summary_is_cached_until_votes_or_scores_change(two_datasets, capsys, monkeypatch):
    from metrics_bridge.services.evaluation import agreement
    from ratings.models import PairwiseVote

    dataset, _ = two_datasets
    report_json(capsys, "--dataset", "cal-a", "--metrics", "BLEU_4,ROUGE_L")
    fits = []
    original = agreement._calibration_summary
    monkeypatch.setattr(agreement, "_calibration_summary", lambda **kwargs: fits.append(1) or original(**kwargs))

    first = agreement.calibration_summary(dataset=dataset)
    assert agreement.calibration_summary(dataset=dataset) == first and len(fits) == 1
    vote = PairwiseVote.objects.filter(pair__clip__dataset=dataset).order_by("pk").first()
    vote.choice = "b" if vote.choice == "a" else "a"
    vote.save()
    agreement.calibration_summary(dataset=dataset)
    assert len(fits) == 2


def test_the_coefficient_table_has_a_row_per_feature_and_says_which_models_left_a_block_out():
    from metrics_bridge.services.evaluation.agreement import _coefficient_rows

    margin, gated, vote = calibration.MODEL_BLOCKS
    description = {
        "model_on_all_pairs": {
            "blocks": [margin, gated],
            "coefficients_by_block": {
                "A": {margin: 0.5, gated: -0.2, vote: 0.0},
                "B": {margin: -1.0, gated: 0.0, vote: 0.0},
            },
        },
        "fold_blocks": [[margin, gated], [margin, gated, vote], [margin, gated], [margin, gated], [margin, gated]],
        "fold_coefficients": {"A": {"min": 0.4, "max": 0.6}, "A vote": {"min": 0.0, "max": 0.3}},
    }
    table = _coefficient_rows(description)
    assert [(block["name"], block["note"]) for block in table["blocks"]] == [
        (margin, ""),
        (gated, ""),
        (vote, "in 1 of 5 fold models; not in the model on all pairs"),
    ]
    assert [(row["name"], row["bar_percent"]) for row in table["rows"]] == [("B", 100.0), ("A", 70.0)]
    a_cells = table["rows"][1]["cells"]
    assert [cell["value"] for cell in a_cells] == [0.5, -0.2, 0.0]
    assert (a_cells[0]["fold_min"], a_cells[0]["fold_max"], a_cells[2]["fold_max"]) == (0.4, 0.6, 0.3)
    assert a_cells[1]["fold_min"] is None  # no fold range given for that column
