"""The offline rule-based X-ACE factor extractor on small captions with known graphs."""

import pytest

from metrics_bridge.scoring.xace.extractor import RuleExtractor
from metrics_bridge.scoring.xace.graph import AND, BEFORE


@pytest.fixture(scope="module")
def extractor():
    return RuleExtractor()


def test_two_events_with_sources_and_simultaneous_relation(extractor):
    graph = extractor.extract("A dog barks while a man speaks")
    assert graph.to_json() == {
        "node": {"barks": {"source": ["dog"], "attr": []}, "speaks": {"source": ["man"], "attr": []}},
        "relationship": {"barks|&|speaks": "and"},
    }


def test_followed_by_gives_before_and_keeps_attributes(extractor):
    graph = extractor.extract("A man speaks, followed by a dog barking loudly in the distance")
    assert graph.events["barking"] == {"source": ["dog"], "attr": ["loudly", "in the distance"]}
    assert graph.adjacent == [("speaks", "barking", BEFORE)]


def test_leading_after_clause_orders_events(extractor):
    graph = extractor.extract("After a bell rings, a man speaks")
    assert graph.relations == [("rings", "speaks", BEFORE)]


def test_sound_noun_with_adjective(extractor):
    graph = extractor.extract("A loud explosion and people screaming")
    assert graph.events["explosion"] == {"source": [], "attr": ["loud"]}
    assert graph.events["screaming"]["source"] == ["people"]
    assert graph.adjacent == [("explosion", "screaming", AND)]


def test_paper_table_10_example(extractor):
    graph = extractor.extract("A machine makes stitching sounds while people are talking in the background")
    assert graph.to_json()["node"] == {
        "stitching": {"source": ["machine"], "attr": []},
        "talking": {"source": ["people"], "attr": ["in the background"]},
    }


def test_coordinated_verbs_share_the_subject_and_chain_rule_applies(extractor):
    graph = extractor.extract("A woman talks and laughs, then a car horn honks")
    assert graph.events["laughs"]["source"] == ["woman"]
    assert graph.events["honks"]["source"] == ["car horn"]
    assert set(graph.relations) == {("talks", "laughs", AND), ("laughs", "honks", BEFORE), ("talks", "honks", BEFORE)}


def test_referring_noun_does_not_become_a_new_event(extractor):
    graph = extractor.extract("A child is laughing. The laughter is high-pitched and loud.")
    assert list(graph.events) == ["laughing"]
    assert graph.events["laughing"]["attr"] == ["high-pitched", "loud"]


def test_caption_without_sound_words_gives_an_empty_graph(extractor):
    assert extractor.extract("It is what it is.").events == {}


def test_irregular_passive_participle_is_an_event_with_its_subject_as_source(extractor):
    graph = extractor.extract("A metal object is being struck against another metal object")
    assert graph.events == {"struck": {"source": ["metal object"], "attr": ["against another metal object"]}}


def test_infinitive_takes_the_subject_of_its_clause(extractor):
    graph = extractor.extract("Someone is using a saw to cut a piece of wood")
    assert list(graph.events) == ["cut"]
    assert graph.events["cut"]["source"] == ["someone"]


def test_action_verb_after_its_subject_and_partitive_source(extractor):
    assert extractor.extract("Heavy rain falls loudly onto a roof").events["falls"] == {
        "source": ["rain"],
        "attr": ["heavy", "loudly", "onto a roof"],
    }
    assert extractor.extract("A piece of metal is being dropped").events["dropped"]["source"] == ["metal"]


def test_manner_phrase_gives_its_adjectives_and_negated_sounds_are_left_out(extractor):
    graph = extractor.extract("A woman speaks in a calm and steady voice. There is no background noise.")
    assert graph.to_json()["node"] == {"speaks": {"source": ["woman"], "attr": ["calm", "steady"]}}


def test_time_is_not_a_sound_source(extractor):
    graph = extractor.extract("An engine is running and gets louder as time goes on")
    assert list(graph.events) == ["running"]
