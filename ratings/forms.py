"""Forms of the rating pages and the campaign administration pages.

Rating forms name their fields by the caption's position on the page (`precision_1`, ...)
rather than by caption id, so the page carries nothing that hints at where a caption came
from (ids grow in import order, and references are usually imported first).
"""

import re
from decimal import Decimal

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db.models import Q

from accounts.roles import RATER
from accounts.selectors import people_who_can_sign_in
from annotation.selectors import dataset_clips_named
from corpus.models import CaptioningSystem, Dataset
from ratings import projection
from ratings.models import Assignment, Campaign, ThumbsRating
from ratings.services.campaign_rules import (
    PAIRWISE_SPLITS,
    CampaignRuleError,
    campaign_judgements_check,
    campaign_raters_role_check,
    campaign_split_counts_check,
    split_count_field,
)
from ratings.services.campaigns import DEFAULT_JUDGEMENTS, campaign_name_clash
from ratings.services.judgements import PLAIN_PENALTY, PLAIN_VERSION, CaptionScores

SCORE_CHOICES = [(str(value), str(value)) for value in range(1, 6)]
PENALTY_FIELDS = ("fluency", "conciseness", "irrelevance")
# The rubric given to THumBS raters (shared/papers/thumbs_rater_instructions.txt), shown beside each score.
RUBRIC = {
    "precision": "How precise the caption is given the soundscape: does what it says match what you hear?",
    "recall": "How much of the salient information (objects, attributes, relations) in the soundscape "
    "the caption covers.",
    "fluency": "Quality as English text. -0.1 for a problem a grammar checker would fix; -0.5 or more for "
    "severe problems such as duplication, ambiguity or broken sentences.",
    "conciseness": "Penalty for repetitive descriptions: the same idea or object repeated, even in other words.",
    "irrelevance": "Penalty for irrelevant details or for sound sources that are not present in the soundscape.",
}
PENALTY_PRESETS = ("0", "-0.1", "-0.5", "-1", "-2")


class PlainPenaltyField(forms.DecimalField):
    """A penalty typed plainly ("-0.5"): padded text or an exponent ("-5e-1") is refused, not read as a number."""

    def to_python(self, value):
        if isinstance(value, str) and value not in self.empty_values and not PLAIN_PENALTY.fullmatch(value):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class PlainVersionField(forms.IntegerField):
    """The item version a page was built from: digits only ("1.0", " 1" and "0.5" are refused)."""

    def to_python(self, value):
        if isinstance(value, str) and value not in self.empty_values and not PLAIN_VERSION.fullmatch(value):
            raise forms.ValidationError("The page's item version is not valid; reload the page.", code="invalid")
        return super().to_python(value)


def _penalty_field(*, label: str) -> forms.DecimalField:
    return PlainPenaltyField(
        label=label,
        max_digits=2,
        decimal_places=1,
        initial=Decimal("0"),
        validators=[
            MinValueValidator(Decimal("-2"), message="Penalties go from -2 to 0."),
            MaxValueValidator(Decimal("0"), message="Penalties go from -2 to 0."),
        ],
        error_messages={
            "invalid": "Type a number from -2 to 0, e.g. -0.5.",
            "max_decimal_places": "Use at most one decimal, e.g. -0.5.",
            "max_digits": "Type a number from -2 to 0, e.g. -0.5.",
        },
    )


class ItemVersionForm(forms.Form):
    """What every item form carries: the item version the page was built from, and whether the rater
    chose to replace a newer answer (after a conflict was shown)."""

    version = PlainVersionField(min_value=0, widget=forms.HiddenInput)
    replacing = forms.BooleanField(required=False, widget=forms.HiddenInput)


