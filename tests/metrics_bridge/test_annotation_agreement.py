"""Inter-annotator agreement per factor: X-ACE's matching between each pair of annotators, averaged over pairs
then clips, factors absent from both graphs left out; the command and the page give the same numbers."""

import json

import numpy as np
import pytest
from django.core.management import call_command

from metrics_bridge.agreement.annotation_agreement import (
    ExactPhraseSimilarity,
    annotation_agreement,
    annotation_graph,
    matched_events,
)
from metrics_bridge.scoring.xace.matching import match_graphs


def one_hot_encoder(texts: list[str]) -> np.ndarray:
    """Phrases as one-hot vectors: S is 1 for the same text (or lemma) and 0 otherwise, so values are exact."""
    vocabulary = {text: index for index, text in enumerate(sorted(set(texts)))}
    vectors = np.zeros((len(texts), len(vocabulary)), dtype=np.float32)
    for row, text in enumerate(texts):
        vectors[row, vocabulary[text]] = 1.0
    return vectors


DOG_RAIN = {"barking": {"source": ["dog"], "attr": ["loud"]}, "raining": {"source": ["rain"], "attr": ["steady"]}}
DOG = {"barking": {"source": ["dog"], "attr": ["loud"]}}


def test_identical_annotations_agree_exactly_and_absent_relations_are_not_applicable():
    report = annotation_agreement({"c1": {"a": DOG_RAIN, "b": DOG_RAIN}}, encoder=one_hot_encoder)
    assert report.summary() == {
        "clips": 1,
        "annotators": 2,
        "pairs": 1,
        "factors": {"event": 1.0, "source": 1.0, "attribute": 1.0, "relation": None},
    }


def test_a_missing_event_halves_recall_and_the_pair_value_is_xaces_f():
    report = annotation_agreement({"c1": {"a": DOG_RAIN, "b": DOG}}, encoder=one_hot_encoder)
    assert report.factors["event"] == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert report.factors["source"] == pytest.approx(2 / 3) and report.factors["attribute"] == pytest.approx(2 / 3)
    # The pair value is X-ACE's F between the two graphs, either way round.
    a, b = annotation_graph(DOG_RAIN), annotation_graph(DOG)
    similarity = ExactPhraseSimilarity(dict(zip(*_vocabulary([a, b]), strict=True)))
    assert match_graphs(a, b, similarity).factors["event"].f1 == pytest.approx(report.factors["event"])
    assert match_graphs(b, a, similarity).factors["event"].f1 == pytest.approx(report.factors["event"])


def _vocabulary(graphs):
    from metrics_bridge.scoring.xace.matching import graph_phrases

    phrases = sorted(set().union(*(graph_phrases(graph) for graph in graphs)))
    return phrases, one_hot_encoder(phrases)


def test_a_factor_absent_from_both_graphs_is_left_out_never_counted_as_one():
    no_attributes = {"barking": {"source": ["dog"], "attr": []}}
    other = {"barking": {"source": ["dog"], "attr": ["loud"]}}
    report = annotation_agreement(
        {"c1": {"a": no_attributes, "b": no_attributes}, "c2": {"a": no_attributes, "b": other}},
        encoder=one_hot_encoder,
    )
    assert report.per_clip["c1"]["attribute"] is None
    assert report.per_clip["c2"]["attribute"] == 0.0
    assert report.factors["attribute"] == 0.0  # c1 does not pull it up to 0.5


def test_relations_compare_after_the_chain_rule_and_one_sided_relations_count_as_zero():
    events = {name: {"source": [], "attr": []} for name in ("a", "b", "c")}
    chain = {
        **events,
        "a": {"source": [], "attr": [], "relations": {"b": "before"}},
        "b": {"source": [], "attr": [], "relations": {"c": "before"}},
    }
    implied = {
        **events,
        "a": {"source": [], "attr": [], "relations": {"b": "before", "c": "before"}},
        "c": {"source": [], "attr": [], "relations": {"b": "after"}},
    }
    report = annotation_agreement(
        {"c1": {"x": chain, "y": implied}, "c2": {"x": chain, "y": events}}, encoder=one_hot_encoder
    )
    assert report.per_clip["c1"]["relation"] == 1.0  # a<b, b<c, a<c both ways
    assert report.per_clip["c2"]["relation"] == 0.0
    assert report.factors["relation"] == 0.5


