"""thumbs_report: every number equals the established implementation on the same ratings."""

import json
import random
from decimal import Decimal

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from scipy import stats

from corpus.models import Caption
from metrics_bridge.agreement.inter_rater import icc_2k_of_ratings
from metrics_bridge.services.evaluation.thumbs_report import thumbs_report_table
from ratings.models import Assignment, AssignmentItem, Campaign, ThumbsRating
from tests.ratings.campaign_data import corpus_build

pytestmark = pytest.mark.django_db
# pingouin 0.7 names ICC(2,k) (Shrout & Fleiss) by McGraw & Wong: ICC(A,k), two-way, absolute agreement, k raters.
FIELDS = ("precision", "recall", "fluency", "conciseness", "irrelevance")
SYSTEM_QUALITY = {"sys_a": 2, "sys_b": 0, "sys_c": 1}  # the rated campaign's systems, each its own level


@pytest.fixture
def rated_campaign(make_user):
    """6 clips x 3 systems, rated by three raters (the third excluded) and partly by a fourth."""
    dataset, clips, _ = corpus_build(name="tr", clip_count=6)
    campaign = Campaign.objects.create(name="thumbs-study", dataset=dataset, task_type="thumbs")
    raters = [make_user(name, "rater") for name in ("ann", "bob", "cat", "dan")]
    campaign.excluded_raters.add(raters[2])
    rng = random.Random(7)
    captions = list(Caption.objects.filter(clip__dataset=dataset, role="candidate").order_by("pk"))
    for number, caption in enumerate(captions):  # overlap with the references varies from caption to caption
        words = f"reference {number % 5 + 1} of clip {caption.clip.external_id[4]}".split()
        caption.text = " ".join([*words[: 1 + (number * 7) % 5], *["noise"] * (number % 3)])
        caption.save()
    for index, rater in enumerate(raters):
        assignment = Assignment.objects.create(campaign=campaign, rater=rater)
        for position, clip in enumerate(clips):
            done = index < 3 or position < 3
            AssignmentItem.objects.create(
                assignment=assignment, position=position, clip=clip, completed_at=timezone.now() if done else None
            )
            if not done:
                continue
            for caption in (c for c in captions if c.clip_id == clip.pk):
                # each system its own level (not hash(): a string's hash changes from process to process)
                quality = SYSTEM_QUALITY[caption.system.name]
                ThumbsRating.objects.create(
                    rater=rater,
                    caption=caption,
                    campaign=campaign,
                    precision=min(5, 2 + quality + rng.randint(0, 1)),
                    recall=min(5, 1 + quality + rng.randint(0, 2)),
                    fluency=Decimal(rng.choice(["0", "-0.1", "-0.5"])),
                    conciseness=Decimal(rng.choice(["0", "0", "-0.2"])),
                    irrelevance=Decimal(rng.choice(["0", "-1"])),
                )
    return campaign


def _included(campaign) -> list[ThumbsRating]:
    return list(
        ThumbsRating.objects.filter(campaign=campaign)
        .exclude(rater__username="cat")
        .select_related("rater", "caption__system")
    )


def test_agreement_bias_and_completion_equal_reference_implementations(rated_campaign):
    report = thumbs_report_table(campaign=rated_campaign, metric_names=[], resamples=50)
    ratings = _included(rated_campaign)
    raters = sorted({r.rater.username for r in ratings})
    captions = sorted({r.caption_id for r in ratings})
    for field in (*FIELDS, "overall"):
        matrix = np.full((len(raters), len(captions)), np.nan)
        for rating in ratings:
            matrix[raters.index(rating.rater.username), captions.index(rating.caption_id)] = float(
                getattr(rating, field)
            )
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
        assert report["agreement"]["krippendorff_alpha"][field] == pytest.approx(expected)

    # ICC(2,k): the captions all three included raters rated (ann, bob, dan on the first three clips)
    frame = pd.DataFrame(
        [{"item": r.caption_id, "rater": r.rater.username, "score": float(r.overall)} for r in ratings]
    )
    complete = frame.groupby("item").filter(lambda group: len(group) == 3)
    expected_icc = pingouin.intraclass_corr(data=complete, targets="item", raters="rater", ratings="score").set_index(
        "Type"
    )
    icc = report["agreement"]["icc2k_overall"]
    assert (icc["items"], icc["raters"]) == (9, 3)
    assert icc["value"] == pytest.approx(expected_icc.loc["ICC(A,k)", "ICC"])

    completion = {row["rater"]: row for row in report["completion"]}
    assert (completion["dan"]["completed"], completion["dan"]["items"], completion["dan"]["percent"]) == (3, 6, 50.0)
    assert completion["cat"]["excluded"] and not completion["ann"]["excluded"]
    assert report["ratings"] == len(ratings) and report["captions"] == 18

    bias = {row["rater"]: row for row in report["rater_bias"]}
    assert set(bias) == {"ann", "bob", "dan"}
    by_caption = {}
    for rating in ratings:
        by_caption.setdefault(rating.caption_id, {})[rating.rater.username] = float(rating.overall)
    differences = [
        v["dan"] - np.mean([x for name, x in v.items() if name != "dan"]) for v in by_caption.values() if "dan" in v
    ]
    assert bias["dan"]["overall"] == pytest.approx(np.mean(differences))
    assert bias["dan"]["items"] == 9


