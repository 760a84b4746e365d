"""Forms of the rating pages and the campaign administration pages.

Rating forms name their fields by the caption's position on the page (`precision_1`, ...)
rather than by caption id, so the page carries nothing that hints at where a caption came
from (ids grow in import order, and references are usually imported first).
"""

import re
from decimal import Decimal

from django import forms
from django.contrib.auth import get_user_model
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db.models import Q

from accounts.roles import RATER
from annotation.models import CaptioningSystem, Clip, Dataset
from ratings.models import Campaign, ThumbsRating
from ratings.services.headphone import TRIAL_COUNT
from ratings.services.judgements import CaptionScores

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


def _penalty_field() -> forms.DecimalField:
    return forms.DecimalField(
        max_digits=2,
        decimal_places=1,
        initial=Decimal("0"),
        validators=[MinValueValidator(Decimal("-2")), MaxValueValidator(Decimal("0"))],
    )


class ThumbsItemForm(forms.Form):
    """One clip: five scores and a comment per caption (numbered 1..n on the page), plus 'synthesized?'."""

    synthesized = forms.ChoiceField(
        choices=[(ThumbsRating.Synthesized.YES, "Yes"), (ThumbsRating.Synthesized.NO, "No")], widget=forms.RadioSelect
    )

    def __init__(self, *args, caption_count: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.caption_count = caption_count
        for number in range(1, caption_count + 1):
            self.fields[f"precision_{number}"] = forms.TypedChoiceField(choices=SCORE_CHOICES, coerce=int)
            self.fields[f"recall_{number}"] = forms.TypedChoiceField(choices=SCORE_CHOICES, coerce=int)
            for name in PENALTY_FIELDS:
                self.fields[f"{name}_{number}"] = _penalty_field()
            self.fields[f"comment_{number}"] = forms.CharField(required=False, max_length=2000)

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


class PairwiseItemForm(forms.Form):
    side = forms.ChoiceField(choices=[("left", "Left"), ("right", "Right"), ("none", "No preference")])


class HeadphoneAnswersForm(forms.Form):
    """Which of the three tones was quietest, per trial (1..3 on the page, 0..2 in the service)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for number in range(1, TRIAL_COUNT + 1):
            self.fields[f"trial_{number}"] = forms.TypedChoiceField(
                choices=[("1", "1"), ("2", "2"), ("3", "3")], coerce=int, widget=forms.RadioSelect
            )

    def answers(self) -> list[int]:
        return [self.cleaned_data[f"trial_{number}"] - 1 for number in range(1, TRIAL_COUNT + 1)]


class RaterChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, user) -> str:
        return user.get_username()


class CampaignCreateForm(forms.Form):
    name = forms.SlugField(max_length=100, help_text="Letters, digits, - and _; unique.")
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    task_type = forms.ChoiceField(choices=Campaign.TaskType.choices, initial=Campaign.TaskType.PAIRWISE)
    judgements_per_item = forms.IntegerField(
        min_value=1,
        max_value=50,
        required=False,
        help_text="Blank: 4 for pairwise (as in the FENSE data), 3 for THumBS.",
    )
    seed = forms.IntegerField(initial=0, help_text="The same seed on the same data gives the same pairs and orders.")
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
    raters = RaterChoiceField(
        queryset=get_user_model().objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        user_model = get_user_model()
        self.fields["raters"].queryset = (
            user_model.objects.filter(is_active=True)
            # Admins pass every role check, so they can rate too.
            .filter(Q(groups__name=RATER) | Q(is_staff=True) | Q(is_superuser=True))
            .distinct()
            .order_by(user_model.USERNAME_FIELD)
        )

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Campaign.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a campaign named {name} already exists")
        return name

    def clean(self) -> dict:
        data = super().clean()
        dataset = data.get("dataset")
        if dataset is None:
            return data
        wanted = [token for token in re.split(r"[\s,;]+", data.get("clip_ids") or "") if token]
        if wanted:
            found = {clip.external_id: clip for clip in Clip.objects.filter(dataset=dataset, external_id__in=wanted)}
            missing = [token for token in wanted if token not in found]
            if missing:
                self.add_error("clip_ids", f"not in {dataset.name}: {', '.join(missing[:10])}")
            data["clips"] = [found[token] for token in dict.fromkeys(wanted) if token in found]
        else:
            data["clips"] = None
        data["split_counts"] = {split: data.get(f"count_{split.lower()}") or 0 for split in ("HC", "HI", "HM", "MM")}
        if data.get("task_type") == Campaign.TaskType.PAIRWISE and not any(data["split_counts"].values()):
            self.add_error("count_hc", "a pairwise campaign needs a count for at least one split")
        return data
