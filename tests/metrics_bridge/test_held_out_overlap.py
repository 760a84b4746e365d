"""What a held-out CALIBRATED figure may not have seen, by content: training datasets sharing clip audio or pairs
with the evaluated one are refused (or left out), training pairs holding its texts are dropped, and the fluency
detector's declared training texts decide whether its feature may be used."""

import json
import re
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from metrics_bridge.agreement import calibration, fingerprints
from metrics_bridge.scoring import fluency
from metrics_bridge.scoring.fluency import corpus
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db
METRICS = "BLEU_4,ROUGE_L,CALIBRATED"
PAIR_KEYS = ("HC", "HI", "HM", "MM_1", "MM_2", "MM_3", "MM_4")


@pytest.fixture
def clotho_items(shared_dir) -> list[dict]:
    return json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())


@pytest.fixture
def whole_half_other(clotho_items):
    """`whole` (10 clips), `half` (its first 5 clips, renamed) and `other` (10 further clips of the same study)."""
    pairwise_judgements_import(data=clotho_items[:10], dataset_name="whole", source_name="c.json")
    pairwise_judgements_import(data=clotho_items[:5], dataset_name="half", source_name="c.json")
    pairwise_judgements_import(data=clotho_items[10:20], dataset_name="other", source_name="c.json")


def report_json(capsys, *arguments) -> dict:
    capsys.readouterr()
    call_command("agreement_report", "--format", "json", *arguments)
    return json.loads(capsys.readouterr().out)


def _item_texts(item: dict) -> set[str]:
    texts = {fingerprints.normalise_text(text) for text in item["references"]}
    for key in PAIR_KEYS:
        if item.get(key):
            texts |= {fingerprints.normalise_text(item[key][0]), fingerprints.normalise_text(item[key][1])}
    return texts


def _counted_pairs(item: dict) -> list[list]:
    return [item[key] for key in PAIR_KEYS if item.get(key) and sum(item[key][-1]) != 0]


def test_calibrate_on_a_dataset_holding_the_evaluated_clips_is_refused_naming_the_overlap(whole_half_other):
    with pytest.raises(CommandError) as refused:
        call_command("agreement_report", "--dataset", "half", "--metrics", METRICS, "--calibrate-on", "other,whole")

    message = str(refused.value)
    assert "whole shares 5 clips' audio" in message and "judged pairs" in message and "with half" in message
    assert "other shares" not in message  # the other study clips are not the half's


def test_calibrate_on_drops_the_training_pairs_holding_the_evaluated_texts(whole_half_other, clotho_items, capsys):
    report = report_json(capsys, "--dataset", "half", "--metrics", METRICS, "--calibrate-on", "other")

    description = report["calibration"]
    assert description["mode"] == "transfer" and description["trained_on"] == "other"
    # independent count from the file: pairs of `other` (with a preference) holding a text of `half`
    half_texts = set().union(*(_item_texts(item) for item in clotho_items[:5]))
    holding = kept = 0
    for item in clotho_items[10:20]:
        references = {fingerprints.normalise_text(text) for text in item["references"]}
        for pair in _counted_pairs(item):
            texts = {fingerprints.normalise_text(pair[0]), fingerprints.normalise_text(pair[1])} | references
            if texts & half_texts:
                holding += 1
            else:
                kept += 1
    assert holding > 0, "the fixture should plant shared texts (HI pairs borrow other clips' captions)"
    left_out = description["left_out_pairs"]["other"]
    assert description["model_on_all_pairs"]["training_pairs"] == kept
    assert left_out["pairs"] == holding
    assert fingerprints.normalise_text(left_out["example"]) in half_texts
    capsys.readouterr()
    call_command("agreement_report", "--dataset", "half", "--metrics", METRICS, "--calibrate-on", "other")
    assert re.search(
        r"Left out of the fit: \d+ pairs of other holding one of the \d+ caption texts", capsys.readouterr().out
    )


def test_the_benchmark_trains_elsewhere_only_on_disjoint_datasets_and_names_the_others(whole_half_other, capsys):
    call_command("metric_benchmark", "--metrics", "BLEU_4,ROUGE_L", "--format", "json")
    table = json.loads(capsys.readouterr().out)

    elsewhere = table["cells"]["CALIBRATED (trained elsewhere)"]
    assert elsewhere["half"]["calibration"]["trained_on"] == "other"
    assert set(elsewhere["half"]["calibration"]["left_out_sources"]) == {"whole"}
    assert "5 clips' audio" in elsewhere["half"]["calibration"]["left_out_sources"]["whole"]
    assert elsewhere["whole"]["calibration"]["trained_on"] == "other"
    assert set(elsewhere["other"]["calibration"]["trained_on"].split(", ")) == {"half", "whole"}
    capsys.readouterr()
    call_command("metric_benchmark", "--metrics", "BLEU_4,ROUGE_L", "--stored-only")
    text = capsys.readouterr().out
    assert "trained elsewhere on half: left out whole (shares 5 clips' audio" in text


# --- the fluency detector's training texts ----------------------------------------------------------------


BENCHMARK_FILES = (
    "clotho_eval.json",
    "audiocaps_eval.json",
    "brace_format/brace_main_sample.json",
    "brace_format/brace_hallucination_sample.json",
    "fluency_annotations_723.csv",  # the detector's evaluation set (AudioCaps-Eval captions)
)


