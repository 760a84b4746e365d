"""metric_sensitivity: factor perturbations (X-ACE Table 3), Kruskal-Wallis table, command, stored report, page."""

import json
import math

import pytest
from django.core.management import call_command
from scipy.stats import kruskal

from annotation.tag_library import TAGS_FILE
from corpus.models import Dataset
from metrics_bridge.models import SensitivityReport
from metrics_bridge.scoring.base import ScoringContext, ScoringRequest
from metrics_bridge.scoring.classic import BleuScorer
from metrics_bridge.scoring.xace.tags import load_tag_library
from metrics_bridge.sensitivity.analysis import neg_log10_p
from metrics_bridge.sensitivity.perturbations import Perturber
from ratings.services.pairwise_import import pairwise_judgements_import

POOL = [
    "a woman speaks while a boy cries",
    "a bird is chirping loudly",
    "a dog barks before a car passes by",
    "a man is talking and a door closes",
    "a cat meows while a baby cries",
    "a dog is barking and a man is talking",
    "a car engine is running and a bird is chirping",
    "people are talking quietly in the distance",
]


@pytest.fixture(scope="module")
def perturber() -> Perturber:
    return Perturber(POOL, attribute_tags=load_tag_library(TAGS_FILE), seed=0)


def test_table_3_perturbations_change_one_factor(perturber):
    source = perturber.perturb("source", "A woman speaks while a boy cries.")
    assert (
        source.text == "A boy speaks while a woman cries."
        and source.changed == "woman <-> boy"
        or source.changed == "boy <-> woman"
    )

    attribute = perturber.perturb("attribute", "A bird is chirping loudly.")
    changed_from, changed_to = attribute.changed.split(" -> ")
    assert changed_from == "loudly" and changed_to.endswith("ly") and changed_to != "loudly"
    assert attribute.text == f"A bird is chirping {changed_to}."

    relation = perturber.perturb("relation", "A dog barks before a car passes by.")
    assert relation.text == "A dog barks after a car passes by."
    assert (
        perturber.perturb("relation", "A man is talking and a door closes").text
        == "A man is talking before a door closes"
    )

    event = perturber.perturb("event", "a dog is barking", ["a dog is barking"])
    old, new = event.changed.split(" -> ")
    assert old == "barking" and new.endswith("ing") and new != "barking" and event.text == f"a dog is {new}"


def test_a_caption_without_the_factor_is_not_perturbed_and_results_do_not_depend_on_order(perturber):
    assert perturber.perturb("relation", "a bird is chirping") is None  # one event: no relation
    assert perturber.perturb("attribute", "a bird is chirping") is None  # no attribute from the tag library
    again = Perturber(list(reversed(POOL)), attribute_tags=load_tag_library(TAGS_FILE), seed=0)
    for kind in ("event", "source", "attribute", "relation"):
        for caption in POOL:
            assert perturber.perturb(kind, caption) == again.perturb(kind, caption)
    other_seed = Perturber(POOL, attribute_tags=load_tag_library(TAGS_FILE), seed=9)
    assert any(perturber.perturb("event", c) != other_seed.perturb("event", c) for c in POOL)


def test_neg_log10_p_is_scipys_kruskal_wallis():
    clean, perturbed = [0.9, 0.8, 0.85, 0.7, 0.95], [0.4, 0.5, 0.65, 0.3, 0.8]
    value, p = neg_log10_p(clean, perturbed)
    assert p == pytest.approx(kruskal(clean, perturbed).pvalue) and value == pytest.approx(-math.log10(p))
    assert neg_log10_p([0.5, 0.5], [0.5, 0.5]) == (0.0, 1.0)  # identical scores: no difference


@pytest.fixture
def small_dataset(db, shared_dir) -> Dataset:
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:12]
    pairwise_judgements_import(data=items, dataset_name="sensitivity-sample", source_name="clotho_eval.json")
    return Dataset.objects.get(name="sensitivity-sample")


