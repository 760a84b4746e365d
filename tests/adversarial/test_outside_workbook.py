"""Attack: slip outside data into the corpus through a workbook "of a study run outside the app".

Against the old main, importing a workbook for a new campaign named like an existing dataset (`demo`)
attached the campaign to that corpus dataset, added a caption to a real clip as a human candidate and wrote
ratings on real captions. Here an admin (or anyone allowed to upload) tries it from the upload service and the
command, with record IDs equal to the corpus clips' ids: it is refused, naming the clash, and nothing is
written; under a fresh name the study gets a dataset of its own and never touches the corpus.
"""

import io

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Caption, Clip, Dataset
from ratings.models import Campaign, ThumbsRating
from ratings.services.campaigns import campaign_create
from ratings.services.workbooks import WorkbookImportError, workbook_import
from tests.ratings.workbook_helpers import outside_workbook_make, table_counts, xlsx_temporary_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def outside_workbook(make_user) -> bytes:
    return outside_workbook_make(helper=make_user("helper", "rater"))


@pytest.fixture
def corpus():
    """The corpus dataset `demo`, whose clips carry the very ids the outside workbook uses as record IDs."""
    dataset = Dataset.objects.create(name="demo")
    for number in (1, 2, 3):
        clip = Clip.objects.create(dataset=dataset, external_id=f"study-{number}.wav")
        Caption.objects.create(
            clip=clip, text=f"a real caption {number}", role="reference", author_kind="human", position=0
        )
    return dataset


def test_a_new_outside_campaign_named_like_a_dataset_is_refused_and_writes_nothing(outside_workbook, corpus, make_user):
    rater = make_user("p1")
    counts = table_counts()
    with pytest.raises(WorkbookImportError, match="'demo' is the name of an existing dataset"):
        workbook_import(
            content=outside_workbook, file_name="P1.xlsx", campaign_name="demo", rater=rater, create_campaign=True
        )
    with pytest.raises(CommandError, match="existing dataset"):
        call_command(
            "import_thumbs_workbook",
            xlsx_temporary_file(outside_workbook),
            campaign="demo",
            rater="p1",
            stderr=io.StringIO(),
        )
    assert table_counts() == counts
    assert not Campaign.objects.filter(name="demo").exists()
    assert Caption.objects.filter(clip__dataset=corpus).count() == 3 and not ThumbsRating.objects.exists()


def test_under_its_own_name_the_study_gets_its_own_dataset_and_record_ids_match_no_corpus_clip(
    outside_workbook, corpus, make_user
):
    rater = make_user("p1")
    summary = workbook_import(
        content=outside_workbook, file_name="P1.xlsx", campaign_name="outside-study", rater=rater, create_campaign=True
    )
    campaign = Campaign.objects.get(name="outside-study")
    assert campaign.dataset.name == "outside-study" and campaign.dataset != corpus
    assert summary["clips_created"] == 3 and summary["ratings_created"] == 6
    rated_clips = set(ThumbsRating.objects.values_list("caption__clip__dataset__name", flat=True))
    assert rated_clips == {"outside-study"}
    assert Caption.objects.filter(clip__dataset=corpus).count() == 3, "no caption added to a corpus clip"


def test_an_outside_campaign_left_on_a_corpus_dataset_takes_no_more_workbooks(outside_workbook, corpus, make_user):
    """A campaign made by the old code on the corpus dataset: further outside imports into it are refused."""
    rater = make_user("p1")
    legacy = campaign_create(name="legacy-outside", dataset=corpus, task_type="thumbs", origin=Campaign.Origin.OUTSIDE)
    legacy.assignments.create(rater=rater)
    counts = table_counts()
    with pytest.raises(
        WorkbookImportError, match="keeps its data in dataset demo, which other campaigns or corpus data use"
    ):
        workbook_import(content=outside_workbook, file_name="P1.xlsx", campaign_name="legacy-outside", rater=rater)
    assert table_counts() == counts
