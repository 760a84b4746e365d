"""X-ACE audio graphs: the relation chain rule (paper Eq. 1-2), JSON forms and merging."""

import pytest

from metrics_bridge.scoring.xace.graph import (
    AFTER,
    AND,
    BEFORE,
    UNKNOWN,
    AudioGraph,
    chain_relation,
    infer_chain,
    merge_graphs,
)


@pytest.mark.parametrize(
    ("current", "previous", "expected"),
    [
        (BEFORE, BEFORE, BEFORE),  # equal relations propagate
        (AFTER, AFTER, AFTER),
        (AND, AND, AND),
        (AND, BEFORE, BEFORE),  # `and` with another relation yields the other
        (BEFORE, AND, BEFORE),
        (AFTER, AND, AFTER),
        (BEFORE, AFTER, UNKNOWN),  # anything else is unknown
        (AFTER, BEFORE, UNKNOWN),
        (BEFORE, UNKNOWN, UNKNOWN),
        (AND, UNKNOWN, UNKNOWN),
    ],
)
def test_chain_relation_follows_equation_2(current, previous, expected):
    assert chain_relation(current, previous) == expected


def test_infer_chain_derives_every_pair_and_drops_unknown():
    inferred = infer_chain(["a", "b", "c", "d"], [BEFORE, AND, AFTER])
    assert set(inferred) == {
        ("a", "b", BEFORE),
        ("a", "c", BEFORE),  # before then and -> before
        ("b", "c", AND),
        ("b", "d", AFTER),  # and then after -> after
        ("c", "d", AFTER),
        # a-d: before then after -> unknown, left out
    }


def test_graph_relations_are_canonical_after_becomes_swapped_before():
    graph = AudioGraph()
    for event in ("speaking", "barking"):
        graph.add_event(event)
    graph.set_adjacent_relations([("speaking", "barking", AFTER)])
    assert graph.relations == [("barking", "speaking", BEFORE)]


def test_from_json_resolves_last_word_keys_of_llm_graphs():
    graph = AudioGraph.from_json(
        {
            "node": {"sonic boom": {"source": [], "attr": []}, "laughs": {"source": ["child"], "attr": None}},
            "relationship": {"boom|&|laughsthe": "before"},
        }
    )
    assert graph.adjacent == [("sonic boom", "laughs", BEFORE)]
    assert graph.events["laughs"] == {"source": ["child"], "attr": []}


def test_annotation_json_has_no_relation_information():
    graph = AudioGraph.from_json({"talking": {"source": ["man"], "attr": ["Loud", "Casual"]}})
    assert list(graph.events) == ["talking"]
    assert graph.has_relation_information is False


def test_events_with_the_same_lemma_merge_with_their_children():
    first, second = AudioGraph(), AudioGraph()
    first.add_event("barking", ["dog"], ["loud"])
    second.add_event("barks", ["dogs", "puppy"], ["in the distance"])
    merged = merge_graphs([first, second])
    assert merged.events == {"barking": {"source": ["dog", "puppy"], "attr": ["loud", "in the distance"]}}
