"""The leaderboard: system values equal pycocoevalcap's corpus scores, win rates and Kendall tau recomputed
independently from the votes, THumBS means without excluded raters, stale scores never shown."""

import csv
import io
import json
from decimal import Decimal

import numpy as np
import pytest
from django.core.management import call_command
from scipy import stats

from corpus.models import Caption
from corpus.services.system_captions import system_captions_import
from metrics_bridge.models import MetricRun, MetricScore, SystemScore
from metrics_bridge.services.evaluation.leaderboard import leaderboard_build, leaderboard_table
from metrics_bridge.services.runs.plans import reference_context
from metrics_bridge.tasks.runs import enqueue_chunks
from ratings.models import Campaign, CaptionPair, PairwiseVote, ThumbsRating
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db
N_GRAM = ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "METEOR", "ROUGE_L", "CIDEr_D"]
SLICE = 15


@pytest.fixture
def board(shared_dir):
    """15 Clotho-Eval clips plus a submitted system "mine" (caption a of each clip's MM_2, one clip left out)."""
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:SLICE]
    pairwise_judgements_import(data=items, dataset_name="board", source_name="clotho_eval.json")
    lines = ["file_name,caption_predicted", *(f'{item["raw_name"]},"{item["MM_2"][0]}"' for item in items[1:])]
    system_captions_import(
        content="\n".join(lines).encode(), source_name="mine.csv", dataset_name="board", system_name="mine"
    )
    return items


