"""Offline X-ACE factor extractor: caption -> audio graph with a lexicon and rules (no model download).

Pipeline: normalise and split sentences -> tag words (packaged lexicon + lemminflect's part-of-speech
tables) -> settle noun/verb ambiguities from context and agreement -> chunk noun phrases -> read
events off the chunks (sound verbs with their subject as source; sound nouns; "the sound of X";
"X makes a Y sound") with attributes from adverbs, adjectives, prepositional phrases and objects ->
temporal relation between adjacent events from the connectives between them.

Version 2 (rules-extractor-2) adds, from failure cases on Clotho-Eval captions and the LLM graphs:
irregular passives ("is being struck / rung / ground"); action verbs that make sound (hit, roll, fall,
drop, pull, ...) in the lexicon; infinitives ("uses a saw to cut wood") with the clause's subject as
source; partitive subjects ("a piece of metal" -> metal); "a creaky and squeaky floor" as one phrase;
"in a calm, steady voice" -> calm, steady; negated sounds ("no background noise") and "as time goes
on" left out.
"""

from __future__ import annotations

from functools import lru_cache

from .event_reading import EventReader
from .graph import AFTER, AND, BEFORE, AudioGraph
from .text import lemma
from .word_lists import (
    MUSIC_WORDS,
)


class RuleExtractor(EventReader):
    """Caption -> AudioGraph with rules only; deterministic and fast (about 5k captions/s).

    Steps by module: tagging.py (sentences, word tags) -> chunking.py (noun phrases) ->
    event_reading.py, verb_events.py, noun_events.py (event mentions) -> here (the graph and the relations
    between adjacent events).
    """

    name = "rules-extractor-2"

    def extract(self, caption: str) -> AudioGraph:
        return _cached_extract(self, caption)

    # -- relations --------------------------------------------------------------------------
    def relation_between(self, words: list[str]) -> str:
        lex = self.lex
        if any(w in lex["relation_before"] for w in words):
            return BEFORE
        if any(w in lex["relation_after"] for w in words):
            return AFTER
        return AND

    def build_graph(self, caption: str) -> AudioGraph:
        # "as time goes on", "time passes": time is not a sound source
        mentions = [m for m in self.extract_mentions(caption) if m.sources != ["time"]]
        graph = AudioGraph()
        flat = [w for sentence in self.sentences(caption) for w in (*sentence, ".")]
        order: list[tuple[str, int]] = []
        verb_mentions = [m for m in mentions if not m.from_noun]
        for mention in mentions:
            if mention.from_noun:
                referent = self._referent(mention, verb_mentions)
                if referent is not None:
                    referent.attributes.extend(a for a in mention.attributes if a not in referent.attributes)
                    if referent.name in graph.events:
                        graph.add_event(referent.name, (), mention.attributes)
                    continue
            elif (
                lemma(mention.name.split()[0]) == "play"
                and mention.sources
                and mention.sources[-1].split()[-1] in MUSIC_WORDS
            ):
                mention.name, mention.sources = mention.sources[-1], []  # "music plays": the music is the event
            name = graph.add_event(mention.name, mention.sources, mention.attributes)
            if name not in [n for n, _ in order]:
                order.append((name, mention.position))
        adjacent = []
        for (first, first_position), (second, second_position) in zip(order, order[1:], strict=False):
            between = flat[first_position + 1 : second_position]
            relation = self.relation_between(between)
            if relation == AND:
                # "After a bell rings, a man speaks": the clause before holds the connective
                start = max((i for i in range(first_position) if flat[i] in {".", ","}), default=-1) + 1
                lead = flat[start:first_position]
                if "after" in lead:
                    relation = BEFORE
                elif "before" in lead:
                    relation = AFTER
            adjacent.append((first, second, relation))
        graph.set_adjacent_relations(adjacent)
        return graph


@lru_cache(maxsize=20000)
def _cached_extract(extractor: RuleExtractor, caption: str) -> AudioGraph:
    return extractor.build_graph(caption)
