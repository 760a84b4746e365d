"""The FENSE pairwise protocol (protocols.md §1) on hand-made clips, and the Clotho-Eval reproduction."""

import json

import pytest

from metrics_bridge.agreement import protocol
from metrics_bridge.agreement.protocol import (
    JudgedPair,
    ProtocolClip,
    agreement_report,
    clips_from_fense_items,
    fense_agreement,
    scoring_plan,
)
from metrics_bridge.scoring.base import ScoreResult

REFS = ("r one", "r two", "r three", "r four", "r five")


def clip(*pairs, references=REFS, key="clip-1"):
    return ProtocolClip(clip_key=key, references=tuple(references), pairs=tuple(pairs))


def pair(split, a, b, votes=(1, 1, 1, 1), a_id=None, b_id=None):
    return JudgedPair(split=split, caption_a=a, caption_b=b, votes=tuple(votes), caption_a_id=a_id, caption_b_id=b_id)


def requests_of(plan, positions):
    return [plan.batches[b].requests[i] for b, i in positions]


def scores_for(plan, side_values):
    """Per-request scores giving planned pair k the scores side_values[k] = (a, b)."""
    scores = [[None] * len(batch.requests) for batch in plan.batches]
    for planned, (value_a, value_b) in zip(plan.pairs, side_values, strict=True):
        for positions, value in ((planned.side_a, value_a), (planned.side_b, value_b)):
            for b, i in positions:
                scores[b][i] = value
    return scores


class LengthScorer:
    """A fake non-corpus scorer: the candidate's word count; records the batches it was given."""

    metric_names = ("LENGTH",)
    version = "test"
    needs = frozenset({"references"})
    corpus_level = False
    protocol_kind = "ngram"

    def __init__(self):
        self.batches = []

    def unavailable_reason(self, context=None):
        return None

    def score_batch(self, requests, context):
        self.batches.append(list(requests))
        return {"LENGTH": [ScoreResult(float(len(r.candidate.split()))) for r in requests]}


def test_hc_scores_a_without_a_and_b_without_b():
    plan = scoring_plan([clip(pair("HC", "r two", "r four", a_id=12, b_id=14))], protocol_kind="ngram")
    planned = plan.pairs[0]
    (request_a,) = requests_of(plan, planned.side_a)
    (request_b,) = requests_of(plan, planned.side_b)
    assert request_a.candidate == "r two" and request_a.candidate_id == 12
    assert request_a.references == ("r one", "r three", "r four", "r five")
    assert request_b.candidate == "r four" and request_b.candidate_id == 14
    assert request_b.references == ("r one", "r two", "r three", "r five")
    assert request_a.clip_key == "clip-1"


@pytest.mark.parametrize("split", ["HI", "HM"])
def test_hi_and_hm_score_both_sides_against_the_references_without_a(split):
    plan = scoring_plan([clip(pair(split, "r three", "someone else's caption"))], protocol_kind="embedding")
    planned = plan.pairs[0]
    (request_a,) = requests_of(plan, planned.side_a)
    (request_b,) = requests_of(plan, planned.side_b)
    assert request_a.references == request_b.references == ("r one", "r two", "r four", "r five")
    assert request_b.candidate == "someone else's caption"


def test_short_lists_are_padded_by_repeating_from_the_start():
    assert protocol.padded(["x", "y", "z"]) == ["x", "y", "z", "x"]
    assert protocol.padded(["x", "y"]) == ["x", "y", "x", "y"]
    assert protocol.padded(["x"]) == ["x", "x", "x", "x"]
    assert protocol.padded(["v", "w", "x", "y", "z"]) == ["v", "w", "x", "y", "z"]
    plan = scoring_plan(
        [clip(pair("HC", "r one", "r two"), references=("r one", "r two", "r three"))], protocol_kind="ngram"
    )
    (request_a,) = requests_of(plan, plan.pairs[0].side_a)
    assert request_a.references == ("r two", "r three", "r two", "r three")


def test_a_repeated_reference_is_removed_with_all_its_copies_then_padded():
    # AudioCaps-Eval repeats captions in some reference lists
    references = ("a dog barks", "A dog  barks", "a cat meows", "rain falls", "wind blows")
    plan = scoring_plan([clip(pair("HM", "a dog barks", "machine text"), references=references)], protocol_kind="ngram")
    (request_a,) = requests_of(plan, plan.pairs[0].side_a)
    assert request_a.references == ("a cat meows", "rain falls", "wind blows", "a cat meows")


def test_mm_ngram_is_five_leave_one_out_passes_and_embedding_uses_all_references():
    mm = pair("MM", "machine a", "machine b")
    ngram = scoring_plan([clip(mm)], protocol_kind="ngram")
    passes = requests_of(ngram, ngram.pairs[0].side_a)
    assert [r.references for r in passes] == [REFS[:i] + REFS[i + 1 :] for i in range(5)]
    assert {r.candidate for r in passes} == {"machine a"}
    assert len(ngram.pairs[0].side_b) == 5
    embedding = scoring_plan([clip(mm)], protocol_kind="embedding")
    (request,) = requests_of(embedding, embedding.pairs[0].side_a)
    assert request.references == REFS


