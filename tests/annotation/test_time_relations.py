"""Relations against time spans on the server, on the hand-written cases the browser test runs in the page too
(tests/annotation/data/time_relation_cases.json), plus what the cases cannot show (messages, symmetry)."""

import json
from pathlib import Path

import pytest

from common.graph_rules import INVERSE, relations_analyse
from common.time_relations import merged_spans, span_relation, time_conflict, time_proposals

CASES = json.loads((Path(__file__).parent / "data" / "time_relation_cases.json").read_text())


def _ids(section: str) -> list[str]:
    return [case["name"] for case in CASES[section]]


@pytest.mark.parametrize("case", CASES["chain_rule"], ids=_ids("chain_rule"))
def test_chain_rule_cases(case):
    report = relations_analyse([tuple(relation) for relation in case["relations"]])
    assert [[r.first, r.second, r.kind] for r in report.implied] == case["implied"]
    assert [index for index, _message in report.contradictions] == case["contradictions"]


@pytest.mark.parametrize("case", CASES["span_relation"], ids=_ids("span_relation"))
def test_span_relation_cases(case):
    assert span_relation(case["first"], case["second"]) == case["relation"]
    # Read the other way round, the spans say the inverse.
    backwards = span_relation(case["second"], case["first"])
    assert backwards == (None if case["relation"] is None else INVERSE[case["relation"]])


@pytest.mark.parametrize("case", CASES["conflicts"], ids=_ids("conflicts"))
def test_conflict_cases(case):
    conflict = time_conflict(case["kind"], case["first"], case["second"])
    assert (None if conflict is None else {"reason": conflict.reason, "implied": conflict.implied}) == case["conflict"]
    # The same statement read backwards (B after A for A before B) conflicts exactly as much.
    mirrored = time_conflict(INVERSE[case["kind"]], case["second"], case["first"])
    assert (mirrored is None) == (conflict is None)


@pytest.mark.parametrize("case", CASES["proposals"], ids=_ids("proposals"))
def test_proposal_cases(case):
    events = [(key, spans) for key, spans in case["events"]]
    proposals = time_proposals(events, [tuple(relation) for relation in case["relations"]])
    assert [list(proposal) for proposal in proposals] == case["proposals"]
    # Taking every proposal never contradicts the relations nor, through the chain rule, any pair's spans.
    report = relations_analyse([*map(tuple, case["relations"]), *proposals])
    spans = dict(events)
    stated_count = len(case["relations"])
    assert all(index < stated_count for index, _message in report.contradictions)
    for relation in report.implied:
        if (relation.first, relation.second) not in {tuple(r[:2]) for r in case["relations"]}:
            assert time_conflict(relation.kind, spans[relation.first], spans[relation.second]) is None


def test_the_message_names_both_events_their_spans_and_what_the_spans_say():
    conflict = time_conflict("before", [[0.3, 19.89]], [[8.49, 11.5]], names=("'chirping'", "'driving by'"))
    assert conflict.message == (
        "'chirping' (0.30–19.89 s) before 'driving by' (8.49–11.50 s): the spans say simultaneous"
    )


def test_spans_are_joined_sorted_and_kept_apart_when_they_do_not_touch():
    assert merged_spans([[4, 5], [0, 1], [0.5, 2], [2, 3]]) == [(0.0, 3.0), (4.0, 5.0)]
