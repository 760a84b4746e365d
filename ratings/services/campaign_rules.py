"""The rules a requested campaign must meet before anything is written, one function each.

The campaign form, `POST /api/campaigns/` and the raters endpoint call these same functions (the form in its
`clean()`, so each refusal sits beside its field; `campaign_request_setup` again, so no entry point can skip
one). A breach raises CampaignRuleError naming the request field it concerns: both entry points use the same
field names (`count_hc`, `judgements_per_item`, `raters`).

Who judges a campaign's items:
- In-house raters: an item gets `judgements_per_item` judgements from distinct raters, so at least that many
  raters are needed, and each of them holds the rater role (admins pass every role check).
- Crowd-only (the campaign is made to be published as a study): no in-house raters at all; the study's
  participants take the items in shares, as many participants as the items need. The HI-donor rule holds for
  the crowd by construction: donor clips (whose captions the HI pairs borrow) are never items of the campaign,
  so no participant of its study hears them. Participants of earlier studies are kept out by naming those
  studies' campaigns under the study's excluded campaigns.
"""

from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from accounts.roles import RATER, user_has_role
from corpus.models import CaptioningSystem, Clip, Dataset
from ratings.models import Campaign, CaptionPair
from ratings.services.campaigns import DEFAULT_JUDGEMENTS, CampaignSetupError, campaign_setup

PAIRWISE_SPLITS = (CaptionPair.Split.HC, CaptionPair.Split.HI, CaptionPair.Split.HM, CaptionPair.Split.MM)


class CampaignRuleError(CampaignSetupError):
    """A requested campaign breaks a rule; `field` names the request field to change."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field


def split_count_field(split: str) -> str:
    """The request field holding the pair count of `split` ("HC" -> "count_hc")."""
    return f"count_{split.lower()}"


def campaign_split_counts_check(*, task_type: str, split_counts: dict[str, int]) -> None:
    """A pairwise campaign needs pairs of at least one split: its items are the generated pairs."""
    if task_type == Campaign.TaskType.PAIRWISE and not any(split_counts.get(split) for split in PAIRWISE_SPLITS):
        raise CampaignRuleError(
            "a pairwise campaign needs a count for at least one split",
            field=split_count_field(CaptionPair.Split.HC),
        )


def campaign_judgements_check(
    *, task_type: str, judgements_per_item: int | None, rater_count: int, crowd_only: bool
) -> None:
    """N judgements per item need N in-house raters (nobody judges an item twice), unless the campaign is
    crowd-only, which has no in-house raters at all."""
    if crowd_only:
        if rater_count:
            raise CampaignRuleError(
                f"a crowd-only campaign has no in-house raters, and {rater_count} "
                f"{'is' if rater_count == 1 else 'are'} ticked: untick them, or untick crowd-only",
                field="raters",
            )
        return
    judgements = judgements_per_item or DEFAULT_JUDGEMENTS.get(task_type, 1)
    if rater_count < judgements:
        raise CampaignRuleError(
            f"{judgements} judgements per item need at least {judgements} raters (nobody judges an item "
            f"twice), and {rater_count} {'is' if rater_count == 1 else 'are'} ticked: "
            "lower the number, tick more raters, or make the campaign crowd-only (for a study).",
            field="judgements_per_item",
        )


def campaign_raters_role_check(*, raters: Sequence[AbstractBaseUser]) -> None:
    """Only accounts holding the rater role judge a campaign's items (admins pass every role check)."""
    not_raters = sorted(rater.get_username() for rater in raters if not user_has_role(rater, RATER))
    if not_raters:
        raise CampaignRuleError(f"not in the rater group: {', '.join(not_raters)}", field="raters")


def campaign_request_check(
    *,
    task_type: str,
    split_counts: dict[str, int],
    judgements_per_item: int | None,
    raters: Sequence[AbstractBaseUser],
    crowd_only: bool,
) -> None:
    """Every rule of a requested campaign, in the order the form shows them; the first breach is raised."""
    campaign_split_counts_check(task_type=task_type, split_counts=split_counts)
    campaign_raters_role_check(raters=raters)
    campaign_judgements_check(
        task_type=task_type, judgements_per_item=judgements_per_item, rater_count=len(raters), crowd_only=crowd_only
    )


@transaction.atomic
def campaign_request_setup(
    *,
    name: str,
    dataset: Dataset,
    task_type: str,
    seed: int = 0,
    judgements_per_item: int | None = None,
    clips: Sequence[Clip] | None = None,
    systems: Sequence[CaptioningSystem] | None = None,
    human_captions_per_clip: int = 0,
    split_counts: dict[str, int],
    gold_from_hi: bool = False,
    raters: Sequence[AbstractBaseUser] = (),
    crowd_only: bool = False,
    title: str = "",
    requires_huggins: bool = False,
) -> Campaign:
    """A campaign as an admin requests it (form or API): the rules checked, then `campaign_setup` (donor
    planning, captions or pairs, balanced shares), all in one transaction: a refusal at any step writes nothing.
    """
    campaign_request_check(
        task_type=task_type,
        split_counts=split_counts,
        judgements_per_item=judgements_per_item,
        raters=raters,
        crowd_only=crowd_only,
    )
    return campaign_setup(
        name=name,
        dataset=dataset,
        task_type=task_type,
        seed=seed,
        judgements_per_item=judgements_per_item,
        clips=clips,
        systems=systems,
        human_captions_per_clip=human_captions_per_clip,
        split_counts=split_counts,
        gold_from_hi=gold_from_hi,
        raters=list(raters),
        title=title,
        requires_huggins=requires_huggins,
    )