def test_the_four_fense_corpora_hold_one_side_each_with_every_pass_and_duplicates_kept():
    clips = [
        clip(
            pair("HC", "r one", "r two"),
            pair("HM", "r one", "m1"),
            pair("MM", "m1", "m2"),
            pair("MM", "m1", "m3"),
            key="c1",
        ),
        clip(pair("HI", "r three", "other clip's caption"), pair("MM", "m4", "m5"), key="c2"),
    ]
    plan = scoring_plan(clips, protocol_kind="ngram")
    assert [batch.label for batch in plan.batches] == ["HC+HI+HM:a", "HC+HI+HM:b", "MM:a", "MM:b"]
    side_a, side_b, mm_a, mm_b = ([r.candidate for r in batch.requests] for batch in plan.batches)
    assert side_a == ["r one", "r one", "r three"]  # HC, HM and HI sides a together, in clip order
    assert side_b == ["r two", "m1", "other clip's caption"]
    assert mm_a == ["m1"] * 10 + ["m4"] * 5  # m1 is side a of two pairs: both kept (CIDEr-D's df counts them)
    assert mm_b == ["m2"] * 5 + ["m3"] * 5 + ["m5"] * 5
    assert list(iter(plan)) == plan.batches
    single = scoring_plan(clips, protocol_kind="embedding", batching="single")
    assert [batch.label for batch in single.batches] == ["all"]
    assert len(single.batches[0].requests) == 2 * 6  # embedding protocol: one request per side of 6 pairs
    with pytest.raises(ValueError, match="batching"):
        scoring_plan(clips, protocol_kind="ngram", batching="split")


def test_authors_come_from_the_pair_and_reach_the_requests():
    items = [
        {
            "raw_name": "c.wav",
            "references": ["r1", "r2", "r3", "r4", "r5"],
            "HI": ["r1", "q2", "c_human_1", "0af_human_2", [1, 1, 1, 1]],
            "HM": ["r1", "m", "human_1", "fc_dbs_2", [1, 1, 1, 1]],
        }
    ]
    clips = clips_from_fense_items(items)
    assert [(p.author_a, p.author_b) for p in clips[0].pairs] == [("human", "human"), ("human", "fc_dbs_2")]
    plan = scoring_plan(clips, protocol_kind="embedding", batching="single")
    assert [r.author for r in plan.batches[0].requests] == ["human", "human", "human", "fc_dbs_2"]


def test_accuracy_excludes_zero_truth_and_counts_ties_as_wrong():
    clips = [
        clip(
            pair("HC", "r one", "r two", votes=(1, 1, 0, 0)),  # t=2, a scores higher: right
            pair("HC", "r three", "r four", votes=(-1, -1, 1, 0)),  # t=-1, a higher: wrong
            pair("HC", "r one", "r five", votes=(1, -1, 0, 0)),  # t=0: excluded
            pair("HC", "r two", "r three", votes=(1, 1, 1, 1)),  # d == 0: wrong
        )
    ]
    plan = scoring_plan(clips, protocol_kind="embedding")
    scores = scores_for(plan, [(0.9, 0.5), (0.7, 0.2), (0.3, 0.1), (0.5, 0.5)])
    report = agreement_report(plan, scores, metric="fake")
    hc = report.splits["HC"]
    assert (hc.correct, hc.counted, hc.ties_excluded) == (1, 3, 1)
    assert hc.accuracy == 33.3
    assert report.total.accuracy == 33.3
    assert report.as_dict() == {"HC": 33.3, "total": 33.3, "pairs": {"HC": 3}, "correct": {"HC": 1}}
    assert [d.correct for d in report.decisions] == [True, False, None, False]


def test_the_decision_is_taken_in_float32():
    plan = scoring_plan([clip(pair("HC", "r one", "r two", votes=(1, 1, 1, 1)))], protocol_kind="ngram")
    report = agreement_report(plan, [[0.3 + 1e-12], [0.3]])
    assert report.decisions[0].difference == 0.0  # float64 would say a > b
    assert report.splits["HC"].accuracy == 0.0


def test_leave_one_out_scores_are_averaged_per_side():
    plan = scoring_plan([clip(pair("MM", "m a", "m b", votes=(-1, -1, -1, 0)))], protocol_kind="ngram")
    scores = [[0.0] * 5, [0.0] * 5]
    for (batch, position), value in zip(plan.pairs[0].side_a, [0.1, 0.2, 0.3, 0.4, 0.5], strict=True):
        scores[batch][position] = value
    for batch, position in plan.pairs[0].side_b:
        scores[batch][position] = 0.31
    report = agreement_report(plan, scores)
    assert report.decisions[0].score_a == pytest.approx(0.3)
    assert report.decisions[0].correct is True  # mean a 0.30 < b 0.31 and people preferred b


def test_nan_scores_count_as_wrong_and_mismatched_scores_are_rejected():
    plan = scoring_plan([clip(pair("HC", "r one", "r two"))], protocol_kind="ngram")
    assert agreement_report(plan, [[float("nan")], [0.1]]).splits["HC"].correct == 0
    with pytest.raises(ValueError, match="got scores for 1 batches, the plan has 2"):
        agreement_report(plan, [[0.1]])
    with pytest.raises(ValueError, match="batch HC\\+HI\\+HM:a: 2 scores for 1 requests"):
        agreement_report(plan, [[0.1, 0.2], [0.3]])


