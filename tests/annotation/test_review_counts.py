"""The review overview counts clips exactly as the campaign's clip list labels them (one definition, selectors)."""

import re

import pytest

from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_tasks import task_draft_save, task_submit
from tests.annotation.workspace_data import draft_of, workspace_build

pytestmark = pytest.mark.django_db


def submit_one(workspace, annotator) -> None:
    task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    saved = task_draft_save(
        task=task, annotator=annotator, base_version=0, draft=draft_of(("beep", ["alarm"], ["loud"]))
    )
    task_submit(task=task, annotator=annotator, base_version=saved.version, confirm_warnings=True)


def overview_counts(client) -> list[int]:
    page = client.get("/review/").content.decode()
    row = re.search(r"<tr>\s*<td><a href=\"/review/campaigns/\d+/\">ws-campaign</a></td>(.*?)</tr>", page, re.S)
    return [int(number) for number in re.findall(r'<td class="num">(\d+)</td>', row.group(1))]


def campaign_page_states(client, campaign) -> list[str]:
    page = client.get(f"/review/campaigns/{campaign.pk}/").content.decode()
    return re.findall(r'data-state="([^"]+)"', page)


@pytest.mark.parametrize("per_clip", [1, 2])
def test_review_overview_counts_agree_with_the_campaign_page(client, make_user, per_clip):
    # Given a campaign asking for `per_clip` annotations of each of 3 clips, and one clip annotated that often
    workspace = workspace_build(make_user, clip_count=3, annotator_count=2, per_clip=per_clip)
    *everything, last = workspace.annotators[:per_clip]
    for annotator in everything:
        for _ in workspace.clips:
            submit_one(workspace, annotator)
    submit_one(workspace, last)
    client.force_login(workspace.reviewer)

    # When the reviewer reads the overview and the campaign's clip list
    clips, ready, in_review, gold = overview_counts(client)
    states = campaign_page_states(client, workspace.campaign)

    # Then both say the same: one clip is ready for them (the reported bug: "Ready 0" with one annotation per clip)
    assert len(states) == clips == 3
    assert states.count("ready") == ready == 1
    assert states.count("in review") == in_review == 0 and states.count("gold") == gold == 0
