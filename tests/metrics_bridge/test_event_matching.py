"""Review by what the sound is: events of different annotators matched by meaning weighed with time overlap,
merged into gold proposals with counts, relations carried, the clip's agreement counted on the matching shown,
and the factors with the lowest agreement pointed at."""

import numpy as np
import pytest

from metrics_bridge.agreement.annotation_agreement import matched_events
from metrics_bridge.agreement.event_matching import _majority_spans, events_of
from metrics_bridge.agreement.event_similarity import time_overlap
from metrics_bridge.scoring import sbert

# The park recording near a road as three annotators described it (names differ, meaning and seconds agree).
PARK = {
    "ann-a": {
        "chirping": {"source": ["birds"], "attr": ["high-pitched"], "spans": [[0.3, 19.89]]},
        "driving by": {
            "source": ["car"],
            "attr": ["loud"],
            "spans": [[3.4, 5.1], [8.49, 11.5], [18.8, 20]],
            "relations": {"honking": "simultaneous"},
        },
        "honking": {"source": ["horn"], "attr": ["twice"], "spans": [[9, 9.5]]},
        "footsteps": {"source": ["person"], "attr": [], "spans": [[2, 4]]},
        "barking": {"source": ["dog"], "attr": ["loud"], "spans": [[15, 16]]},
    },
    "ann-b": {
        "birds singing": {"source": ["birds"], "attr": ["continuous"], "spans": [[0, 20]]},
        "passing": {
            "source": ["car"],
            "attr": ["loud"],
            "spans": [[3.5, 5], [8.3, 11.8]],
            "relations": {"beeping": "simultaneous"},
        },
        "beeping": {"source": ["car horn"], "attr": ["short"], "spans": [[9.1, 9.6]]},
        "walking": {"source": ["man"], "attr": [], "spans": [[2.2, 3.8]]},
    },
    "ann-c": {
        "tweeting": {"source": ["bird"], "attr": [], "spans": [[0.5, 19.5]]},
        "whooshing": {"source": ["car"], "attr": ["fast", "loud"], "spans": [[8.6, 11.2], [18.7, 19.9]]},
        "door slam": {"source": ["door"], "attr": ["loud"], "spans": [[15.2, 15.5]]},
    },
}


@pytest.fixture(scope="module")
def minilm():
    model = sbert.load_model()
    return lambda texts: np.asarray(model.encode(list(texts), normalize_embeddings=True), dtype=np.float32)


def test_events_named_differently_match_by_sources_and_time_with_the_score_shown(minilm):
    result = matched_events(PARK, encoder=minilm)
    groups = {tuple(sorted(label for labels in g["events"].values() for label in labels)): g for g in result["groups"]}
    cars = groups[("driving by", "passing", "whooshing")]
    assert cars["events"] == {"ann-a": ["driving by"], "ann-b": ["passing"], "ann-c": ["whooshing"]}
    assert 0.5 <= cars["similarity"] < 1
    link = next(link for link in cars["links"] if link["second"] == ["ann-b", "passing"])
    assert link["parts"]["source"] == 1.0 and link["parts"]["time"] > 0.6  # the same source over the same seconds
    assert link["parts"]["name"] < 0.6  # the names alone would not have matched them
    assert ("birds singing", "chirping", "tweeting") in groups
    assert ("beeping", "honking") in groups
    # "person footsteps" / "man walking" (meaning 0.58) stay two rows: below what the same seconds need
    # A dog and a door over the same second are different sounds: not matched.
    assert ("barking",) in groups and ("door slam",) in groups
    # Groups given by every annotator come first.
    assert len(result["groups"][0]["events"]) == 3


def test_the_merged_proposal_counts_who_gave_what_and_keeps_the_majority_seconds(minilm):
    result = matched_events(PARK, encoder=minilm)
    cars = next(g for g in result["groups"] if "passing" in g["events"].get("ann-b", []))
    merged = cars["merged"]
    assert merged["annotators"] == 3
    assert merged["sources"] == [{"text": "car", "count": 3}]
    assert merged["attributes"] == [{"text": "loud", "count": 3}, {"text": "fast", "count": 1}]
    # Three passes: the first marked by a and b, the second by all, the third by a and c.
    assert [[round(a, 1), round(b, 1)] for a, b in merged["spans"]] == [[3.5, 5.0], [8.5, 11.5], [18.8, 19.9]]


