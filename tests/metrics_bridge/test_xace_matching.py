"""Greedy graph matching of X-ACE on hand-made graphs with hand-made phrase vectors."""

import numpy as np
import pytest

from metrics_bridge.scoring.xace.graph import AND, BEFORE, AudioGraph
from metrics_bridge.scoring.xace.matching import PhraseSimilarity, f_measure, match_graphs


def unit(*values):
    vector = np.array(values, dtype=np.float64)
    return vector / np.linalg.norm(vector)


# phrase -> vector; cosines: bark/growl 0.5, man/woman 1.0 (same vector: only the gender rule separates them)
VECTORS = {
    "bark": unit(1, 0, 0, 0, 0),
    "growl": unit(1, np.sqrt(3), 0, 0, 0),
    "speak": unit(0, 0, 1, 0, 0),
    "dog": unit(0, 0, 0, 1, 0),
    "man": unit(0, 0, 0, 0, 1),
    "woman": unit(0, 0, 0, 0, 1),
    "loud": unit(1, 1, 1, 1, 1),
}


def graph(events, relations=()):
    result = AudioGraph()
    for name, sources, attributes in events:
        result.add_event(name, sources, attributes)
    result.set_adjacent_relations(list(relations))
    return result


@pytest.fixture
def similarity():
    # bare-word S (the hand-made vectors have no in-context phrases); context is tested below
    return PhraseSimilarity(VECTORS, context=False)


def test_identical_graphs_score_one(similarity):
    g = graph([("barking", ["dog"], ["loud"]), ("speaking", ["man"], [])], [("barking", "speaking", AND)])
    match = match_graphs(g, g, similarity)
    assert match.score == pytest.approx(1.0)
    assert all(f.f1 == pytest.approx(1.0) for f in match.factors.values())


def test_child_is_weighted_by_its_parent_match(similarity):
    candidate = graph([("growl", ["dog"], [])])
    reference = graph([("bark", ["dog"], [])])
    match = match_graphs(candidate, reference, similarity)
    assert match.factors["event"].precision == pytest.approx(0.5)
    # the source is the same word, but its parent only matches with 0.5
    assert match.factors["source"].precision == pytest.approx(0.5)
    assert match.factors["source"].recall == pytest.approx(0.5)


def test_opposite_genders_never_match(similarity):
    candidate = graph([("speak", ["woman"], [])])
    reference = graph([("speak", ["man"], [])])
    match = match_graphs(candidate, reference, similarity)
    assert match.factors["event"].f1 == pytest.approx(1.0)
    assert match.factors["source"].precision == 0.0
    assert match.factors["source"].to_json()["hallucinated"][0]["node"] == "woman"
    assert match.factors["source"].to_json()["missed"][0]["node"] == "man"


def test_relation_needs_the_same_relation_between_matched_events(similarity):
    reference = graph([("bark", [], []), ("speak", [], [])], [("bark", "speak", BEFORE)])
    same_order = graph([("speak", [], []), ("bark", [], [])], [("speak", "bark", "after")])
    swapped = graph([("bark", [], []), ("speak", [], [])], [("bark", "speak", "after")])
    assert match_graphs(same_order, reference, similarity).factors["relation"].f1 == pytest.approx(1.0)
    assert match_graphs(swapped, reference, similarity).factors["relation"].f1 == 0.0


def test_relation_probability_multiplies_both_event_matches(similarity):
    reference = graph([("bark", [], []), ("speak", [], [])], [("bark", "speak", AND)])
    candidate = graph([("growl", [], []), ("speak", [], [])], [("speak", "growl", AND)])
    relation = match_graphs(candidate, reference, similarity).factors["relation"]
    assert relation.precision == pytest.approx(0.5 * 1.0)


def test_a_factor_absent_from_both_graphs_is_not_applicable_and_left_out_of_the_average(similarity):
    candidate = graph([("growl", [], [])])
    reference = graph([("bark", [], ["loud"])])
    match = match_graphs(candidate, reference, similarity)
    for factor in ("source", "relation"):
        result = match.factors[factor]
        assert not result.included
        assert (result.precision, result.recall, result.f1) == (None, None, None)  # never 1.0
        assert result.to_json()["f1"] is None
    # events P=R=0.5; attributes: nothing predicted (P=0), missed (R=0)
    assert match.precision == pytest.approx((0.5 + 0.0) / 2)
    assert match.recall == pytest.approx((0.5 + 0.0) / 2)
    assert match.score == pytest.approx(f_measure(0.25, 0.25))


