"""Bring your own data through the pages, end to end, with a real Celery worker: a staff user imports a Clotho-Eval
slice and a BRACE file, follows each import on its upload's page, attaches audio to the imported clips, sees a bad
file refused by name with nothing written, computes cheap metrics from the metrics page, and opens every
dashboard each dataset's page links to; at 1280 and 390 px.

The Clotho-Eval file is cut to its first 20 clips (written by the test) to keep the test fast: the import path is
the same for 250.
"""

import json
from collections import Counter

import pytest
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

from annotation.models import ExpertAnnotation
from corpus.models import Clip, Dataset, DatasetUpload
from metrics_bridge.models import MetricRun, MetricScore
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.runs import current_broker
from ratings.models import CaptionPair, PairwiseVote
from tests.annotation.table_counts import all_table_counts
from tests.annotation.test_import_pages import wav_bytes, zip_of
from tests.metrics_bridge.test_metric_runs_worker import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

CLOTHO_SLICE_CLIPS = 20
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
FENSE_NOT_PAIRS = ("raw_name", "audio_id", "references")
# Records the upload page's state each time it changes (the live region is replaced in place, not reloaded).
STATE_RECORDER = """() => {
  window.uploadStates = [];
  const record = () => {
    const strong = document.querySelector('.upload-status strong');
    const text = strong ? strong.innerText.trim() : '';
    if (text && window.uploadStates[window.uploadStates.length - 1] !== text) window.uploadStates.push(text);
  };
  record();
  new MutationObserver(record).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def fense_expectations(items: list[dict]) -> tuple[int, int]:
    """Pairs and votes the file holds, read independently of the importer."""
    pairs = votes = 0
    for item in items:
        for key, entry in item.items():
            if key in FENSE_NOT_PAIRS or entry is None:
                continue
            pairs += 1
            votes += len(entry[-1])
    return pairs, votes


def counts_without_uploads() -> dict[str, int]:
    """Row counts of every table but the upload records, which keep a refused upload's problems by design."""
    return {label: count for label, count in all_table_counts().items() if label != "corpus.DatasetUpload"}


def summary_rows(page) -> dict[str, list[str]]:
    rows = {}
    for row in page.locator("table.import-summary tbody tr").all_inner_texts():
        cells = row.split("\t")
        rows[cells[0].strip()] = [cell.strip() for cell in cells[1:]]
    return rows


