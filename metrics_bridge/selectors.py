"""Read-only queries that turn corpus and judgement rows into the plain data scoring code takes."""
from collections import defaultdict
from dataclasses import dataclass, field

from annotation.models import AttributeTag, Caption, Dataset
from annotation.selectors import gold_annotation_documents
from ratings.models import Campaign, CaptionPair, PairwiseVote


@dataclass
class JudgedPairRow:
    pair_id: int
    split: str
    caption_a_id: int
    caption_a: str
    caption_b_id: int
    caption_b: str
    votes: list[int] = field(default_factory=list)


@dataclass
class ClipRows:
    clip_id: int
    references: list[str]
    reference_ids: list[int]
    candidates: list[tuple[int, str]]
    pairs: list[JudgedPairRow]


def dataset_clip_rows(*, dataset: Dataset, excluded_rater_ids: set[int] | None = None) -> list[ClipRows]:
    """Per clip: ordered references, candidate captions and judged pairs with their votes (+1 a, -1 b, 0)."""
    references: dict[int, list[tuple[int, str]]] = defaultdict(list)
    candidates: dict[int, list[tuple[int, str]]] = defaultdict(list)
    captions = Caption.objects.filter(clip__dataset=dataset).order_by("clip_id", "position", "pk")
    for caption_id, clip_id, text, role in captions.values_list("pk", "clip_id", "text", "role"):
        target = references if role == Caption.Role.REFERENCE else candidates
        target[clip_id].append((caption_id, text))

    votes: dict[int, list[int]] = defaultdict(list)
    vote_rows = PairwiseVote.objects.filter(pair__clip__dataset=dataset).order_by("pair_id", "rater_id")
    if excluded_rater_ids:
        vote_rows = vote_rows.exclude(rater_id__in=excluded_rater_ids)
    for pair_id, choice in vote_rows.values_list("pair_id", "choice"):
        votes[pair_id].append({"a": 1, "b": -1}.get(choice, 0))

    pairs: dict[int, list[JudgedPairRow]] = defaultdict(list)
    pair_rows = CaptionPair.objects.filter(clip__dataset=dataset).order_by("clip_id", "source_key", "pk")
    for pair in pair_rows.values("pk", "clip_id", "split", "caption_a_id", "caption_a__text", "caption_b_id", "caption_b__text"):
        pairs[pair["clip_id"]].append(
            JudgedPairRow(
                pair_id=pair["pk"],
                split=pair["split"],
                caption_a_id=pair["caption_a_id"],
                caption_a=pair["caption_a__text"],
                caption_b_id=pair["caption_b_id"],
                caption_b=pair["caption_b__text"],
                votes=votes.get(pair["pk"], []),
            )
        )

    clip_ids = sorted(set(references) | set(candidates) | set(pairs))
    return [
        ClipRows(
            clip_id=clip_id,
            references=[text for _, text in references[clip_id]],
            reference_ids=[caption_id for caption_id, _ in references[clip_id]],
            candidates=candidates[clip_id],
            pairs=pairs[clip_id],
        )
        for clip_id in clip_ids
    ]


def excluded_rater_ids_for(*, dataset: Dataset) -> set[int]:
    """Raters an admin excluded from reports in any campaign of the dataset (their data is kept)."""
    return set(Campaign.excluded_raters.through.objects.filter(campaign__dataset=dataset).values_list("user_id", flat=True))


def gold_annotations_by_clip(*, clip_ids: set[int]) -> dict[str, dict]:
    """Gold AudioCaps-F annotations as {str(clip_id): {event: {"source": [...], "attr": [...]}}}; events with
    temporal relations also carry "relations": {other event: kind}. Times (onset/offset) are left out: no
    scorer reads them, so they do not belong in the scores' identity."""
    graphs = {}
    for clip_id, document in gold_annotation_documents(clip_ids=clip_ids).items():
        graphs[str(clip_id)] = {
            event: {key: value for key, value in node.items() if key not in ("onset", "offset")}
            for event, node in document.items()
        }
    return graphs


def attribute_tag_library() -> dict[str, dict]:
    return {
        text: {"class": category, "sym": synonym_group, "ant": antonym_groups}
        for text, category, synonym_group, antonym_groups in AttributeTag.objects.values_list(
            "text", "category", "synonym_group", "antonym_groups"
        )
    }


def dataset_scored_metric_names(*, dataset: Dataset, versions: dict[str, str]) -> list[str]:
    """Metric names with stored scores for the dataset at their current version (`versions`: name -> version)."""
    from metrics_bridge.models import MetricScore

    stored = set(
        MetricScore.objects.filter(caption__clip__dataset=dataset).values_list("metric", "version").distinct()
    )
    return [name for name, version in versions.items() if (name, version) in stored]


def caption_scores(*, caption: Caption) -> list:
    """The caption's scores, newest version first, with their reference sets."""
    from metrics_bridge.models import MetricScore

    return list(
        MetricScore.objects.filter(caption=caption).select_related("reference_set").order_by("metric", "-created_at")
    )
