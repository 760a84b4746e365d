"""How close the offline X-ACE extractor comes to the LLM-extracted graphs of xace_machine_caption_graphs.json.

Node matching: lemma-normalised exact match (lowercase, articles dropped, hyphens as spaces, each word
lemmatised with lemminflect: "Barking" == "barks", "the dogs" == "dog").
- event: the event name
- source / attribute: the (event, child) pair, both normalised (a child only counts under the right event);
  the "loose" rows compare the children alone, as a multiset per caption
- relation: adjacent relations (event a, event b, before|after|and) with `after` written as `before` swapped
  and `and` unordered; the gold keys name events by their last word and are resolved to the gold events.
Micro-averaged precision / recall / F1 over all captions.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/xace_extractor_bench.py [--shared ../shared] [--show N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from metrics_bridge.scoring.xace.extractor import RuleExtractor  # noqa: E402
from metrics_bridge.scoring.xace.graph import AND, AudioGraph, canonical_relation  # noqa: E402
from metrics_bridge.scoring.xace.text import normalize_phrase  # noqa: E402


def node_sets(graph: AudioGraph) -> dict[str, Counter]:
    events = Counter(normalize_phrase(e) for e in graph.events)
    sources = Counter((normalize_phrase(e), normalize_phrase(s)) for e, s in graph.sources())
    attributes = Counter((normalize_phrase(e), normalize_phrase(a)) for e, a in graph.attributes())
    relations = Counter()
    for first, second, relation in graph.adjacent:
        a, b, r = canonical_relation(normalize_phrase(first), normalize_phrase(second), relation)
        if r == AND:
            a, b = sorted((a, b))
        relations[(a, b, r)] += 1
    return {
        "event": events,
        "source": sources,
        "attribute": attributes,
        "relation": relations,
        "source (loose)": Counter(s for _, s in sources.elements()),
        "attribute (loose)": Counter(a for _, a in attributes.elements()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parent.parent.parent / "shared"))
    parser.add_argument("--show", type=int, default=0, help="print the first N captions whose events differ")
    args = parser.parse_args()
    items = json.loads((Path(args.shared) / "datasets" / "xace_machine_caption_graphs.json").read_text())
    extractor = RuleExtractor()
    totals = {
        name: Counter() for name in ["event", "source", "attribute", "relation", "source (loose)", "attribute (loose)"]
    }
    shown = 0
    started = time.perf_counter()
    for item in items:
        gold = node_sets(AudioGraph.from_json(item))
        predicted_graph = extractor.extract(item["caption"])
        predicted = node_sets(predicted_graph)
        for name in totals:
            overlap = sum((gold[name] & predicted[name]).values())
            totals[name]["tp"] += overlap
            totals[name]["predicted"] += sum(predicted[name].values())
            totals[name]["gold"] += sum(gold[name].values())
        if shown < args.show and gold["event"] != predicted["event"]:
            shown += 1
            print(item["caption"])
            print("  gold:", json.dumps(item["node"]), json.dumps(item["relationship"]))
            print(
                "  ours:",
                json.dumps(predicted_graph.to_json()["node"]),
                json.dumps(predicted_graph.to_json()["relationship"]),
            )
    elapsed = time.perf_counter() - started
    print(f"{len(items)} captions, extractor {extractor.name}, {elapsed:.2f} s")
    print(f"{'factor':<20}{'P':>8}{'R':>8}{'F1':>8}{'gold':>8}{'ours':>8}")
    for name, counts in totals.items():
        precision = counts["tp"] / counts["predicted"] if counts["predicted"] else 0.0
        recall = counts["tp"] / counts["gold"] if counts["gold"] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        print(f"{name:<20}{precision:>8.3f}{recall:>8.3f}{f1:>8.3f}{counts['gold']:>8}{counts['predicted']:>8}")


if __name__ == "__main__":
    main()
