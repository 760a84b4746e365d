"""CALIBRATED trained elsewhere leads the benchmark, the agreement page (a worker's part) and agreement_report, with
the in-study figure beside it; and no such figure comes from a model that saw its evaluation data.

The guarantee is checked on what the fit actually receives: every training row passed to the model is captured
(a spy on the fit) and its clip, pair and texts are compared, by an independent normalisation written here, with
the evaluated dataset's. Overlap is planted: a dataset sharing a clip's audio identity, one sharing a judged pair,
one sharing a caption text through one training pair, and a half of the evaluated dataset."""

import copy
import csv
import io
import json
import re
import unicodedata

import pytest
from django.core.management import call_command

from corpus.models import Caption, Clip, Dataset
from metrics_bridge.agreement import calibration
from metrics_bridge.services.evaluation import benchmark, dashboards, transfer
from metrics_bridge.services.evaluation import calibration as calibration_service
from ratings.models import CaptionPair
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db
SINGLE = "BLEU_4,ROUGE_L"
PAIR_KEYS = ("HC", "HI", "HM", "MM_1", "MM_2", "MM_3", "MM_4")


def normalised(text: str) -> str:
    """The overlap rule's text identity, written out (docs/metrics.md): NFKC, lower case, punctuation as spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join("".join(char if char.isalnum() or char.isspace() or char == "_" else " " for char in text).split())


def clip_identity(clip: Clip) -> str:
    return clip.sha256 or clip.file_name.rsplit("/", 1)[-1].lower()


@pytest.fixture
def items(shared_dir) -> list[dict]:
    return json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())


@pytest.fixture
def planted(items) -> dict:
    """`study` (6 clips) and, around it: its `half`, `same-audio` (other pairs on one of its clips' audio),
    `same-pair` (one of its clips with its pairs, plus other clips), `shared-text` (other clips, one pair holding
    one of its caption texts) and `clean` (other clips)."""
    study = items[:6]
    same_audio = copy.deepcopy(items[60:63])
    same_audio[0]["raw_name"] = study[3]["raw_name"]  # the same recording, judged on other captions
    shared_text = copy.deepcopy(items[70:74])
    planted_text = study[2]["HC"][0]
    shared_text[1]["MM_1"] = [planted_text, shared_text[1]["MM_1"][1], *shared_text[1]["MM_1"][2:]]
    for name, data in (
        ("study", study),
        ("half", items[:3]),
        ("same-audio", same_audio),
        ("same-pair", [items[5], *items[80:82]]),
        ("shared-text", shared_text),
        ("clean", items[90:94]),
    ):
        pairwise_judgements_import(data=data, dataset_name=name, source_name=f"{name}.json")
    return {"planted_text": planted_text}


@pytest.fixture(autouse=True)
def _metric_features_only(monkeypatch):
    """CALIBRATED on the metrics' differences only: the caption features load the sentence model and the fluency
    detector, minutes on a loaded machine, and the rows' identities do not depend on them."""
    monkeypatch.setattr(calibration, "caption_features_available", lambda resources=None: False)


@pytest.fixture
def scored(planted, capsys):
    """BLEU/ROUGE stored on every dataset (the scores metric_benchmark computes first; no CALIBRATED fit here)."""
    for dataset in Dataset.objects.order_by("name"):
        call_command("agreement_report", "--dataset", dataset.name, "--metrics", SINGLE, "--format", "json")
    capsys.readouterr()


class FitSpy:
    """Captures the rows every transfer fit receives: calibrated_transfer is wrapped where each caller looks it up,
    and the model's fit records its rows while a transfer is running (cross-validation fits are not transfers)."""

    def __init__(self, monkeypatch):
        self.fits: list[list] = []
        self._inside = 0
        real_fit = calibration.fit_calibrated_model
        real_transfer = calibration_service.calibrated_transfer

        def fit(names, rows, *args, **kwargs):
            if self._inside:
                self.fits.append(list(rows))
            return real_fit(names, rows, *args, **kwargs)

        def transfer_spy(*args, **kwargs):
            self._inside += 1
            try:
                return real_transfer(*args, **kwargs)
            finally:
                self._inside -= 1

        monkeypatch.setattr(calibration, "fit_calibrated_model", fit)
        # the transfer model, where it has a fit of its own (one list of rows per training dataset)
        try:
            from metrics_bridge.agreement import calibration_transfer
        except ImportError:
            calibration_transfer = None
        if calibration_transfer is not None:
            real_transfer_fit = calibration_transfer.fit_transfer_model

            def fit_transfer(names, datasets, *args, **kwargs):
                if self._inside:
                    self.fits.append([row for rows in datasets for row in rows])
                return real_transfer_fit(names, datasets, *args, **kwargs)

            monkeypatch.setattr(calibration_transfer, "fit_transfer_model", fit_transfer)
        for module in (calibration_service, transfer, benchmark):
            monkeypatch.setattr(module, "calibrated_transfer", transfer_spy, raising=False)
        from metrics_bridge.services.evaluation import agreement

        monkeypatch.setattr(agreement, "calibrated_transfer", transfer_spy, raising=False)

    def training_datasets(self) -> set[str]:
        ids = {row.pair.pair_id for rows in self.fits for row in rows}
        return set(CaptionPair.objects.filter(pk__in=ids).values_list("clip__dataset__name", flat=True).distinct())


def assert_nothing_seen(spy: FitSpy, evaluated: Dataset) -> None:
    """No training row's clip, judged pair or text (its captions, its own references, its clip's references) is the
    evaluated dataset's, by the identities computed here from the database."""
    assert spy.fits, "no transfer fit ran: the test would prove nothing"
    clips = list(Clip.objects.filter(dataset=evaluated))
    audio = {clip_identity(clip) for clip in clips}
    texts = {
        normalised(text) for text in Caption.objects.filter(clip__dataset=evaluated).values_list("text", flat=True)
    }
    pairs = {
        (clip_identity(pair.clip), frozenset((normalised(pair.caption_a.text), normalised(pair.caption_b.text))))
        for pair in CaptionPair.objects.filter(clip__dataset=evaluated).select_related("clip", "caption_a", "caption_b")
    }
    for rows in spy.fits:
        assert rows
        ids = [row.pair.pair_id for row in rows]
        stored = CaptionPair.objects.select_related("clip").in_bulk(ids)
        assert len(stored) == len(set(ids)), "every training row is one stored judged pair"
        for row in rows:
            clip = stored[row.pair.pair_id].clip
            assert clip.dataset_id != evaluated.pk
            assert clip_identity(clip) not in audio, (clip.dataset.name, clip.file_name)
            row_texts = {normalised(row.pair.caption_a), normalised(row.pair.caption_b)}
            assert (clip_identity(clip), frozenset(row_texts)) not in pairs
            references = Caption.objects.filter(clip=clip, role=Caption.Role.REFERENCE).values_list("text", flat=True)
            row_texts |= {normalised(text) for text in (*(row.pair.references or ()), *references)}
            assert not row_texts & texts, (clip.dataset.name, row_texts & texts)


def test_the_benchmark_trains_elsewhere_on_nothing_the_evaluated_study_holds(scored, monkeypatch, capsys):
    spy = FitSpy(monkeypatch)
    call_command(
        "metric_benchmark",
        "--metrics",
        SINGLE,
        "--datasets",
        "study,half,same-audio,same-pair,shared-text,clean",
        "--format",
        "json",
    )
    table = json.loads(capsys.readouterr().out)

    # every transfer fit of the table (one per dataset that has the figure), each against its evaluated dataset
    order = [entry["name"] for entry in table["datasets"] if "total" in entry["headline"]["trained_elsewhere"]]
    assert "study" in order and len(spy.fits) == len(order)
    for rows, name in zip(list(spy.fits), order, strict=True):
        spy.fits = [rows]
        assert_nothing_seen(spy, Dataset.objects.get(name=name))

    lead = next(entry for entry in table["datasets"] if entry["name"] == "study")["headline"]
    elsewhere = lead["trained_elsewhere"]
    assert elsewhere["total"] is not None and elsewhere["pairs"] > 0
    assert set(elsewhere["calibration"]["trained_on"].split(", ")) == {"clean", "shared-text"}
    assert set(lead["left_out_sources"]) == {"half", "same-audio", "same-pair"}
    assert elsewhere["calibration"]["left_out_pairs"]["shared-text"]["pairs"] >= 1
    # the table leads with the trained-elsewhere row, the in-study row beside it
    assert table["metrics"][:2] == ["CALIBRATED (trained elsewhere)", "CALIBRATED"]
    low, high = elsewhere["interval"]
    assert low <= elsewhere["total"] <= high


def test_the_agreement_pages_worker_part_trains_elsewhere_on_nothing_the_study_holds(scored, monkeypatch):
    spy = FitSpy(monkeypatch)
    study = Dataset.objects.get(name="study")

    assert dashboards.dashboard_part_compute(part="transfer", object_id=study.pk) == "done"

    assert_nothing_seen(spy, study)
    assert spy.training_datasets() == {"clean", "shared-text"}
    lead = transfer.transfer_summary(dataset=study)["headline"]  # stored: read, not refitted
    assert len(spy.fits) == 1
    assert set(lead["left_out_sources"]) == {"half", "same-audio", "same-pair"}
    assert lead["left_out_sources"]["same-audio"].startswith("1 clip")


def test_agreement_report_calibrate_on_fits_on_nothing_the_study_holds(scored, monkeypatch, capsys):
    spy = FitSpy(monkeypatch)
    call_command(
        "agreement_report",
        "--dataset",
        "study",
        "--metrics",
        f"{SINGLE},CALIBRATED",
        "--calibrate-on",
        "shared-text,clean",
        "--format",
        "json",
    )
    report = json.loads(capsys.readouterr().out)

    assert_nothing_seen(spy, Dataset.objects.get(name="study"))
    assert spy.training_datasets() == {"clean", "shared-text"}
    assert list(report)[:2] == ["dataset", "headline"]
    assert report["headline"]["trained_elsewhere"]["total"] == report["metrics"]["CALIBRATED"]["total"]


def test_agreement_report_leads_with_trained_elsewhere_and_the_in_study_figure_beside_it(scored, monkeypatch, capsys):
    spy = FitSpy(monkeypatch)
    call_command("agreement_report", "--dataset", "study", "--metrics", f"{SINGLE},CALIBRATED", "--format", "json")
    report = json.loads(capsys.readouterr().out)

    assert_nothing_seen(spy, Dataset.objects.get(name="study"))
    lead = report["headline"]
    assert lead["in_study"]["total"] == report["metrics"]["CALIBRATED"]["total"]  # the cross-validated row
    assert lead["best_single_name"] in ("BLEU_4", "ROUGE_L")
    for figure in (lead["trained_elsewhere"], lead["in_study"], lead["best_single"]):
        low, high = figure["interval"]
        assert low <= figure["total"] <= high
    capsys.readouterr()
    call_command("agreement_report", "--dataset", "study", "--metrics", f"{SINGLE},CALIBRATED")
    text = capsys.readouterr().out.splitlines()
    assert text[1].startswith("CALIBRATED trained elsewhere (fitted on clean, shared-text, never on this study): ")
    assert text[2].startswith("CALIBRATED fitted on this study's own judgements (in-study): ")


def test_without_a_disjoint_study_the_lead_says_so_and_names_the_overlapping_ones(items, capsys):
    pairwise_judgements_import(data=items[:6], dataset_name="alone", source_name="a.json")
    pairwise_judgements_import(data=items[:3], dataset_name="its-half", source_name="a.json")
    for name in ("alone", "its-half"):
        call_command("agreement_report", "--dataset", name, "--metrics", SINGLE, "--format", "json")
    capsys.readouterr()
    alone = Dataset.objects.get(name="alone")

    assert dashboards.dashboard_part_compute(part="transfer", object_id=alone.pk) == "done"
    lead = transfer.transfer_summary(dataset=alone)["headline"]
    message = lead["trained_elsewhere"]["unavailable"]
    assert message.startswith("no other study shares nothing with this one: import one to measure transfer")
    assert "its-half (shares 3 clips' audio" in message
    assert set(lead["left_out_sources"]) == {"its-half"}


# --- the agreement page ------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


def test_the_agreement_page_shows_computing_then_leads_with_trained_elsewhere(scored, admin_client, capsys):
    study = Dataset.objects.get(name="study")
    url = f"/metrics/datasets/{study.pk}/agreement/"
    assert dashboards.dashboard_part_compute(part="agreement", object_id=study.pk) == "done"

    # the table is there, CALIBRATED's two parts are not: the lead says a worker is computing it
    page = admin_client.get(url).content.decode()
    assert 'id="transfer-headline"' in page and 'id="transfer-computing"' in page
    status = admin_client.get(f"/metrics/dashboards/agreement/{study.pk}/refresh/").json()
    assert status["busy"] and status["refresh"]

    # the browser's request: the workers compute every stale part (eager Celery in tests)
    assert admin_client.post(f"/metrics/dashboards/agreement/{study.pk}/refresh/").json() == {"fresh": True}
    page = admin_client.get(url).content.decode()
    assert 'id="transfer-computing"' not in page
    lead = transfer.transfer_summary(dataset=study)["headline"]
    elsewhere = lead["trained_elsewhere"]
    headline_html = page[page.index('id="transfer-headline"') : page.index('id="agreement-table"')]
    assert page.index('id="transfer-headline"') < page.index('id="agreement-table"')  # it leads the page
    assert "CALIBRATED, trained elsewhere" in headline_html and "fitted on clean, shared-text" in headline_html
    assert f'<span class="value">{elsewhere["total"]:.1f}</span>' in headline_html
    low, high = elsewhere["interval"]
    assert f"{low:.1f}–{high:.1f}" in headline_html
    assert "CALIBRATED, fitted on this study&#x27;s own judgements (in-study)" in headline_html
    calibration_summary = admin_client.get(url).context["parts"]["calibration"]["payload"]["summary"]
    assert f'<span class="value">{calibration_summary["row"]["total"]:.1f}</span>' in headline_html
    for name in ("half", "same-audio", "same-pair"):
        assert f"<strong>{name}</strong> left out: it shares" in headline_html

    # the downloads lead with the same two figures
    rows = list(csv.reader(io.StringIO(admin_client.get(f"{url}?format=csv").content.decode())))
    assert rows[2][0] == "CALIBRATED (trained elsewhere)" and float(rows[2][5]) == elsewhere["total"]
    assert rows[3][0] == "CALIBRATED (in-study: fitted on this study's own judgements)"
    assert float(rows[3][5]) == calibration_summary["row"]["total"]
    downloaded = admin_client.get(f"{url}?format=json").json()
    assert list(downloaded)[0] == "headline" and downloaded["headline"]["elsewhere"]["total"] == elsewhere["total"]


def test_the_trained_elsewhere_part_goes_stale_when_another_study_changes(scored, admin_client):
    study = Dataset.objects.get(name="study")
    assert admin_client.post(f"/metrics/dashboards/agreement/{study.pk}/refresh/").json() == {"fresh": True}
    states = dashboards.dashboard_part_states(kind="agreement", target=study)
    assert all(state.fresh for state in states.values())

    # a caption edited in a training source: the lead is stale, the study's own table is not
    caption = Caption.objects.filter(clip__dataset__name="clean").first()
    caption.text += " again"
    caption.save()
    states = dashboards.dashboard_part_states(kind="agreement", target=study)
    assert not states["transfer"].fresh and states["agreement"].fresh and states["calibration"].fresh
    page = admin_client.get(f"/metrics/datasets/{study.pk}/agreement/").content.decode()
    assert re.search(r"before this study.s or another study.s data changed", page)


@pytest.mark.parametrize(
    "model, stale_parts",
    [("calibration", {"calibration", "transfer"}), ("calibration_transfer", {"transfer"})],
)
def test_a_new_calibrated_model_version_is_not_shown_the_former_models_figures(
    scored, admin_client, monkeypatch, model, stale_parts
):
    from metrics_bridge.agreement import calibration_transfer

    study = Dataset.objects.get(name="study")
    assert admin_client.post(f"/metrics/dashboards/agreement/{study.pk}/refresh/").json() == {"fresh": True}
    assert all(state.fresh for state in dashboards.dashboard_part_states(kind="agreement", target=study).values())

    module = {"calibration": calibration, "calibration_transfer": calibration_transfer}[model]
    monkeypatch.setattr(module, "VERSION", module.VERSION + " (changed by the test)")
    states = dashboards.dashboard_part_states(kind="agreement", target=study)
    assert {part for part, state in states.items() if not state.fresh} == stale_parts
    assert all(states[part].payload is None for part in stale_parts)  # the former model's figure is not read
    # the refresh computes them again with the model as it is now
    assert admin_client.post(f"/metrics/dashboards/agreement/{study.pk}/refresh/").json() == {"fresh": True}
    states = dashboards.dashboard_part_states(kind="agreement", target=study)
    assert all(state.fresh for state in states.values())
    assert states["transfer"].payload is not None