def test_pairs_are_averaged_per_clip_before_clips_and_per_annotator():
    rain = {"raining": {"source": ["rain"], "attr": ["steady"]}}
    submissions = {
        "c1": {"a": DOG, "b": DOG, "c": rain},  # pairs: 1, 0, 0 -> clip 1/3
        "c2": {"a": DOG, "b": DOG},  # pair: 1 -> clip 1
    }
    report = annotation_agreement(submissions, encoder=one_hot_encoder)
    assert (report.clips, report.annotators, report.pairs) == (2, 3, 4)
    assert report.factors["event"] == pytest.approx((1 / 3 + 1) / 2)  # not the pair mean 2/4
    assert report.per_annotator["c"]["factors"]["event"] == 0.0
    assert report.per_annotator["a"]["factors"]["event"] == pytest.approx((0.5 + 1) / 2)
    assert report.per_annotator["a"]["pairs"] == 3
    assert annotation_agreement({"c1": {"a": DOG}}, encoder=one_hot_encoder).summary()["clips"] == 0


def test_matched_events_group_mutual_best_matches_across_annotators():
    result = matched_events(
        {"a": DOG_RAIN, "b": DOG, "c": {"barking": {"source": ["dog"], "attr": []}}}, encoder=one_hot_encoder
    )
    assert result["annotators"] == ["a", "b", "c"]
    assert result["groups"][0]["events"] == {"a": ["barking"], "b": ["barking"], "c": ["barking"]}
    assert result["groups"][1]["events"] == {"a": ["raining"]}
    assert len(result["pairs"]) == 3


@pytest.mark.django_db
def test_the_command_and_the_page_agree(make_user, client, tmp_path):
    for name in ("ann1", "ann2"):
        make_user(name, "annotator")
    reviewer = make_user("rev", "reviewer")
    data = {"Yaaa.wav": DOG_RAIN, "Ybbb.wav": {"hum": {"source": ["fridge"], "attr": ["low"]}}}
    second = {"Yaaa.wav": DOG, "Ybbb.wav": {"humming": {"source": ["refrigerator"], "attr": ["quiet"]}}}
    for name, content in (("ann1", data), ("ann2", second)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(content))
        call_command("import_audiocaps_f", str(path), "--dataset", "agr", "--annotator", name, "--status", "submitted")

    from io import StringIO

    out = StringIO()
    call_command("annotation_agreement", "--dataset", "agr", "--format", "json", stdout=out)
    printed = json.loads(out.getvalue())
    assert set(printed) == {"clips", "annotators", "pairs", "factors"}
    assert (printed["clips"], printed["annotators"], printed["pairs"]) == (2, 2, 2)
    assert set(printed["factors"]) == {"event", "source", "attribute", "relation"}
    assert printed["factors"]["relation"] is None
    assert 0 < printed["factors"]["event"] < 1

    from corpus.models import Dataset

    client.force_login(reviewer)
    page = client.get(
        "/metrics/annotation-agreement/", {"dataset": Dataset.objects.get(name="agr").pk, "format": "json"}
    ).json()
    assert {key: page[key] for key in printed} == printed
    html = client.get(
        "/metrics/annotation-agreement/", {"dataset": Dataset.objects.get(name="agr").pk}
    ).content.decode()
    assert f'data-value="{printed["factors"]["event"]}"' in html
    table = StringIO()
    call_command("annotation_agreement", "--dataset", "agr", "--per-annotator", stdout=table)
    assert "ann1" in table.getvalue() and "n/a" in table.getvalue()
