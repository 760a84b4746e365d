"""What the review-page browser tests start from: one clip's annotation campaign whose annotators have all
submitted, each a list of events (label, sources, attributes, spans), optional relations and a note."""

from annotation.services.annotation_campaigns import annotation_campaign_create, annotation_task_next
from annotation.services.annotation_tasks import task_draft_save, task_submit


def annotation_draft(events, relations=(), note: str = "") -> dict:
    """A draft from (label, sources, attributes, spans) events and (first index, second index, kind) relations."""
    return {
        "events": [
            {"id": f"e{index + 1}", "label": label, "sources": sources, "attributes": attributes, "spans": spans}
            for index, (label, sources, attributes, spans) in enumerate(events)
        ],
        "relations": [{"first": f"e{a + 1}", "second": f"e{b + 1}", "kind": kind} for a, b, kind in relations],
        "note": note,
    }


def campaign_with_submissions(*, clip, make_user, name: str, drafts: dict[str, dict]):
    """(campaign, reviewer): a campaign on `clip` named `name`, one annotator per key of `drafts`, each of whom
    submitted their draft, and a reviewer `rev-<name>`."""
    annotators = [make_user(username, "annotator") for username in drafts]
    reviewer = make_user(f"rev-{name}", "reviewer")
    campaign = annotation_campaign_create(
        name=f"{name}-review", dataset=clip.dataset, clips=[clip], annotators=annotators, reviewers=[reviewer], seed=1
    )
    for annotator in annotators:
        task = annotation_task_next(campaign=campaign, annotator=annotator)
        saved = task_draft_save(task=task, annotator=annotator, base_version=0, draft=drafts[annotator.username])
        task_submit(task=task, annotator=annotator, base_version=saved.version, confirm_warnings=True)
    return campaign, reviewer


def review_page_open(page, base_url: str, campaign, clip) -> list[str]:
    """Open the clip's review page at 1280 px until the editor is ready; returns the list the page's script
    errors are collected in. Not waiting for "load": that waits for the audio and the spectrogram, computed on
    their first request."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{base_url}/review/campaigns/{campaign.pk}/clips/{clip.pk}/", wait_until="domcontentloaded")
    page.wait_for_selector("#review-page[data-ready=true]")
    return errors