class ThumbsItemForm(ItemVersionForm):
    """One clip: five scores and a comment per caption (numbered 1..n on the page), plus 'synthesized?'."""

    synthesized = forms.ChoiceField(
        label="Is this audio synthesized?",
        choices=[(ThumbsRating.Synthesized.YES, "Yes"), (ThumbsRating.Synthesized.NO, "No")],
        widget=forms.RadioSelect,
        error_messages={"required": "Answer yes or no."},
    )

    def __init__(self, *args, caption_count: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.caption_count = caption_count
        for number in range(1, caption_count + 1):
            for name in ("precision", "recall"):
                self.fields[f"{name}_{number}"] = forms.TypedChoiceField(
                    label=f"Caption {number}: {name}",
                    choices=SCORE_CHOICES,
                    coerce=int,
                    error_messages={"required": "Choose a score from 1 to 5."},
                )
            for name in PENALTY_FIELDS:
                self.fields[f"{name}_{number}"] = _penalty_field(label=f"Caption {number}: {name}")
            self.fields[f"comment_{number}"] = forms.CharField(
                label=f"Caption {number}: comment", required=False, max_length=2000
            )

    def caption_scores(self, caption_order: list[int]) -> list[CaptionScores]:
        data = self.cleaned_data
        return [
            CaptionScores(
                caption_id=caption_id,
                precision=data[f"precision_{number}"],
                recall=data[f"recall_{number}"],
                fluency=data[f"fluency_{number}"],
                conciseness=data[f"conciseness_{number}"],
                irrelevance=data[f"irrelevance_{number}"],
                comment=data[f"comment_{number}"],
            )
            for number, caption_id in enumerate(caption_order, start=1)
        ]


class PairwiseItemForm(ItemVersionForm):
    side = forms.ChoiceField(
        label="Which caption describes the clip better?",
        choices=[(projection.LEFT, "Left"), (projection.RIGHT, "Right"), (projection.NONE, "No preference")],
        error_messages={"required": "Choose caption A, caption B or no preference."},
    )


class HeadphoneAnswersForm(forms.Form):
    """The rater's choice per trial (1..3 on the page, 0..2 in the service)."""

    def __init__(self, *args, trial_count: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.trial_count = trial_count
        for number in range(1, trial_count + 1):
            self.fields[f"trial_{number}"] = forms.TypedChoiceField(
                label=f"Trial {number}",
                choices=[("1", "1"), ("2", "2"), ("3", "3")],
                coerce=int,
                widget=forms.RadioSelect,
                error_messages={"required": f"Trial {number}: choose sound 1, 2 or 3."},
            )

    def answers(self) -> list[int]:
        return [self.cleaned_data[f"trial_{number}"] - 1 for number in range(1, self.trial_count + 1)]


class RaterChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, user) -> str:
        return user.get_username()


class CampaignCreateForm(forms.Form):
    """The campaign form. Fields marked for one task type (see TASK_FIELDS) are shown only for it on the
    page and ignored for the other; an item never gets more judgements than there are raters, unless the campaign
    is crowd-only (the rules: ratings/services/campaign_rules.py)."""

    TASK_FIELDS = {
        Campaign.TaskType.THUMBS: ("human_captions_per_clip",),
        Campaign.TaskType.PAIRWISE: ("count_hc", "count_hi", "count_hm", "count_mm", "gold_from_hi"),
    }

    name = forms.SlugField(max_length=100, help_text="Letters, digits, - and _; unique. Admins see it, raters don't.")
    title = forms.CharField(
        max_length=120,
        required=False,
        help_text='What raters see, e.g. "Caption study, spring". Leave out dataset, system and split names. '
        "Blank: the task and a number.",
    )
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    task_type = forms.ChoiceField(choices=Campaign.TaskType.choices, initial=Campaign.TaskType.PAIRWISE)
    judgements_per_item = forms.IntegerField(
        min_value=1,
        max_value=50,
        required=False,
        help_text="Blank: 4 for pairwise (as in the FENSE data), 3 for THumBS.",
    )
    seed = forms.IntegerField(
        initial=0,
        help_text="The same seed on the same data gives the same pairs and captions. Each rater's order and sides "
        "are drawn from a secret of their own, so raters cannot work them out.",
    )
    clip_ids = forms.CharField(
        label="Clips",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="External ids of the clips, separated by spaces, commas or new lines. "
        "Blank: every clip of the dataset.",
    )
    systems = forms.ModelMultipleChoiceField(
        queryset=CaptioningSystem.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Machine captions of these systems (none ticked: every system).",
    )
    human_captions_per_clip = forms.IntegerField(
        min_value=0,
        max_value=20,
        initial=1,
        required=False,
        help_text="THumBS: human captions per clip added to the machine ones.",
    )
    count_hc = forms.IntegerField(label="HC pairs", min_value=0, initial=0, required=False)
    count_hi = forms.IntegerField(label="HI pairs", min_value=0, initial=0, required=False)
    count_hm = forms.IntegerField(label="HM pairs", min_value=0, initial=0, required=False)
    count_mm = forms.IntegerField(label="MM pairs", min_value=0, initial=0, required=False)
    gold_from_hi = forms.BooleanField(
        required=False, label="Use HI pairs as gold items (the clip's own caption is the right answer)"
    )
    requires_huggins = forms.BooleanField(
        required=False,
        label="Also require the Huggins-pitch headphone screen",
        help_text="Every rater passes the antiphase screen; this adds a second one that is harder to fake "
        "(Milne et al. 2021).",
    )
    crowd_only = forms.BooleanField(
        required=False,
        label="Crowd only: no in-house raters (publish it as a crowd study afterwards)",
        help_text="The study's participants judge the items, as many as the items need; tick no raters.",
    )
    raters = RaterChoiceField(
        queryset=get_user_model().objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["raters"].queryset = rater_candidates()

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        clash = campaign_name_clash(name)
        if clash:
            raise forms.ValidationError(clash)
        return name

    def clean(self) -> dict:
        data = super().clean()
        dataset = data.get("dataset")
        if dataset is None:
            return data
        wanted = [token for token in re.split(r"[\s,;]+", data.get("clip_ids") or "") if token]
        if wanted:
            data["clips"], missing = dataset_clips_named(dataset=dataset, external_ids=wanted)
            if missing:
                self.add_error("clip_ids", f"not in {dataset.name}: {', '.join(missing[:10])}")
        else:
            data["clips"] = None
        task_type = data.get("task_type")
        # Fields of the other task type are hidden on the page; whatever they hold is ignored.
        for other_type, names in self.TASK_FIELDS.items():
            if other_type != task_type:
                for name in names:
                    data[name] = False if name == "gold_from_hi" else 0
        data["split_counts"] = {split: data.get(split_count_field(split)) or 0 for split in PAIRWISE_SPLITS}
        if task_type in DEFAULT_JUDGEMENTS:
            # Each rule on its own, so every breach shows beside its field at once (campaign_request_setup
            # checks them again, in the same functions, when the campaign is built).
            self._rule_check(campaign_split_counts_check, task_type=task_type, split_counts=data["split_counts"])
        if task_type in DEFAULT_JUDGEMENTS and "raters" in data:  # absent: the ticked raters were refused already
            raters = list(data["raters"])
            self._rule_check(campaign_raters_role_check, raters=raters)
            self._rule_check(
                campaign_judgements_check,
                task_type=task_type,
                judgements_per_item=data.get("judgements_per_item"),
                rater_count=len(raters),
                crowd_only=bool(data.get("crowd_only")),
            )
        return data

    def _rule_check(self, rule, **arguments) -> None:
        try:
            rule(**arguments)
        except CampaignRuleError as error:
            self.add_error(error.field, str(error))


class CampaignSettingsForm(forms.Form):
    title = forms.CharField(
        max_length=120, required=False, help_text="What raters see. Leave out dataset, system and split names."
    )
    is_active = forms.BooleanField(
        required=False, label="Open", help_text="Closed: raters no longer see it and cannot change their answers."
    )
    requires_huggins = forms.BooleanField(
        required=False,
        label="Also require the Huggins-pitch headphone screen",
        help_text="Raters without a valid pass are sent to it before their next item.",
    )


class CampaignRatersAddForm(forms.Form):
    raters = RaterChoiceField(
        queryset=get_user_model().objects.none(),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Tick at least one rater to add."},
    )

    def __init__(self, *args, campaign: Campaign, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["raters"].queryset = rater_candidates().exclude(assignments__campaign=campaign)

    def clean_raters(self) -> list:
        raters = list(self.cleaned_data["raters"])
        try:
            campaign_raters_role_check(raters=raters)
        except CampaignRuleError as error:
            raise forms.ValidationError(str(error)) from None
        return raters


def rater_candidates():
    """Accounts that can be raters: members of the rater group, and admins (they pass every role check), who can
    sign in. Not offered: accounts standing for imported judges or simulated raters (their judgements stay), and
    crowd participants, each of whom belongs to its study alone.
    """
    user_model = get_user_model()
    return (
        people_who_can_sign_in()
        .filter(Q(groups__name=RATER) | Q(is_staff=True) | Q(is_superuser=True))
        .filter(participant__isnull=True)
        .distinct()
        .order_by(user_model.USERNAME_FIELD)
    )


class WorkbookUploadForm(forms.Form):
    """Upload a filled THumBS workbook for one rater of one campaign (see ratings/services/workbook_import.py)."""

    file = forms.FileField(label="Filled workbook (.xlsx)")
    campaign = forms.ModelChoiceField(
        queryset=Campaign.objects.filter(task_type=Campaign.TaskType.THUMBS).order_by("name"),
        to_field_name="name",
        required=False,
        empty_label="Choose a campaign",
    )
    create_campaign = forms.BooleanField(
        required=False,
        label="This workbook comes from a study run outside the app: create a new campaign for it",
    )
    new_campaign = forms.SlugField(
        max_length=100, required=False, label="New campaign name", help_text="Letters, digits, - and _."
    )
    rater = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        to_field_name="username",
        empty_label="Choose the rater who filled it",
    )
    replace_newer = forms.BooleanField(
        required=False,
        label="Replace answers the rater changed on the web after this workbook was exported",
    )
    dry_run = forms.BooleanField(required=False, label="Dry run: check and count, write no ratings")

    def rater_options(self) -> list[tuple[str, str]]:
        """(username, space-separated THumBS campaigns they rate in): the page lists a campaign's raters only."""
        campaigns: dict[str, list[str]] = {}
        for username, campaign_name in Assignment.objects.filter(
            campaign__task_type=Campaign.TaskType.THUMBS
        ).values_list("rater__username", "campaign__name"):
            campaigns.setdefault(username, []).append(campaign_name)
        return [
            (username, " ".join(campaigns.get(username, [])))
            for username in self.fields["rater"].queryset.values_list("username", flat=True)
        ]

    def clean_file(self):
        uploaded = self.cleaned_data["file"]
        # Larger than anything a workbook may unpack to: refused before it is stored.
        if uploaded.size > settings.WORKBOOK_MAX_UNCOMPRESSED_BYTES:
            raise forms.ValidationError(
                f"{uploaded.name} is too large ({uploaded.size // (1024 * 1024)} MB) to be a workbook"
            )
        return uploaded

    def clean(self) -> dict:
        data = super().clean()
        rater = data.get("rater")
        if data.get("create_campaign"):
            name = data.get("new_campaign")
            if not name:
                self.add_error("new_campaign", "Name the campaign to create.")
            elif Campaign.objects.filter(name=name).exists():
                self.add_error("new_campaign", f"A campaign named {name} exists already; choose it above instead.")
            data["campaign_name"] = name
            return data
        campaign = data.get("campaign")
        if campaign is None:
            self.add_error(
                "campaign", "Choose the campaign (or tick 'create a new campaign' for a study run outside the app)."
            )
            return data
        data["campaign_name"] = campaign.name
        if rater is not None and not Assignment.objects.filter(campaign=campaign, rater=rater).exists():
            self.add_error(
                "rater",
                f"{rater.get_username()} is not a rater of {campaign.name}: add them on the campaign page first.",
            )
        return data