def test_the_shipped_detector_declares_no_text_of_any_benchmark_the_product_imports(shared_dir):
    declared = fingerprints.read_training_texts(fluency.SHIPPED_DETECTOR)
    assert declared is not None and len(declared.hashes) > 800
    for name in BENCHMARK_FILES:
        texts = corpus.read_excluded(shared_dir / "datasets" / name)
        hashes = {fingerprints.text_hash(text) for text in texts}
        assert len(hashes) > 10 and not hashes & declared.hashes, name
    # what is compared covers every reference and every judged caption of the FENSE-format benchmarks
    for name in ("clotho_eval.json", "audiocaps_eval.json"):
        items = json.loads((shared_dir / "datasets" / name).read_text())
        benchmark = {fingerprints.text_hash(text) for item in items for text in _item_texts(item)}
        compared = corpus.read_excluded(shared_dir / "datasets" / name)
        assert benchmark <= {fingerprints.text_hash(text) for text in compared}


def test_the_shipped_detector_declares_exactly_the_texts_its_recipe_gives(shared_dir):
    """The declaration and the detector's metadata (sha256 of its captions in training order) agree with the recipe."""
    datasets = shared_dir / "datasets"
    texts: list[str] = []
    for name in ("xace_machine_caption_graphs.json", "audiocaps_f_annotations.json"):
        texts.extend(corpus.sample(corpus.read_source(datasets / name, seed=0)[0], 450, seed=0))
    excluded = [text for name in BENCHMARK_FILES for text in corpus.read_excluded(datasets / name)]
    captions = corpus.without_texts(list(dict.fromkeys(texts)), excluded)
    declared = fingerprints.read_training_texts(fluency.SHIPPED_DETECTOR)
    assert declared.hashes == {fingerprints.text_hash(text) for text in captions}
    from safetensors import safe_open

    from metrics_bridge.scoring.fluency.training import captions_digest

    with safe_open(str(fluency.SHIPPED_DETECTOR), framework="numpy") as handle:
        assert captions_digest(captions) == handle.metadata()["captions_sha256"]


@pytest.fixture
def configured_detector(tmp_path, settings):
    """A copy of the shipped detector configured as FENSE_ERROR_DETECTOR_PATH; the test writes its declaration."""
    path = tmp_path / "my_detector.safetensors"
    shutil.copyfile(fluency.SHIPPED_DETECTOR, path)
    settings.FENSE_ERROR_DETECTOR_PATH = str(path)
    return path


def test_a_detector_that_saw_the_captions_leaves_its_feature_out_with_a_note(
    whole_half_other, clotho_items, configured_detector, capsys, monkeypatch
):
    asked = []
    real = fluency.error_probabilities
    monkeypatch.setattr(
        fluency, "error_probabilities", lambda texts, resources=None: asked.append(resources) or real(texts, resources)
    )
    # declared training texts disjoint from the dataset: the feature is used, no note
    fingerprints.write_training_texts(configured_detector, ["a text no dataset here holds"], description="unrelated")
    with_fense = "BLEU_4,ROUGE_L,FENSE,CALIBRATED"
    report = report_json(capsys, "--dataset", "half", "--metrics", with_fense)
    assert {"fluency_error", "FENSE"} <= set(report["calibration"]["features"])
    assert report["calibration"]["fluency_detector"]["detector"].startswith("my_detector.safetensors:")
    assert report["calibration"]["fluency_detector"]["leaks"] is False and "notes" not in report
    # CALIBRATED's feature came from the configured detector, not the shipped one
    assert asked and all(resources.fense_error_detector_path == str(configured_detector) for resources in asked)

    # plant one caption of a judged pair among its training texts
    planted = clotho_items[2]["HM"][1]
    fingerprints.write_training_texts(configured_detector, ["unrelated", planted], description="planted")
    report = report_json(capsys, "--dataset", "half", "--metrics", with_fense)
    # neither the detector's probability nor FENSE (its score carries the detector's penalty) enters the model
    assert "fluency_error" not in report["calibration"]["features"] and "FENSE" not in report["calibration"]["features"]
    assert set(calibration.CAPTION_FEATURES) - {"fluency_error"} <= set(report["calibration"]["features"])
    assert "FENSE" in report["metrics"]  # the single metric is still shown, under the note
    assert report["calibration"]["fluency_detector"]["judged_captions_in_training_texts"] == 1
    assert any("trained on 1 of this dataset's" in note for note in report["notes"])
    capsys.readouterr()
    call_command("agreement_report", "--dataset", "half", "--metrics", METRICS)
    assert "note: The fluency detector (my_detector.safetensors" in capsys.readouterr().out


def test_a_detector_that_declares_nothing_is_not_trusted(whole_half_other, configured_detector, capsys):
    report = report_json(capsys, "--dataset", "half", "--metrics", METRICS)
    assert "fluency_error" not in report["calibration"]["features"]
    assert "does not declare the texts it was trained on" in report["notes"][0]


def test_the_shipped_detector_is_held_out_on_clotho_eval(whole_half_other, capsys):
    report = report_json(capsys, "--dataset", "half", "--metrics", METRICS)
    assert "fluency_error" in report["calibration"]["features"]
    detector = report["calibration"]["fluency_detector"]
    assert detector["judged_captions_in_training_texts"] == 0 and detector["leaks"] is False
    assert "notes" not in report
