"""The caption page puts the X-ACE score in use first: against the clip's gold annotation once it has one, drawn
beside the caption's graph with the matches; the score from before the gold annotation is kept behind a toggle."""

import re

import pytest

from annotation.services.audiocaps_f import audiocaps_f_import
from metrics_bridge.models import MetricScore
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.tasks.runs import execute_metric_run
from tests.ratings.campaign_data import corpus_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored_before_and_after_gold():
    dataset, clips, _systems = corpus_build(name="cap-gold", clip_count=1, reference_count=2, system_names=("sys",))
    clip = clips[0]
    clip.captions.filter(role="reference").update(text="a dog barks while rain falls")
    caption = clip.captions.get(role="candidate")
    caption.text = "a dog is barking loudly"
    caption.save()
    execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["XACE"]))  # against the references
    audiocaps_f_import(
        data={
            clip.external_id: {
                "barking": {"source": ["dog"], "attr": ["loud"]},
                "falling": {"source": ["rain"], "attr": ["steady"]},
            }
        },
        dataset_name=dataset.name,
        source_name="gold.json",
    )
    execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["XACE"]))  # against the gold graph
    return caption


def test_the_gold_based_xace_score_comes_first_and_the_earlier_one_is_behind_a_toggle(
    admin_client, scored_before_and_after_gold
):
    caption = scored_before_and_after_gold
    scores = MetricScore.objects.filter(caption=caption, metric="XACE").order_by("created_at")
    before, after = list(scores)
    assert before.details["reference_from"] == "reference_captions"
    assert after.details["reference_from"] == "expert_annotation"
    page = admin_client.get(f"/metrics/captions/{caption.pk}/").content.decode()

    table = page[page.index('id="score-table"') : page.index("</table>", page.index('id="score-table"'))]
    first_row = re.search(r"<tr data-metric=\"([^\"]+)\">(.*?)</tr>", table, re.S)
    assert first_row.group(1) == "XACE" and "gold annotation" in first_row.group(2)
    assert f"{after.value:.4f}" in first_row.group(2)
    assert f"{before.value:.4f}" not in table  # the caption-based row is not among the scores in use
    superseded = page[page.index('id="superseded-scores"') :]
    superseded = superseded[: superseded.index("</details>")]
    assert f"{before.value:.4f}" in superseded and "no gold annotation then" in superseded
    # The explanation is the gold-based one, drawn beside the caption's graph with the matched events joined.
    assert f"caption-matches/{caption.pk}.svg?score={after.pk}" in page
    assert "Against the clip's gold annotation" in page
    svg = admin_client.get(f"/metrics/plots/caption-matches/{caption.pk}.svg?score={after.pk}")
    assert svg.status_code == 200
    text = svg.content.decode()
    assert "gold annotation graph" in text and "caption graph" in text and "falling" in text
    matched = after.details["factors"]["event"]["matched"]
    assert matched and f"{matched[0]['score']:.2f}" in text  # the match line's label