def pycocoevalcap_corpora(corpora: list[list[tuple[str, list[str]]]]) -> list[dict[str, float]]:
    """pycocoevalcap 1.2's compute_score on each corpus of (caption, references), as DCASE reports system scores."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    meteor, results = Meteor(), []
    try:
        for captions in corpora:
            gts = {i: [{"caption": r} for r in refs] for i, (_, refs) in enumerate(captions)}
            res = {i: [{"caption": c}] for i, (c, _) in enumerate(captions)}
            tokenizer = PTBTokenizer()
            gts, res = tokenizer.tokenize(gts), tokenizer.tokenize(res)
            bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
            out = {f"BLEU_{n + 1}": bleu[n] for n in range(4)}
            out["METEOR"], _ = meteor.compute_score(gts, res)
            out["ROUGE_L"], _ = Rouge().compute_score(gts, res)
            out["CIDEr_D"], _ = Cider().compute_score(gts, res)
            results.append(out)
    finally:
        meteor.meteor_p.kill()
    return results


def system_items(system: str) -> list[tuple[str, list[str]]]:
    """Each distinct (clip, text) of the system's current captions with all of its clip's references."""
    items = {}
    for caption in Caption.objects.filter(system__name=system, superseded_at__isnull=True).select_related("clip"):
        refs = list(caption.clip.captions.filter(role="reference").order_by("position").values_list("text", flat=True))
        items[(caption.clip_id, caption.text)] = (caption.text, refs)
    return list(items.values())


def independent_win_rates() -> dict[str, tuple[float, int]]:
    """From the votes one by one: authors are systems or "human"; 1 / 0.5 / 0 points; superseded count for nobody."""
    points: dict[str, list[float]] = {}
    # Rows read table by table: a six-table join planned on empty-table statistics (the test's rows are not
    # committed, so PostgreSQL never analyzes them) ran for many minutes inside the full suite.
    captions = {caption.pk: caption for caption in Caption.objects.select_related("system")}
    pairs = {pair.pk: pair for pair in CaptionPair.objects.all()}
    for vote in PairwiseVote.objects.all():
        pair = pairs[vote.pair_id]
        a, b = captions[pair.caption_a_id], captions[pair.caption_b_id]
        author_a = a.system.name if a.system else "human"
        author_b = b.system.name if b.system else "human"
        if author_a == author_b:
            continue
        for caption, author, mine in ((a, author_a, "a"), (b, author_b, "b")):
            if author == "human" or caption.superseded_at is not None:
                continue
            points.setdefault(author, []).append(1.0 if vote.choice == mine else 0.5 if vote.choice == "none" else 0.0)
    return {author: (sum(p) / len(p), len(p)) for author, p in points.items()}


def test_system_values_equal_pycocoevalcap_corpus_scores_and_human_columns_equal_the_votes(board, make_user, capsys):
    # A rated submission: two raters, one of them excluded from the campaign, so only one counts.
    campaign = Campaign.objects.create(name="t", dataset=Caption.objects.first().clip.dataset, task_type="thumbs")
    kept, excluded = make_user("kept", "rater"), make_user("gone", "rater")
    campaign.excluded_raters.add(excluded)
    mine = list(Caption.objects.filter(system__name="mine").order_by("pk")[:3])
    for caption, (p, r, f) in zip(mine, [(5, 4, "-0.1"), (2, 3, "0"), (4, 4, "-0.5")], strict=True):
        ThumbsRating.objects.create(
            rater=kept, caption=caption, campaign=campaign, precision=p, recall=r, fluency=Decimal(f)
        )
        ThumbsRating.objects.create(rater=excluded, caption=caption, campaign=campaign, precision=1, recall=1)

    call_command("leaderboard", "--dataset", "board", "--metrics", ",".join([*N_GRAM, "SBERT"]), "--format", "json")
    report = json.loads(capsys.readouterr().out)

    rows = {row["system"]: row for row in report["systems"]}
    assert set(rows) == {"mine", *Caption.objects.filter(system__isnull=False).values_list("system__name", flat=True)}
    assert set(report) == {"dataset", "systems", "rank_agreement", "domains"}  # domains: per-domain columns
    assert set(rows["mine"]) == {"system", "captions", "metrics", "human"}
    assert rows["mine"]["captions"] == SLICE - 1
    for system, reference in zip(
        ("mine", "nn"), pycocoevalcap_corpora([system_items("mine"), system_items("nn")]), strict=True
    ):
        for metric in N_GRAM:
            assert rows[system]["metrics"][metric] == pytest.approx(reference[metric], abs=1e-9), (system, metric)
    assert 0 < rows["mine"]["metrics"]["SBERT"] < 1

    expected = independent_win_rates()
    for name, row in rows.items():
        rate, votes = expected.get(name, (None, 0))
        assert row["human"]["pairwise_votes"] == votes
        assert row["human"]["pairwise_win_rate"] == (pytest.approx(rate) if rate is not None else None)
    assert rows["mine"]["human"]["thumbs_ratings"] == 3
    assert rows["mine"]["human"]["thumbs_overall"] == pytest.approx(np.mean([4.5 - 0.1, 2.5, 4 - 0.5]))
    assert rows["nn"]["human"]["thumbs_overall"] is None
    for metric in [*N_GRAM, "SBERT"]:
        both = [
            (row["metrics"][metric], row["human"]["pairwise_win_rate"])
            for row in rows.values()
            if row["human"]["pairwise_win_rate"] is not None
        ]
        tau = stats.kendalltau([m for m, _ in both], [h for _, h in both], variant="b").statistic
        assert report["rank_agreement"][metric] == {"kendall_tau": pytest.approx(tau), "systems": len(both)}


def test_a_changed_submission_shows_no_stale_score_until_recomputed(board, capsys):
    dataset = Caption.objects.first().clip.dataset
    leaderboard_build(dataset=dataset, metric_names=["ROUGE_L"], enqueue=enqueue_chunks)
    before = {
        row["system"]: row["metrics"]["ROUGE_L"]
        for row in leaderboard_table(dataset=dataset, metric_names=["ROUGE_L"])["systems"]
    }
    lines = ["file_name,caption_predicted", f'{board[1]["raw_name"]},"silence"']
    system_captions_import(
        content="\n".join(lines).encode(), source_name="v2.csv", dataset_name="board", system_name="mine"
    )

    stale = {
        row["system"]: row["metrics"]["ROUGE_L"]
        for row in leaderboard_table(dataset=dataset, metric_names=["ROUGE_L"])["systems"]
    }
    assert stale["mine"] is None and stale["nn"] == before["nn"]

    runs_before = MetricRun.objects.count()
    after = {
        row["system"]: row["metrics"]["ROUGE_L"]
        for row in leaderboard_build(dataset=dataset, metric_names=["ROUGE_L"], enqueue=enqueue_chunks)["systems"]
    }
    assert after["nn"] == before["nn"] and after["mine"] != before["mine"]
    run = MetricRun.objects.order_by("-pk").first()
    assert MetricRun.objects.count() == runs_before + 1 and run.chunks_total == 1  # only "mine" was rescored
    assert SystemScore.objects.filter(system__name="mine", metric="ROUGE_L").count() == 2
    # nothing missing: a further build plans no chunk
    leaderboard_build(dataset=dataset, metric_names=["ROUGE_L"], enqueue=enqueue_chunks)
    assert MetricRun.objects.order_by("-pk").first().chunks_total == 0


def test_csv_and_table_formats(board, capsys):
    call_command("leaderboard", "--dataset", "board", "--metrics", "ROUGE_L", "--format", "csv")
    out = capsys.readouterr().out
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == [
        "system",
        "captions",
        "ROUGE_L",
        "pairwise_win_rate",
        "pairwise_votes",
        "thumbs_overall",
        "thumbs_ratings",
    ]
    assert rows[-1][0] == "kendall_tau_vs_win_rate"
    assert {row[0] for row in rows[1:-1]} >= {"mine", "nn"}
    call_command("leaderboard", "--dataset", "board", "--metrics", "ROUGE_L", "--format", "table")
    table = capsys.readouterr().out
    assert table.startswith("Leaderboard of board") and "Kendall tau-b" in table and "mine" in table


def test_unknown_metric_and_dataset(board):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="unknown metric"):
        call_command("leaderboard", "--dataset", "board", "--metrics", "BLEU_9")
    with pytest.raises(CommandError, match='dataset "nope" does not exist'):
        call_command("leaderboard", "--dataset", "nope")


TINY_CLIPS = [  # (references, caption of s1, caption of s2): few nodes, so some factors are in neither graph
    (("a dog barks", "a dog is barking"), "a dog barks", "a loud dog barks then a car passes"),
    (("rain falls on a roof", "heavy rain falls"), "rain is falling", "a dog barks"),
    (("birds chirp", "small birds are chirping"), "birds chirp loudly", "birds chirp"),
    (("a car passes by", "a car drives past"), "a car passes", "wind blows"),
]


def test_date_is_mecat_set_score_and_xace_factor_means_skip_not_applicable_factors():
    """DATE per system: the mean of DATE's per-caption date_item_scores over the system's captions at the dataset's
    delta. X-ACE factors: a factor absent from both graphs is stored NULL and left out of the system's mean."""
    from corpus.models import CaptioningSystem, Clip, Dataset
    from metrics_bridge.scoring.date import date_item_scores
    from metrics_bridge.services.runs.system_scores import current_versions

    # the leaderboard must use the dataset's DATE delta, not the default
    dataset = Dataset.objects.create(name="tiny", date_delta=0.25)
    systems = [CaptioningSystem.objects.create(name=name) for name in ("s1", "s2")]
    for index, (references, *candidates) in enumerate(TINY_CLIPS):
        clip = Clip.objects.create(dataset=dataset, external_id=f"clip-{index}")
        for position, text in enumerate(references):
            Caption.objects.create(clip=clip, text=text, role="reference", author_kind="human", position=position)
        for system, text in zip(systems, candidates, strict=True):
            Caption.objects.create(clip=clip, text=text, role="candidate", author_kind="machine", system=system)
    factors = {"XACE_E": "event", "XACE_S": "source", "XACE_A": "attribute", "XACE_R": "relation"}
    report = leaderboard_build(dataset=dataset, metric_names=["DATE", "XACE", *factors], enqueue=enqueue_chunks)
    rows = {row["system"]: row for row in report["systems"]}

    for number, system in enumerate(("s1", "s2"), start=1):
        expected = date_item_scores(
            [candidates[number - 1] for _, *candidates in TINY_CLIPS],
            [list(references) for references, *_ in TINY_CLIPS],
            delta=0.25,
        )
        assert rows[system]["metrics"]["DATE"] == pytest.approx(np.mean([item["date"] for item in expected]))

    versions = current_versions(list(factors), dataset=dataset)
    # X-ACE reads gold annotations: its caption scores against all references carry the "no gold" fingerprint
    all_references_context = reference_context(corpus_level=False, batch_label="", gold_fingerprint="none")
    nulls = 0
    for metric, factor in factors.items():
        for system, row in rows.items():
            stored = MetricScore.objects.filter(
                metric=metric,
                version=versions[metric],
                caption__system__name=system,
                reference_set__context=all_references_context,
            ).values_list("value", flat=True)
            assert len(stored) == len(TINY_CLIPS)
            applicable = [value for value in stored if value is not None]
            nulls += len(stored) - len(applicable)
            assert row["metrics"][metric] == (pytest.approx(np.mean(applicable)) if applicable else None), system
            assert report["xace"][system]["factors"][factor]["captions"] == len(applicable)
    assert nulls > 0  # some captions have a factor in neither graph (no attribute, no temporal relation)