def test_icc_matches_pingouin_on_a_random_complete_design():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(12, 1)) + rng.normal(scale=0.7, size=(12, 4)) + np.array([0, 0.3, -0.2, 0.5])
    rows = [(f"r{j}", i, float(scores[i, j])) for i in range(12) for j in range(4)]
    frame = pd.DataFrame(rows, columns=["rater", "item", "score"])
    expected = pingouin.intraclass_corr(data=frame, targets="item", raters="rater", ratings="score").set_index("Type")
    result = icc_2k_of_ratings(rows)
    assert (result.items, result.raters) == (12, 4)
    assert result.value == pytest.approx(expected.loc["ICC(A,k)", "ICC"])


def test_metric_correlations_through_the_command(rated_campaign, capsys):
    call_command("thumbs_report", "--campaign", "thumbs-study", "--metrics", "ROUGE_L", "--format", "json")
    report = json.loads(capsys.readouterr().out)
    correlations = report["correlations"]["ROUGE_L"]
    ratings = _included(rated_campaign)
    from metrics_bridge.models import MetricScore

    scores = dict(MetricScore.objects.filter(metric="ROUGE_L").values_list("caption_id", "value"))
    captions = sorted({r.caption_id for r in ratings})
    human = [np.mean([float(r.overall) for r in ratings if r.caption_id == c]) for c in captions]
    metric = [scores[c] for c in captions]
    caption_level = correlations["caption"]["overall"]
    assert caption_level["pearson"]["value"] == pytest.approx(stats.pearsonr(metric, human).statistic)
    assert caption_level["spearman"]["value"] == pytest.approx(stats.spearmanr(metric, human).statistic)
    assert caption_level["kendall"]["value"] == pytest.approx(stats.kendalltau(metric, human).statistic)
    assert caption_level["kendall"]["n"] == 18
    assert (
        caption_level["pearson"]["ci_low"] <= caption_level["pearson"]["value"] <= caption_level["pearson"]["ci_high"]
    )
    systems = {r.caption_id: r.caption.system.name for r in ratings}
    means = {}
    for c, m, h in zip(captions, metric, human, strict=True):
        means.setdefault(systems[c], []).append((m, h))
    system_metric = [np.mean([m for m, _ in v]) for v in means.values()]
    system_human = [np.mean([h for _, h in v]) for v in means.values()]
    assert correlations["system"]["overall"]["pearson"]["value"] == pytest.approx(
        stats.pearsonr(system_metric, system_human).statistic
    )
    assert correlations["system"]["overall"]["pearson"]["n"] == 3

    call_command("thumbs_report", "--campaign", "thumbs-study", "--metrics", "ROUGE_L", "--format", "table")
    table = capsys.readouterr().out
    assert "ICC(2,k) overall" in table and "ROUGE_L" in table and "(excluded)" in table


def test_unknown_or_pairwise_campaign(rated_campaign):
    with pytest.raises(CommandError, match='campaign "nope" does not exist'):
        call_command("thumbs_report", "--campaign", "nope")
    Campaign.objects.create(name="pw", dataset=rated_campaign.dataset, task_type="pairwise")
    with pytest.raises(CommandError, match="not THumBS"):
        call_command("thumbs_report", "--campaign", "pw")
