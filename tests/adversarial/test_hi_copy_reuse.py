"""Attack (by accident): a pair artefact becomes corpus data.

Against the old main the copies pair generation made for HI pairs were plain `author_kind=human` captions of
the pair's clip: a later THumBS campaign picked one as "the human caption" of that clip (it is another clip's
caption), and corpus counts, reference sets, candidate scoring and the captions API counted them. Here an
admin builds exactly that sequence; the copy must appear nowhere but in its pair.
"""

import pytest
from django.test import Client

from annotation.selectors import dataset_corpus_counts
from corpus.models import Caption
from metrics_bridge.selectors.scoring_inputs import dataset_clip_rows, dataset_texts, reference_lists_by_clip
from metrics_bridge.services.runs.plans import all_references_batch
from metrics_bridge.services.runs.system_scores import system_inputs
from ratings.services.campaigns import campaign_setup, thumbs_captions_select
from tests.ratings.campaign_data import corpus_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def after_pairs(make_user):
    dataset, clips, systems = corpus_build(name="reuse-copies", clip_count=8, reference_count=3)
    before = dataset_corpus_counts(dataset=dataset)
    pairwise = campaign_setup(
        name="copies-pairs", dataset=dataset, clips=clips[:6], task_type="pairwise", split_counts={"HI": 6},
        gold_from_hi=True, judgements_per_item=1,
    )  # fmt: skip
    copies = Caption.objects.filter(pk__in=pairwise.pairs.values_list("caption_b_id", flat=True))
    assert copies.count() == 6 and all(copy.pair_artefact and copy.copied_from_id for copy in copies)
    return dataset, clips, systems, before, set(copies.values_list("pk", flat=True))


def test_a_later_thumbs_campaign_never_takes_an_hi_copy_as_a_clips_human_caption(after_pairs, make_user):
    dataset, clips, systems, _, copies = after_pairs
    everything = thumbs_captions_select(clips=clips[:6], systems=systems, human_captions_per_clip=50, seed=1)
    assert len(everything) == 6 * (3 + 3), "every reference and machine caption of the clips..."
    assert not {caption.pk for caption in everything} & copies, "...and none of the copies"
    campaign = campaign_setup(
        name="copies-thumbs", dataset=dataset, clips=clips[:6], task_type="thumbs", human_captions_per_clip=50,
        judgements_per_item=1, raters=[make_user("thumbs-rater", "rater")],
    )  # fmt: skip
    assert not set(campaign.captions.values_list("pk", flat=True)) & copies


def test_corpus_readers_leave_the_copies_out(after_pairs, make_user):
    dataset, _, _, before, copies = after_pairs
    assert dataset_corpus_counts(dataset=dataset) == before, "dataset_stats counts are the corpus's"
    rows = dataset_clip_rows(dataset=dataset)
    candidates = {caption_id for row in rows for caption_id, _ in row.candidates}
    assert candidates and not candidates & copies
    assert not {caption_id for caption_id, _ in all_references_batch(clip_rows=rows).requests} & copies
    # ...but the pairs still hold them, so their votes can still be scored.
    assert {pair.caption_b_id for row in rows for pair in row.pairs} == copies
    texts = set(Caption.objects.filter(pk__in=copies).values_list("text", flat=True))
    references = {text for texts_ in reference_lists_by_clip(dataset=dataset).values() for text in texts_}
    assert len(dataset_texts(dataset=dataset)) == Caption.objects.corpus().filter(clip__dataset=dataset).count()
    assert texts <= references, "a copy's text is only its original's, as a reference of the donor clip"
    assert (
        not {caption_id for entry in system_inputs(dataset_id=dataset.pk).values() for caption_id, *_ in entry.requests}
        & copies
    )
    annotator = make_user("corpus-reader", "annotator")
    client = Client()
    client.force_login(annotator)
    listed = client.get("/api/captions/", {"dataset": dataset.name, "page_size": 500}).json()
    ids = set()
    while True:
        ids |= {row["id"] for row in listed["results"]}
        if not listed["next"]:
            break
        listed = client.get(listed["next"].removeprefix("http://testserver")).json()
    assert ids and not ids & copies