def fits_the_phone(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def submit_and_follow(page, artifacts, shot: str) -> list[str]:
    """Submit the import form, then follow the upload's page until the worker has finished; the states it showed."""
    with page.expect_navigation():
        page.click("form.import-form button[type='submit']")
    assert "/datasets/uploads/" in page.url, page.url
    page.evaluate(STATE_RECORDER)
    page.wait_for_function(
        "['Imported', 'Failed'].includes(document.querySelector('.upload-status strong').innerText.trim())",
        timeout=180_000,
    )
    page.screenshot(path=str(artifacts / f"{shot}_desktop.png"), full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(artifacts / f"{shot}_390.png"), full_page=True)
    assert fits_the_phone(page), shot
    page.set_viewport_size(DESKTOP)
    return page.evaluate("window.uploadStates")


def import_file(page, live_server, artifacts, *, path, dataset: str, shot: str) -> list[str]:
    page.goto(f"{live_server.url}/ratings/staff/import/judgements/")
    page.fill("input[name='dataset']", dataset)
    page.set_input_files("input[name='file']", str(path))
    return submit_and_follow(page, artifacts, shot)


def compute_metrics(page, live_server, dataset: Dataset, metrics: list[str], worker) -> MetricRun:
    page.goto(f"{live_server.url}/metrics/")
    page.select_option("select[name='dataset']", str(dataset.pk))
    for metric in metrics:
        page.check(f"input[name='metrics'][value='{metric}']")
    with page.expect_navigation():
        page.click("button.primary")
    run = MetricRun.objects.filter(dataset=dataset).latest("created_at")
    assert page.url.endswith(f"/metrics/runs/{run.pk}/")
    wait_for(
        lambda: MetricRun.objects.get(pk=run.pk).status == MetricRun.Status.DONE,
        timeout=300,
        worker=worker,
        what=f"metric run {run.pk} on {dataset.name}",
    )
    page.wait_for_function("document.querySelector('#run-status').dataset.status === 'done'", timeout=60_000)
    return run


def rouge_l_reference(candidate: str, references: list[str]) -> float:
    """ROUGE_L as pycocoevalcap computes it, with its own PTB tokenizer: the reference implementation."""
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize({0: [{"caption": text} for text in references]})
    res = tokenizer.tokenize({0: [{"caption": candidate}]})
    _, scores = Rouge().compute_score(gts, res)
    return float(scores[0])


def open_every_dashboard(page, live_server, artifacts, dataset: Dataset, server_errors: list) -> list[str]:
    page.goto(f"{live_server.url}/datasets/{dataset.pk}/")
    links = page.eval_on_selector_all("a[data-dashboard]", "links => links.map(link => link.getAttribute('href'))")
    opened = []
    for index, href in enumerate(links):
        response = page.goto(f"{live_server.url}{href}")
        assert response.status == 200, (href, response.status)
        # the dashboard's own heading and body rendered (its figures, or its "computing" state)
        assert page.locator("main h1, h1").first.inner_text().strip(), href
        body = page.inner_text("main") if page.locator("main").count() else page.inner_text("body")
        assert len(body) > 40 and "Server error" not in body and "Traceback" not in body, (href, body[:300])
        page.screenshot(path=str(artifacts / f"byod_{dataset.name}_dashboard_{index}.png"), full_page=True)
        opened.append(href)
    assert not server_errors, server_errors
    return opened


def test_a_staff_user_brings_clotho_eval_and_brace_through_the_pages(
    page_for, live_server, make_user, embedded_celery, media_root, artifacts, shared_dir, tmp_path
):
    datasets_dir = shared_dir / "datasets"
    items = json.loads((datasets_dir / "clotho_eval.json").read_text())[:CLOTHO_SLICE_CLIPS]
    clotho_slice = tmp_path / "clotho_eval_slice.json"
    clotho_slice.write_text(json.dumps(items))
    expected_pairs, expected_votes = fense_expectations(items)
    brace_path = datasets_dir / "brace_format" / "brace_main_sample.json"
    brace_items = json.loads(brace_path.read_text())
    expected_brace_pairs = sum(1 for item in brace_items for key in item if key.startswith(("Human-", "Machine-")))

    # Given a real worker (the embedded broker, as ./scripts/run starts it) sharing the media folder
    worker = embedded_celery(MEDIA_ROOT=str(media_root))
    wait_for(lambda: live_workers(broker=current_broker()), timeout=180, worker=worker, what="worker heartbeat")
    page = page_for(make_user("organiser", staff=True))
    page.set_viewport_size(DESKTOP)
    server_errors: list[str] = []
    page.on("response", lambda response: response.status >= 500 and server_errors.append(response.url))

    # When the Clotho-Eval slice is uploaded on the judgement page, the upload's page shows the wait or the work,
    # then the result, without being reloaded
    page.goto(f"{live_server.url}/")
    page.click("text=import a judgement file")
    page.wait_for_selector("h1:text('Import a judgement file')")
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(artifacts / "byod_judgement_form_390.png"), full_page=True)
    assert fits_the_phone(page)
    page.set_viewport_size(DESKTOP)
    states = import_file(page, live_server, artifacts, path=clotho_slice, dataset="clotho-eval", shot="byod_clotho")
    assert states[0] in ("Waiting for a worker", "Importing") and states[-1] == "Imported", states
    assert int(page.get_attribute("#live", "data-live-updates") or 0) >= 1  # updated in place by live.js
    assert page.inner_text("h1") == "Import a judgement file into clotho-eval"
    rows = summary_rows(page)
    assert rows["pairs"][0] == str(expected_pairs) and rows["votes"][0] == str(expected_votes), rows
    clotho = Dataset.objects.get(name="clotho-eval")
    assert CaptionPair.objects.filter(clip__dataset=clotho).count() == expected_pairs
    assert PairwiseVote.objects.filter(pair__clip__dataset=clotho).count() == expected_votes
    assert Clip.objects.filter(dataset=clotho).count() == CLOTHO_SLICE_CLIPS

    # And the BRACE file the same way
    states = import_file(page, live_server, artifacts, path=brace_path, dataset="brace-main", shot="byod_brace")
    assert states[-1] == "Imported", states
    assert summary_rows(page)["pairs"][0] == str(expected_brace_pairs)
    brace = Dataset.objects.get(name="brace-main")
    assert brace.judgement_layout == Dataset.JudgementLayout.BRACE_MAIN
    assert CaptionPair.objects.filter(clip__dataset=brace).count() == expected_brace_pairs

    # When a file with a bad item is uploaded, its page names the item and nothing is written
    broken_items = json.loads(json.dumps(items[:3]))
    broken_items[2]["HM"] = ["only one caption"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(broken_items))
    before = counts_without_uploads()
    states = import_file(page, live_server, artifacts, path=broken, dataset="never-made", shot="byod_broken")
    assert states[-1] == "Failed", states
    problems = page.locator(".import-problems li").all_inner_texts()
    assert problems and all(problem.startswith("broken.json") for problem in problems), problems
    assert any("HM" in problem for problem in problems), problems
    assert page.locator("text=Nothing was imported").count() == 1
    assert counts_without_uploads() == before
    assert not Dataset.objects.filter(name="never-made").exists()
    assert DatasetUpload.objects.get(dataset_name="never-made").status == DatasetUpload.Status.FAILED

    # When audio for two of the imported clips is uploaded from the dataset's page (a zip, plus a stray file)
    first, second = items[0]["raw_name"], items[1]["raw_name"]
    archive = tmp_path / "clotho_audio.zip"
    archive.write_bytes(
        zip_of(
            {
                f"audio/{first}": wav_bytes(seconds=0.5),
                f"audio/{second}": wav_bytes(seconds=0.25),
                "audio/not-a-clip.wav": wav_bytes(seconds=0.1),
            }
        )
    )
    page.goto(f"{live_server.url}/datasets/{clotho.pk}/")
    page.click("text=Audio for its clips")
    page.set_input_files("input[name='audio']", str(archive))
    states = submit_and_follow(page, artifacts, "byod_clip_audio")
    assert states[-1] == "Imported", states
    assert summary_rows(page)["clip audio"][0] == "2"
    assert "no clip matches not-a-clip.wav" in page.inner_text(".import-notes")
    durations = dict(
        Clip.objects.filter(dataset=clotho).exclude(audio="").values_list("external_id", "duration_seconds")
    )
    assert durations == {first: pytest.approx(0.5), second: pytest.approx(0.25)}

    # When cheap metrics are computed from the metrics page for both datasets
    runs = [compute_metrics(page, live_server, dataset, ["BLEU_4", "ROUGE_L"], worker) for dataset in (clotho, brace)]
    page.screenshot(path=str(artifacts / "byod_metric_run_done.png"), full_page=True)

    # Then the scores are those of the reference implementation
    for run in runs:
        scores = MetricScore.objects.filter(run=run, metric="ROUGE_L").select_related("caption", "reference_set")
        assert scores.count() > 0
        for score in scores.order_by("pk")[:5]:
            reference = rouge_l_reference(score.caption.text, score.reference_set.texts)
            assert score.value == pytest.approx(reference, abs=1e-6), score

    # And every dashboard each dataset's page links to opens: its figures or its "computing" state, never a 5xx
    for dataset in (clotho, brace):
        page.goto(f"{live_server.url}/datasets/{dataset.pk}/")
        run = MetricRun.objects.filter(dataset=dataset).latest("created_at")
        assert page.locator(f"a[href='/metrics/runs/{run.pk}/']").count() == 1  # the page links its runs
        page.screenshot(path=str(artifacts / f"byod_dataset_{dataset.name}_desktop.png"), full_page=True)
        page.set_viewport_size(PHONE)
        page.screenshot(path=str(artifacts / f"byod_dataset_{dataset.name}_390.png"), full_page=True)
        assert fits_the_phone(page), dataset.name
        page.set_viewport_size(DESKTOP)
        opened = open_every_dashboard(page, live_server, artifacts, dataset, server_errors)
        kinds = Counter(href.split("?")[0].rstrip("/").split("/")[-1] for href in opened)
        assert {"agreement", "leaderboard", "sensitivity", "annotation-agreement", "benchmark"} <= set(kinds), opened

    # And the worker computes the metric agreement and the leaderboard: each page shows its table once ready
    for dataset in (clotho, brace):
        for path, table in (("agreement", "#agreement-table"), ("leaderboard", "#leaderboard-table")):
            page.goto(f"{live_server.url}/metrics/datasets/{dataset.pk}/{path}/")
            page.wait_for_selector(table, timeout=300_000)
            assert "ROUGE_L" in page.inner_text(table), (dataset.name, path)
            page.screenshot(path=str(artifacts / f"byod_{dataset.name}_{path}_computed.png"), full_page=True)
    assert not server_errors, server_errors
    worker.stop()


