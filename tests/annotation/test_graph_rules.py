"""Relation rules of annotation graphs: the chain rule (as X-ACE's reasoner composes), implied relations,
contradictions stated directly or through implied relations."""

import pytest

from common.graph_rules import KINDS, compose, relations_analyse
from metrics_bridge.scoring.xace.graph import UNKNOWN, chain_relation

XACE_NAME = {"before": "before", "after": "after", "simultaneous": "and"}


@pytest.mark.parametrize("first", KINDS)
@pytest.mark.parametrize("second", KINDS)
def test_composition_is_the_xace_chain_rule(first, second):
    # X-ACE Eq. 1: R(i, k) = G(R(k-1, k), R(i, k-1)); here A first B, B second C -> A ? C.
    expected = chain_relation(XACE_NAME[second], XACE_NAME[first])
    got = compose(first, second)
    assert (XACE_NAME[got] if got else UNKNOWN) == expected


def test_implied_relations_follow_chains_through_simultaneous_events():
    report = relations_analyse(
        [("dog", "car", "before"), ("car", "rain", "simultaneous"), ("rain", "bell", "before")],
        names={"dog": "'dog'"},
    )
    triples = [(r.first, r.second, r.kind) for r in report.implied]
    assert triples == [
        ("dog", "car", "before"),
        ("car", "rain", "simultaneous"),
        ("dog", "rain", "before"),
        ("rain", "bell", "before"),
        ("car", "bell", "before"),
        ("dog", "bell", "before"),
    ]
    assert [r.via is not None for r in report.implied] == [False, False, True, False, True, True]
    assert not report.contradictions


def test_before_then_after_implies_nothing():
    report = relations_analyse([("a", "b", "before"), ("c", "b", "before")])
    assert {(r.first, r.second) for r in report.implied} == {("a", "b"), ("c", "b")}


@pytest.mark.parametrize(
    ("relations", "index", "message"),
    [
        ([("a", "b", "before"), ("b", "a", "before")], 1, "b before a contradicts a before b"),
        ([("a", "b", "before"), ("a", "b", "simultaneous")], 1, "a simultaneous b contradicts a before b"),
        ([("a", "b", "before"), ("b", "a", "after")], None, None),  # the same relation read backwards
        (
            [("a", "b", "before"), ("b", "c", "before"), ("c", "a", "before")],
            2,
            "c before a contradicts a before c (implied by a before b and b before c)",
        ),
        (
            [("a", "b", "simultaneous"), ("b", "c", "simultaneous"), ("c", "a", "after")],
            2,
            "c after a contradicts a simultaneous c (implied by a simultaneous b and b simultaneous c)",
        ),
        ([("a", "a", "before")], 0, "a: an event cannot be related to itself"),
    ],
)
def test_contradictions_direct_or_implied_are_reported_at_the_relation_that_brings_them(relations, index, message):
    report = relations_analyse(relations)
    if index is None:
        assert report.contradictions == []
    else:
        assert report.contradictions == [(index, message)]
        assert len({(r.first, r.second) for r in report.implied}) == len(report.implied)


def test_a_refused_relation_leaves_the_others_and_what_they_imply():
    report = relations_analyse([("a", "b", "before"), ("b", "a", "before"), ("b", "c", "before")])
    assert [index for index, _ in report.contradictions] == [1]
    assert ("a", "c", "before") in [(r.first, r.second, r.kind) for r in report.implied]