@pytest.mark.django_db
def test_the_command_reports_every_metric_and_perturbation_and_matches_a_direct_computation(small_dataset, capsys):
    call_command(
        "metric_sensitivity", "--dataset", "sensitivity-sample", "--metrics", "BLEU_4,ROUGE_L,XACE", "--format", "json"
    )
    result = json.loads(capsys.readouterr().out)

    # every metric of each requested scorer, as metric runs compute them
    assert result["metrics"] == [
        "BLEU_1",
        "BLEU_2",
        "BLEU_3",
        "BLEU_4",
        "ROUGE_L",
        "XACE",
        "XACE_E",
        "XACE_S",
        "XACE_A",
        "XACE_R",
    ]
    assert result["captions"] == 60  # 12 clips x 5 references
    assert set(result["table"]) == {"event", "source", "attribute", "relation"}
    for kind, summary in result["perturbations"].items():
        assert 0 < summary["applied"] <= 60 and summary["captions"] == 60
        assert all(cell["n"] == summary["applied"] for cell in result["table"][kind].values())
    report = SensitivityReport.objects.get(pk=result["report"])
    assert report.status == "done" and report.result["table"] == result["table"]

    # BLEU_4 on the relation perturbation, recomputed here from the rows and the perturbations.
    from metrics_bridge.agreement.protocol import padded, references_without
    from metrics_bridge.selectors.scoring_inputs import attribute_tag_library, dataset_clip_rows

    rows = [r for r in dataset_clip_rows(dataset=small_dataset) if r.references]
    perturber = Perturber([t for r in rows for t in r.references], attribute_tags=attribute_tag_library(), seed=0)
    clean, perturbed = [], []
    for r in rows:
        for caption in r.references:
            change = perturber.perturb("relation", caption, r.references)
            if change:
                references = tuple(padded(references_without(r.references, caption)))
                clean.append(ScoringRequest(caption, references))
                perturbed.append(ScoringRequest(change.text, references))
    scorer = BleuScorer()
    clean_scores = [x.value for x in scorer.score_batch(clean, ScoringContext())["BLEU_4"]]
    perturbed_scores = [x.value for x in scorer.score_batch(perturbed, ScoringContext())["BLEU_4"]]
    expected, _ = neg_log10_p(clean_scores, perturbed_scores)
    assert result["table"]["relation"]["BLEU_4"]["neg_log10_p"] == pytest.approx(expected, abs=1e-9)
    assert result["perturbations"]["relation"]["applied"] == len(clean)


@pytest.mark.django_db
def test_unknown_metrics_and_datasets_are_clear_errors(small_dataset):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown metric"):
        call_command("metric_sensitivity", "--dataset", "sensitivity-sample", "--metrics", "BLEU_9")
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("metric_sensitivity", "--dataset", "nope")
    assert not SensitivityReport.objects.exists()


@pytest.mark.django_db
def test_only_admins_see_and_start_sensitivity_reports(
    client, make_user, small_dataset, django_capture_on_commit_callbacks
):
    url = f"/metrics/datasets/{small_dataset.pk}/sensitivity/"
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(make_user("rater1", "rater"))
    assert client.get(url).status_code == 403
    assert client.post(url, {"metrics": ["ROUGE_L"]}).status_code == 403
    assert not SensitivityReport.objects.exists()

    client.force_login(make_user("boss", staff=True))
    assert "No finished sensitivity report" in client.get(url).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"metrics": ["ROUGE_L"], "seed": "3"})
    assert response.status_code == 302
    report = SensitivityReport.objects.get()
    assert report.status == "done" and report.seed == 3 and report.requested_metrics == ["ROUGE_L"]  # eager Celery
    page = client.get(url).content.decode()
    assert 'id="sensitivity-table"' in page and "ROUGE_L" in page and "temporal relation" in page
    assert client.post(url, {"metrics": ["NOPE"]}).status_code == 302
    assert SensitivityReport.objects.count() == 1  # refused, nothing queued