def test_a_side_without_an_applicable_score_leaves_the_pair_out():
    plan = scoring_plan(
        [clip(pair("HC", "r one", "r two", votes=(1, 1, 1, 1)), pair("HC", "r three", "r four", votes=(1, 1, 1, 1)))],
        protocol_kind="embedding",
    )
    report = agreement_report(plan, [[None, 0.9], [0.5, 0.1]])
    hc = report.splits["HC"]
    assert (hc.correct, hc.counted, hc.not_applicable, hc.ties_excluded) == (1, 1, 1, 0)
    assert report.decisions[0].correct is None and report.decisions[0].difference is None


def test_missing_references_are_reported():
    plan = scoring_plan([clip(pair("HC", "not a reference", "r two"))], protocol_kind="ngram")
    assert plan.warnings == ["clip clip-1: HC caption a is not one of the references; kept all references"]
    with pytest.raises(ValueError, match="clip lonely: no references left for HC caption a"):
        scoring_plan([clip(pair("HC", "only", "r two"), references=("only",), key="lonely")], protocol_kind="ngram")
    with pytest.raises(ValueError, match="protocol_kind"):
        scoring_plan([], protocol_kind="bleu")


def test_fense_format_items_with_missing_and_null_entries_and_an_extra_field():
    items = [
        {
            "audio_id": "abc123",
            "references": ["r1", "r2", "r3", "r4", "r5"],
            "HC": ["r1", "r2", "human_1", "human_2", [1, 0, 1, -1]],
            "HM": ["r1", "m", "human_1", "sys", "extra", [1, 1, 1, 1]],
            "MM_1": ["m", "n", "sys1", "sys2", [-1, -1, 0, 0]],
            "MM_2": None,
            "MM_5": None,
        },
        {
            "raw_name": "x.wav",
            "references": ["q1", "q2", "q3", "q4", "q5"],
            "HI": ["q1", "r3", "q_h1", "abc_h3", [0, 0, 0, 0]],
        },
    ]
    clips = clips_from_fense_items(items)
    assert [c.clip_key for c in clips] == ["Yabc123.wav", "x.wav"]
    assert [(p.split, p.votes, p.caption_a_id, p.caption_b_id) for p in clips[0].pairs] == [
        ("HC", (1, 0, 1, -1), "human_1", "human_2"),
        ("HM", (1, 1, 1, 1), "human_1", "sys"),
        ("MM", (-1, -1, 0, 0), "sys1", "sys2"),
    ]
    assert clips[1].pairs[0].truth == 0
    plan = scoring_plan(clips, protocol_kind="ngram")
    assert [b.label for b in plan.batches] == ["HC+HI+HM:a", "HC+HI+HM:b", "MM:a", "MM:b"]


def test_fense_agreement_runs_a_scorer_over_every_batch():
    clips = [
        clip(
            pair("HC", "r one", "r two and more", votes=(-1, -1, -1, -1)), pair("MM", "m a b", "m", votes=(1, 1, 0, 0))
        )
    ]
    scorer = LengthScorer()
    reports = fense_agreement(clips, scorer)
    assert [len(batch) for batch in scorer.batches] == [1, 1, 5, 5]
    assert reports["LENGTH"].as_dict()["total"] == 100.0


# --- Clotho-Eval reproduction (pycocoevalcap 1.2 + all-MiniLM-L6-v2) -------------------------------

SLOW_METRICS = ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "METEOR", "ROUGE_L", "CIDEr_D", "SBERT"]


@pytest.mark.slow
def test_clotho_eval_agreement_reproduces_the_reference_table(shared_dir):
    from metrics_bridge.scoring import registry
    from metrics_bridge.scoring.base import warm_up

    clips = clips_from_fense_items(json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text()))
    reference = json.loads((shared_dir / "checks" / "clotho_reference.json").read_text())
    scorers = []
    for name in SLOW_METRICS:
        if registry.scorer_for(name) not in scorers:
            scorers.append(registry.scorer_for(name))
    for scorer in scorers:
        warm_up(scorer)  # METEOR's JVM loads while the others score
    got = {}
    for scorer in sorted(scorers, key=lambda s: s.metric_names[0] == "METEOR"):
        for name, report in fense_agreement(clips, scorer).items():
            got[name] = report.as_dict()
    compared = []
    for name in SLOW_METRICS:
        assert got[name]["pairs"] == reference["pairs"]
        for split in ["HC", "HI", "HM", "MM", "total"]:
            delta = abs(got[name][split] - reference["accuracy"][name][split])
            assert delta <= 0.5, f"{name} {split}: {got[name][split]} vs {reference['accuracy'][name][split]}"
            compared.append(delta)
    assert len(compared) == len(SLOW_METRICS) * 5  # every metric and split was compared with the reference
    print(f"largest difference from the reference table: {max(compared):.3f} points")