def test_references_and_audiocaps_f_through_their_pages_at_phone_width(
    page_for, live_server, make_user, media_root, artifacts, shared_dir, tmp_path
):
    """The two other data file pages (tasks run eagerly here: the worker's part is covered above)."""
    references = tmp_path / "refs.csv"
    references.write_text(
        "file_name,caption_1,caption_2\nrain.wav,rain falls,rain on a roof\ndoor.wav,a door slams,it bangs\n"
    )
    annotations = json.loads((shared_dir / "datasets" / "audiocaps_f_annotations.json").read_text())
    keys = list(annotations)[:2]
    acf_slice = tmp_path / "acf_slice.json"
    acf_slice.write_text(json.dumps({key: annotations[key] for key in keys}))
    page = page_for(make_user("organiser", staff=True))
    page.set_viewport_size(PHONE)

    # A references CSV into a new dataset
    page.goto(f"{live_server.url}/datasets/import/references/")
    page.fill("input[name='dataset']", "field-set")
    page.set_input_files("input[name='file']", str(references))
    assert fits_the_phone(page)
    with page.expect_navigation():
        page.click("form.import-form button[type='submit']")
    page.wait_for_selector(".upload-status strong:text('Imported')")
    assert page.inner_text("h1") == "Import reference captions into field-set"
    assert summary_rows(page)["reference captions"][0] == "4"
    assert fits_the_phone(page)
    page.screenshot(path=str(artifacts / "byod_references_390.png"), full_page=True)

    # AudioCaps-F annotations, as gold, into a new dataset
    page.goto(f"{live_server.url}/datasets/import/audiocaps-f/")
    page.fill("input[name='dataset']", "acf-set")
    page.set_input_files("input[name='file']", str(acf_slice))
    with page.expect_navigation():
        page.click("form.import-form button[type='submit']")
    page.wait_for_selector(".upload-status strong:text('Imported')")
    assert page.inner_text("h1") == "Import AudioCaps-F annotations into acf-set"
    gold = ExpertAnnotation.objects.filter(clip__dataset__name="acf-set", status=ExpertAnnotation.Status.GOLD)
    assert sorted(gold.values_list("clip__file_name", flat=True)) == sorted(keys)
    assert fits_the_phone(page)
    page.screenshot(path=str(artifacts / "byod_audiocaps_f_390.png"), full_page=True)
    page.click("text=Open the dataset's page")
    page.wait_for_selector("h1:text('Dataset acf-set')")
    assert page.locator("a:text('Agreement of annotators')").count() == 1
