"""X-ACE factor extraction with an LLM (the paper's Table 10 prompt) and the rule-based relation reasoner.

The LLM returns {event: {"source": [...] | None, "attr": [...] | None}}; the relation between adjacent
events (in caption order) comes from the connectives between their mentions, as in the paper's
relation reasoner, and the chain rule infers the rest.
"""

from __future__ import annotations

import json
import re

from ..llm_client import ChatClient, LLMError, endpoint_unavailable_reason
from .extractor import RuleExtractor
from .graph import AudioGraph

TABLE_10_TEMPLATE = (
    "Please help me to extract 3 type of nodes in the audio caption: sound event (sound events be described by caption), "  # noqa: E501
    "source (who generates the sound event), attribute (attribute of sound event). "
    'Example1: caption = "A man speaking as monkeys scream and dogs bark followed by birds cawing in the distance and a loud '  # noqa: E501
    'explosion". You need to act as an audio caption extractor, to extract dict of which keys are sound events, value are '  # noqa: E501
    "attribute list toward sounds and source (if no, list should be replaced by None). The return demo is "
    '{"speaking":{"source":["man"],"attr":None}, "scream":{"source":["monkeys"],"attr":None},"bark":{"source":["dog"],'
    '"attr":None},"cawing":{"source":["birds"],"attr":["in the distance"]}, "explosion": {"source":None,"attr":["loud"]}}. '  # noqa: E501
    'You should pay attention on the sound event (not sound source),e.g. "speaking","bark","cawing","explosion" should be '  # noqa: E501
    "copied from the original caption. I'll show you the rest of the caption below, you give me a json return in the "
    "format.You do this work in json format!!! Not show me codes.\n"
    'Now I will give you caption: "{caption}"'
)


def parse_graph_answer(text: str) -> dict[str, dict[str, list[str]]]:
    """The event dict of an LLM answer; tolerates code fences, None/null, single quotes and chatter."""
    cleaned = re.sub(r"```(?:json)?", "", text).strip()
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start < 0 or end <= start:
        raise LLMError(f"X-ACE extractor: no JSON object in the answer: {text[:200]!r}")
    body = cleaned[start : end + 1]
    body = re.sub(r"\bNone\b", "null", body)
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        try:
            data = json.loads(body.replace("'", '"'))
        except json.JSONDecodeError as error:
            raise LLMError(f"X-ACE extractor: answer is not valid JSON ({error}): {body[:200]!r}") from error
    if not isinstance(data, dict):
        raise LLMError(f"X-ACE extractor: expected a JSON object of events, got {type(data).__name__}")
    events = {}
    for event, node in data.items():
        node = node if isinstance(node, dict) else {}
        events[str(event).strip()] = {
            "source": [str(s) for s in (node.get("source") or []) if str(s).strip()],
            "attr": [str(a) for a in (node.get("attr") or []) if str(a).strip()],
        }
    return events


class LLMExtractor:
    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.name = f"llm-extractor-table10+{client.model}"
        self.rules = RuleExtractor()

    @staticmethod
    def unavailable_reason_for(settings: dict | None) -> str | None:
        return endpoint_unavailable_reason(settings, "XACE (LLM extractor)")

    def extract(self, caption: str) -> AudioGraph:
        response = self.client.complete(TABLE_10_TEMPLATE.replace("{caption}", caption.replace('"', "'")))
        graph = AudioGraph()
        for event, node in parse_graph_answer(response.text).items():
            graph.add_event(event, node["source"], node["attr"])
        graph.set_adjacent_relations(self.adjacent_relations(caption, list(graph.events)))
        return graph

    def adjacent_relations(self, caption: str, events: list[str]) -> list[tuple[str, str, str]]:
        """Relation reasoner: order events by their first mention, read the connectives in between."""
        words = [w for sentence in self.rules.sentences(caption) for w in (*sentence, ".")]
        positions = []
        for event in events:
            head = event.lower().split()[-1] if event.split() else ""
            position = next((i for i, w in enumerate(words) if w == head or w.startswith(head[:5])), None)
            if position is not None:
                positions.append((position, event))
        positions.sort()
        return [
            (first, second, self.rules.relation_between(words[p + 1 : q]))
            for (p, first), (q, second) in zip(positions, positions[1:], strict=False)
        ]