def test_relations_between_groups_are_carried_with_their_counts(minilm):
    result = matched_events(PARK, encoder=minilm)
    index = {
        label: number
        for number, group in enumerate(result["groups"])
        for labels in group["events"].values()
        for label in labels
    }
    assert result["relations"] == [
        {
            "first": min(index["passing"], index["beeping"]),
            "second": max(index["passing"], index["beeping"]),
            "kind": "simultaneous",
            "count": 2,
            "annotators": 2,
        }
    ]


def test_the_disagreement_view_starts_with_the_lowest_factor_and_says_what_differs(minilm):
    result = matched_events(PARK, encoder=minilm)
    views = result["disagreements"]
    values = [view["agreement"] for view in views if view["agreement"] is not None]
    assert values == sorted(values)
    assert views[0]["agreement"] == min(
        result["factors"][f] for f in result["factors"] if result["factors"][f] is not None
    )
    events = next(view for view in views if view["factor"] == "event")
    assert "'barking': only ann-a (1 of 3)" in events["items"]
    attributes = next(view for view in views if view["factor"] == "attribute")
    assert any(item.startswith("'driving by': fast (1/3)") for item in attributes["items"])


def test_time_overlap_is_intersection_over_union_of_the_occurrences():
    assert time_overlap([[0, 2], [4, 6]], [[1, 5]]) == pytest.approx(2 / 6)  # together 1-2 and 4-5, either 0-6
    assert time_overlap([[0, 1]], [[2, 3]]) == 0.0
    assert time_overlap([], [[2, 3]]) is None


def test_majority_seconds_of_three_annotators():
    events = events_of("x", {"a": {"spans": [[0, 4]]}, "b": {"spans": [[1, 5]]}, "c": {"spans": [[3, 9]]}, "d": {}})
    assert _majority_spans(events) == [(1.0, 5.0)]  # at least two of the three that have spans


def test_the_clip_agreement_counts_the_matching_the_page_shows(minilm):
    # Three annotators name the same three sounds differently; every event is matched one to one, so the event
    # agreement is 1 (X-ACE's soft F gave 0.55 for such a clip). ann-c misses the door: 2 x 2 / (3 + 2).
    scene = {
        "ann-a": {
            "barking": {"source": ["dog"], "spans": [[1, 2]], "relations": {"slam": "before"}},
            "passing": {"source": ["car"], "spans": [[3, 8]]},
            "slam": {"source": ["door"], "spans": [[9, 9.4]]},
        },
        "ann-b": {
            "barks": {"source": ["dog"], "spans": [[1.1, 2]], "relations": {"slamming": "before"}},
            "driving by": {"source": ["vehicle"], "spans": [[3.2, 8]]},
            "slamming": {"source": ["door"], "spans": [[9, 9.5]]},
        },
        "ann-c": {
            "bark": {"source": ["dog"], "spans": [[1, 2]]},
            "passes": {"source": ["car"], "spans": [[3, 7.8]]},
        },
    }
    result = matched_events(scene, encoder=minilm)
    assert sorted(len(group["events"]) for group in result["groups"]) == [2, 3, 3]
    factors = {tuple(pair["annotators"]): pair["factors"] for pair in result["pairs"]}
    assert factors[("ann-a", "ann-b")]["event"] == 1.0
    assert factors[("ann-a", "ann-c")]["event"] == pytest.approx(4 / 5)
    assert factors[("ann-a", "ann-b")]["relation"] == 1.0  # both: the dog before the door
    assert factors[("ann-a", "ann-c")]["relation"] == 0.0  # ann-c related nothing
    assert result["factors"]["event"] == pytest.approx((1 + 0.8 + 0.8) / 3)
    # sources: dog and door agree; car / vehicle agree when their cosine reaches X-ACE's 0.6
    car, vehicle = minilm(["car", "vehicle"])
    expected = 1.0 if float(car @ vehicle) >= 0.6 else 2 / 3
    assert factors[("ann-a", "ann-b")]["source"] == pytest.approx(expected)