def test_a_system_chunk_stores_its_scores_only_under_its_lease(board):
    """Leaderboard chunks go through the same claim / lease / store path as any chunk (one way to
    run metrics, so a leaderboard run survives a worker's death like any other)."""
    from datetime import timedelta

    from django.utils import timezone

    from metrics_bridge.models import MetricRunChunk
    from metrics_bridge.services.runs import chunk_scoring
    from metrics_bridge.services.runs.chunks import ChunkOutcome, _chunk_store, chunk_claim
    from metrics_bridge.services.runs.system_scores import system_scores_run_create

    dataset = Caption.objects.first().clip.dataset
    run = system_scores_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    chunk = run.chunks.get()
    stale = chunk_claim(chunk_id=chunk.pk, worker="slow worker")
    MetricRunChunk.objects.filter(pk=chunk.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    fresh = chunk_claim(chunk_id=chunk.pk, worker="new worker")

    assert _chunk_store(chunk=stale, scores=chunk_scoring.chunk_score(chunk=stale)) == ChunkOutcome.LEASE_LOST
    assert not SystemScore.objects.exists() and not MetricScore.objects.exists()
    assert _chunk_store(chunk=fresh, scores=chunk_scoring.chunk_score(chunk=fresh)) == ChunkOutcome.DONE
    assert SystemScore.objects.filter(metric="ROUGE_L").count() == len(chunk.requests)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.DONE
