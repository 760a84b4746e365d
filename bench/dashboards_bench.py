"""Server time of the leaderboard, THumBS and agreement pages with 10,000 captions x 15 metrics and 50 systems.

Builds, in a fresh database (a temp SQLite file, or PostgreSQL with --database postgres and DATABASE_URL):
- 200 clips with 5 references; 50 systems captioning every clip (10,000 machine captions);
- for 15 metrics: every caption's score against all references, every score the FENSE pair protocol needs
  (values are random: the pages only read them), and each system's system-level score at the fingerprint of
  its current captions;
- 1,400 judged pairs (per clip HC, HI, HM, MM_1..4) with 4 votes each; a THumBS campaign of 3 raters who
  each rated 2,000 captions (10 systems on every clip), with assignments.
Then times each page with Django's test client (server time: request in, response out, no network):
- first view (nothing cached: the page answers with a "computing" notice) and the refresh request the
  browser then sends (computes the numbers);
- warm: median of 7 views with current numbers cached;
- after a change (one vote flipped, one rating deleted): the page view (answers with the old numbers flagged
  as out of date), the refresh request, and the checks that the new numbers are what they must be.
Ratios are to the metrics home page timed in the same process.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/dashboards_bench.py [--database sqlite|postgres|both]
(postgres uses DATABASE_URL; its tables are created by migrate and emptied first.)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLIPS, SYSTEMS, REFERENCES, RATED_SYSTEMS, RATERS = 200, 50, 5, 10, 3
METRICS = [
    "BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "METEOR", "ROUGE_L", "CIDEr_D", "SPICE",
    "SBERT", "DATE", "XACE", "XACE_E", "XACE_S", "XACE_A", "XACE_R",
]  # fmt: skip


def build(rng: random.Random) -> dict:
    from decimal import Decimal

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from corpus.models import Caption, CaptioningSystem, Clip, Dataset
    from metrics_bridge.agreement.protocol import scorer_batching
    from metrics_bridge.models import MetricScore, ReferenceSet, SystemScore
    from metrics_bridge.scoring import registry
    from metrics_bridge.scoring.base import uses_gold_annotations
    from metrics_bridge.services.runs.plans import (
        chunk_requests_for,
        dataset_scoring_plan,
        gold_fingerprints_by_caption,
    )
    from metrics_bridge.services.runs.reference_sets import reference_sets_ensure
    from metrics_bridge.services.runs.system_scores import current_versions, fingerprints_for, system_inputs
    from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair, PairwiseVote, ThumbsRating

    words = (
        "dog barks bird chirps car passes engine idles rain falls wind blows people talk door slams music plays".split()
    )

    def sentence(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    dataset = Dataset.objects.create(name="bench")
    clips = Clip.objects.bulk_create(
        [Clip(dataset=dataset, external_id=f"c{i}.wav", file_name=f"c{i}.wav") for i in range(CLIPS)]
    )
    references = [
        Caption(
            clip=clip,
            text=f"{sentence(8)} {i}-{k}",
            role="reference",
            author_kind="human",
            position=k,
            source_label=f"human_{k + 1}",
        )
        for i, clip in enumerate(clips)
        for k in range(REFERENCES)
    ]
    Caption.objects.bulk_create(references, batch_size=2000)
    systems = CaptioningSystem.objects.bulk_create(
        [CaptioningSystem(name=f"bench-sys-{s:02d}") for s in range(SYSTEMS)]
    )
    candidates = [
        Caption(
            clip=clip,
            text=f"{sentence(7)} {s}-{i}",
            role="candidate",
            author_kind="machine",
            system=system,
            source_label=system.name,
        )
        for s, system in enumerate(systems)
        for i, clip in enumerate(clips)
    ]
    Caption.objects.bulk_create(candidates, batch_size=2000)
    by_clip: dict[int, list] = {}
    for caption in candidates:
        by_clip.setdefault(caption.clip_id, []).append(caption)
    refs_by_clip: dict[int, list] = {}
    for caption in references:
        refs_by_clip.setdefault(caption.clip_id, []).append(caption)

    # judged pairs and votes
    judges = [get_user_model().objects.create(username=f"bench-judge-{n}") for n in range(4)]
    pairs = []
    for index, clip in enumerate(clips):
        refs, machine = refs_by_clip[clip.pk], by_clip[clip.pk]
        other = refs_by_clip[clips[(index + 1) % CLIPS].pk][0]
        hi_b = Caption.objects.create(
            clip=clip, text=other.text, role="candidate", author_kind="human", source_label="other_human_1"
        )
        pairs.append(CaptionPair(clip=clip, caption_a=refs[0], caption_b=refs[1], split="HC", source_key="HC"))
        pairs.append(CaptionPair(clip=clip, caption_a=refs[2], caption_b=hi_b, split="HI", source_key="HI"))
        pairs.append(
            CaptionPair(clip=clip, caption_a=refs[3], caption_b=machine[index % SYSTEMS], split="HM", source_key="HM")
        )
        for m in range(4):
            a, b = rng.sample(machine, 2)
            pairs.append(CaptionPair(clip=clip, caption_a=a, caption_b=b, split="MM", source_key=f"MM_{m + 1}"))
    CaptionPair.objects.bulk_create(pairs, batch_size=2000)
    PairwiseVote.objects.bulk_create(
        [
            PairwiseVote(
                rater=judge, pair=pair, choice=rng.choice("aab") if rng.random() < 0.9 else "none", source="import"
            )
            for pair in pairs
            for judge in judges
        ],
        batch_size=5000,
    )

    # metric scores: all-references and FENSE protocol requests, random values
    versions = current_versions(METRICS, dataset=dataset)
    reference_sets: dict[str, tuple] = {}
    score_keys: dict[str, set] = {}
    plans = {}
    for name in METRICS:
        scorer = registry.scorer_for(name)
        layout = (scorer.protocol_kind, scorer_batching(scorer))
        if layout not in plans:
            plans[layout] = dataset_scoring_plan(dataset=dataset, protocol_kind=layout[0], batching=layout[1])
        keys = set()
        for batch in plans[layout]:
            # the bench's data has no gold annotations: every clip's fingerprint is that of "no gold"
            gold = gold_fingerprints_by_caption(dataset=dataset) if uses_gold_annotations(scorer) else None
            requests, entries = chunk_requests_for(batch=batch, scorer=scorer, gold_fingerprints=gold)
            reference_sets.update(entries)
            keys.update((r["caption_id"], r["reference_set_key"]) for r in requests)
        score_keys[name] = keys
    reference_sets_ensure(entries=reference_sets)
    reference_set_ids = dict(ReferenceSet.objects.values_list("key", "pk"))
    rows = 0
    for name in METRICS:
        batch = [
            MetricScore(
                metric=name,
                version=versions[name],
                caption_id=caption_id,
                reference_set_id=reference_set_ids[key],
                value=rng.random(),
            )
            for caption_id, key in score_keys[name]
        ]
        MetricScore.objects.bulk_create(batch, batch_size=5000)
        rows += len(batch)

    # system scores at the current fingerprints
    inputs = system_inputs(dataset_id=dataset.pk)
    system_rows = []
    for name in METRICS:
        fingerprints = fingerprints_for(inputs=inputs, scorer=registry.scorer_for(name))
        for system_id in inputs:
            system_rows.append(
                SystemScore(
                    dataset=dataset,
                    system_id=system_id,
                    metric=name,
                    version=versions[name],
                    fingerprint=fingerprints[system_id],
                    value=rng.random(),
                )
            )
    SystemScore.objects.bulk_create(system_rows, batch_size=2000)

    # THumBS campaign
    campaign = Campaign.objects.create(name="bench-thumbs", dataset=dataset, task_type="thumbs")
    rated = [c for c in candidates if c.system_id in {s.pk for s in systems[:RATED_SYSTEMS]}]
    raters = [get_user_model().objects.create(username=f"bench-rater-{n}") for n in range(RATERS)]
    ratings, items = [], []
    for rater in raters:
        assignment = Assignment.objects.create(campaign=campaign, rater=rater)
        for position, clip in enumerate(clips):
            items.append(
                AssignmentItem(assignment=assignment, position=position, clip=clip, completed_at=timezone.now())
            )
        for caption in rated:
            ratings.append(
                ThumbsRating(
                    rater=rater,
                    caption=caption,
                    campaign=campaign,
                    precision=rng.randint(1, 5),
                    recall=rng.randint(1, 5),
                    fluency=Decimal(rng.choice(["0", "-0.1", "-0.5"])),
                    irrelevance=Decimal(rng.choice(["0", "0", "-1"])),
                )
            )
    AssignmentItem.objects.bulk_create(items, batch_size=2000)
    ThumbsRating.objects.bulk_create(ratings, batch_size=5000)
    return {
        "dataset": dataset, "campaign": campaign, "metric_scores": rows, "system_scores": len(system_rows),
        "captions": len(candidates), "pairs": len(pairs), "ratings": len(ratings),
    }  # fmt: skip


def timed(client, url: str) -> tuple[float, object]:
    start = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - start) * 1000
    assert response.status_code == 200, (url, response.status_code)
    return elapsed, response


def posted(client, url: str) -> float:
    start = time.perf_counter()
    response = client.post(url)
    assert response.status_code == 200, (url, response.status_code)
    return (time.perf_counter() - start) * 1000


def run(label: str) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    from config.celery import app

    # the refresh request's tasks run here, as a worker would run them (pages never compute: they queue)
    app.conf.update(CELERY_TASK_ALWAYS_EAGER=True)
    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    call_command("migrate", verbosity=0)  # data migrations (role groups, tag library) again
    from django.contrib.auth import get_user_model

    from metrics_bridge.models import DashboardCache
    from ratings.models import PairwiseVote, ThumbsRating

    rng = random.Random(11)
    start = time.perf_counter()
    data = build(rng)
    print(
        f"[{label}] built in {time.perf_counter() - start:.0f} s: {data['captions']} captions of {SYSTEMS} systems, "
        f"{data['metric_scores']} metric scores ({len(METRICS)} metrics), {data['system_scores']} system scores, "
        f"{data['pairs']} pairs, {data['ratings']} ratings ({connection.vendor})"
    )
    admin = get_user_model().objects.create_user("bench-admin", is_staff=True)
    client = Client()
    client.force_login(admin)
    dataset, campaign = data["dataset"], data["campaign"]
    pages = {
        "leaderboard": f"/metrics/datasets/{dataset.pk}/leaderboard/",
        "thumbs": f"/metrics/campaigns/{campaign.pk}/thumbs/",
        "agreement": f"/metrics/datasets/{dataset.pk}/agreement/",
    }
    reference = statistics.median(timed(client, "/metrics/")[0] for _ in range(7))
    print(f"[{label}] reference page /metrics/: {reference:.1f} ms (median of 7)")
    DashboardCache.objects.all().delete()
    kinds = {
        "leaderboard": ("leaderboard", dataset.pk),
        "thumbs": ("thumbs", campaign.pk),
        "agreement": ("agreement", dataset.pk),
    }
    results = {}
    for name, url in pages.items():
        first, response = timed(client, url)
        assert b"for the first time" in response.content
        refresh = posted(client, "/metrics/dashboards/{}/{}/refresh/".format(*kinds[name]))
        warm = statistics.median(timed(client, url)[0] for _ in range(7))
        results[name] = (first, refresh, warm)
    # a change: one vote flips, one rating goes -> the next view recomputes and shows it
    before = client.get(pages["leaderboard"] + "?format=json").json()
    vote = PairwiseVote.objects.filter(pair__split="MM", choice="a").select_related("pair__caption_a__system").first()
    vote.choice = "b"
    vote.save()
    ThumbsRating.objects.filter(campaign=campaign).order_by("pk").first().delete()
    changed = {}
    for name, url in pages.items():
        stale, response = timed(client, url)
        assert b"the data changed since these numbers were computed" in response.content
        changed[name] = (stale, posted(client, "/metrics/dashboards/{}/{}/refresh/".format(*kinds[name])))
    after = client.get(pages["leaderboard"] + "?format=json").json()
    system = vote.pair.caption_a.system.name
    rate = {row["system"]: row["human"] for row in before["systems"]}[system]
    new_rate = {row["system"]: row["human"] for row in after["systems"]}[system]
    expected = rate["pairwise_win_rate"] - 1 / rate["pairwise_votes"]
    assert abs(new_rate["pairwise_win_rate"] - expected) < 1e-12, (new_rate, expected)
    thumbs = client.get(pages["thumbs"] + "?format=json").json()
    assert thumbs["ratings"] == data["ratings"] - 1, thumbs["ratings"]
    old, new = rate["pairwise_win_rate"], new_rate["pairwise_win_rate"]
    print(f"[{label}] changed: win rate of {system} {old:.4f} -> {new:.4f} (as expected); {thumbs['ratings']} ratings")
    for name, (first, refresh, warm) in results.items():
        stale, recompute = changed[name]
        print(
            f"[{label}] {name:<11} page: warm {warm:6.1f} ms ({warm / reference:4.1f}x reference), "
            f"first view {first:6.1f} ms, after a change {stale:6.1f} ms | "
            f"recompute: first {refresh:7.0f} ms, after the change {recompute:7.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.inner:
        run(args.database)
        return
    targets = ["sqlite", "postgres"] if args.database == "both" else [args.database]
    for target in targets:
        env = dict(os.environ)
        if target == "sqlite":
            folder = tempfile.mkdtemp(prefix="dashboards-bench-")
            env["DATABASE_URL"] = f"sqlite:///{folder}/bench.sqlite3"
        elif not env.get("DATABASE_URL", "").startswith("postgres"):
            print("postgres: set DATABASE_URL=postgresql://... (skipped)")
            continue
        env["MEDIA_ROOT"] = tempfile.mkdtemp(prefix="dashboards-bench-media-")
        subprocess.run([sys.executable, __file__, "--database", target, "--inner"], env=env, check=True)


if __name__ == "__main__":
    main()