def test_the_divide_by_four_reading_counts_an_absent_factor_as_zero(similarity):
    candidate = graph([("growl", [], [])])
    reference = graph([("bark", [], ["loud"])])
    four = match_graphs(candidate, reference, similarity, macro="four")
    assert four.precision == pytest.approx((0.5 + 0.0) / 4)
    assert four.score == pytest.approx(f_measure(0.125, 0.125))
    with pytest.raises(ValueError, match="macro"):
        match_graphs(candidate, reference, similarity, macro="three")


def test_a_child_is_scored_under_its_parents_best_match_only(similarity):
    # candidate "growl" (dog) best matches "bark" (S 0.5, no source); "speak" (S 0) has the source "dog"
    candidate = graph([("growl", ["dog"], [])])
    reference = graph([("bark", [], []), ("speak", ["dog"], [])])
    match = match_graphs(candidate, reference, similarity)
    source = match.factors["source"]
    assert source.candidate_nodes[0].score == 0.0  # Eq. 4: P(dog | growl) under the best match "bark", which has none
    assert source.candidate_nodes[0].match_event == "bark"
    # the other way: "dog" of "speak" is scored under speak's best match in the candidate ("growl", S 0): 0
    assert source.reference_nodes[0].score == 0.0
    # with the source under the best-matching event, it counts: P = P(dog | growl) P(growl) = 1 * 0.5
    better = graph([("bark", ["dog"], []), ("speak", [], [])])
    assert match_graphs(candidate, better, similarity).factors["source"].precision == pytest.approx(0.5)


def test_stated_relations_are_closed_under_the_chain_rule():
    annotation = AudioGraph.from_json(
        {
            "node": {"bark": {"source": ["dog"]}, "speak": {"source": ["man"]}, "hiss": {}},
            "relations": [["bark", "speak", "before"], ["hiss", "speak", "simultaneous"], ["speak", "hiss", "unknown"]],
        }
    )
    assert annotation.has_relation_information
    assert set(annotation.relations) == {("bark", "speak", BEFORE), ("hiss", "speak", AND), ("bark", "hiss", BEFORE)}
    after = AudioGraph.from_json({"node": {"bark": {}, "speak": {}}, "relations": [["speak", "bark", "after"]]})
    assert after.relations == [("bark", "speak", BEFORE)]


def test_event_similarity_averages_the_bare_and_the_in_context_cosine():
    # "running" alone is the same lemma as "run" but the contexts differ: S stays 1 for the same event;
    # "hum" vs "whir": bare cosine 0.5, in context ("motor hum" / "fan whir") cosine 1.0 -> 0.75
    vectors = {
        "hum": unit(1, 0, 0),
        "whir": unit(1, np.sqrt(3), 0),
        "motor hum": unit(0, 0, 1),
        "fan whir": unit(0, 0, 1),
        "motor": unit(0, 1, 1),
        "fan": unit(0, 1, 1),
    }
    similarity = PhraseSimilarity(vectors)
    candidate, reference = graph([("hum", ["motor"], [])]), graph([("whir", ["fan"], [])])
    scores = similarity.event_matrix(candidate, reference, ["hum"], ["whir"])
    assert scores[0, 0] == pytest.approx((0.5 + 1.0) / 2)
    assert PhraseSimilarity(vectors, context=False).event_matrix(candidate, reference, ["hum"], ["whir"])[
        0, 0
    ] == pytest.approx(0.5)
    same = graph([("hum", ["fan"], [])])
    vectors["fan hum"] = unit(1, 1, 1)
    assert similarity.event_matrix(candidate, same, ["hum"], ["hum"])[0, 0] == 1.0


def test_antonym_tags_never_match():
    vectors = {"bark": unit(1, 0), "loud": unit(0, 1), "quiet": unit(0, 1)}
    similarity = PhraseSimilarity(vectors, antonyms=lambda a, b: {a, b} == {"loud", "quiet"}, context=False)
    match = match_graphs(graph([("bark", [], ["quiet"])]), graph([("bark", [], ["loud"])]), similarity)
    assert match.factors["attribute"].f1 == 0.0
