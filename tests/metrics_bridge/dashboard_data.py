"""Small data sets for the dashboard and metric-run tests: a Clotho-Eval slice, a THumBS campaign rated on it."""

import json
from decimal import Decimal
from pathlib import Path

from corpus.models import Caption, Dataset
from ratings.models import Campaign, ThumbsRating
from ratings.services.pairwise_import import pairwise_judgements_import


def clotho_slice(shared_dir: Path, *, name: str, clips: int) -> Dataset:
    """The first `clips` items of Clotho-Eval (references, candidates by system, judged pairs with their votes)."""
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:clips]
    pairwise_judgements_import(data=items, dataset_name=name, source_name="clotho_eval.json")
    return Dataset.objects.get(name=name)


def rated_thumbs_campaign(dataset: Dataset, raters: list, *, name: str, captions: int) -> Campaign:
    """A THumBS campaign whose raters all rated the first `captions` candidates, agreeing in part."""
    campaign = Campaign.objects.create(name=name, dataset=dataset, task_type="thumbs")
    rated = list(Caption.objects.filter(clip__dataset=dataset, role="candidate").order_by("pk")[:captions])
    for number, rater in enumerate(raters):
        for index, caption in enumerate(rated):
            ThumbsRating.objects.create(
                rater=rater,
                caption=caption,
                campaign=campaign,
                precision=1 + (index + number) % 5,
                recall=1 + index % 5,
                fluency=Decimal("-0.5") * number,
            )
    return campaign
