"""Choose the review's event-matching weights and thresholds on half "a" of the labelled event-name pairs and
measure precision and recall on half "b" (the figures in docs/annotation.md, "Review by what the sound is").

    HF_HUB_OFFLINE=1 .venv/bin/python bench/event_matching_eval.py [tests/metrics_bridge/data/event_name_pairs.json]

Prints the chosen weights and thresholds (to be set in metrics_bridge/agreement/event_similarity.py), the
figures per half, and the meaning of the pairs a reviewer's audit named.
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from metrics_bridge.agreement.event_similarity import pair_scores  # noqa: E402
from metrics_bridge.agreement.event_similarity_tuning import pair_events, pair_similarity, tuning_report  # noqa: E402
from metrics_bridge.scoring import sbert  # noqa: E402

AUDIT = [
    ({"name": "barking", "source": "dog"}, {"name": "barks", "source": "dog"}),
    ({"name": "passing", "source": "car"}, {"name": "driving by", "source": "vehicle"}),
    ({"name": "buzzing", "source": "insects"}, {"name": "chirring", "source": "cicadas"}),
    ({"name": "rustling", "source": ""}, {"name": "brushing", "source": ""}),
    ({"name": "snap", "source": ""}, {"name": "tap", "source": ""}),
    ({"name": "barking", "source": "dog"}, {"name": "slam", "source": "door"}),
    ({"name": "blowing", "source": "wind"}, {"name": "chirping", "source": "birds"}),
]


def encoder(texts: list[str]) -> np.ndarray:
    model = sbert.load_model()
    return np.asarray(model.encode(list(texts), normalize_embeddings=True, batch_size=256), dtype=np.float32)


def main(path: str) -> None:
    pairs = json.loads(Path(path).read_text())["pairs"]
    report = tuning_report(pairs, encoder=encoder)
    print(json.dumps(report, indent=1))
    audit = [{"first": first, "second": second, "same": True, "half": "a"} for first, second in AUDIT]
    similarity = pair_similarity(audit, encoder=encoder)
    for pair in audit:
        apart_events = pair_events(pair)
        for event in apart_events:
            event.spans = []
        [[apart]] = pair_scores(apart_events[:1], apart_events[1:], similarity)
        together_events = pair_events(pair)
        for event in together_events:
            event.spans = [(0.0, 5.0)]
        [[together]] = pair_scores(together_events[:1], together_events[1:], similarity)
        print(pair["first"], pair["second"], "apart:", apart.to_json(), "together:", together.to_json())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/metrics_bridge/data/event_name_pairs.json")
