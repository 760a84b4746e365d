"""Who judges a campaign's items, checked before it is created: in-house raters, or the crowd of a study.

- In-house raters: an item gets `judgements_per_item` judgements from distinct raters, so at least that many
  raters are needed.
- Crowd-only (the campaign is made to be published as a study): no in-house raters at all; the study's
  participants take the items in shares, as many participants as the items need. The HI-donor rule holds for
  the crowd by construction: donor clips (whose captions the HI pairs borrow) are never items of the campaign,
  so no participant of its study hears them. Participants of earlier studies are kept out by naming those
  studies' campaigns under the study's excluded campaigns.
"""

from ratings.services.campaigns import DEFAULT_JUDGEMENTS, CampaignSetupError


def campaign_raters_check(
    *, task_type: str, judgements_per_item: int | None, rater_count: int, crowd_only: bool
) -> None:
    """Raise CampaignSetupError, saying what to change, when the raters cannot give the items their judgements."""
    if crowd_only:
        if rater_count:
            raise CampaignSetupError(
                f"a crowd-only campaign has no in-house raters, and {rater_count} "
                f"{'is' if rater_count == 1 else 'are'} ticked: untick them, or untick crowd-only"
            )
        return
    judgements = judgements_per_item or DEFAULT_JUDGEMENTS.get(task_type, 1)
    if rater_count < judgements:
        raise CampaignSetupError(
            f"{judgements} judgements per item need at least {judgements} raters (nobody judges an item "
            f"twice), and {rater_count} {'is' if rater_count == 1 else 'are'} ticked: "
            "lower the number, tick more raters, or make the campaign crowd-only (for a study)."
        )
