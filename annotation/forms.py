"""Forms of the annotation workspace pages (campaign creation, skipping a clip, sending work back)."""

import random

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q

from accounts.roles import ANNOTATOR, REVIEWER
from corpus.models import Clip, Dataset


def _users_with_role(role: str):
    return get_user_model().objects.filter(Q(groups__name=role)).distinct().order_by("username")


class AnnotationCampaignForm(forms.Form):
    name = forms.SlugField(max_length=100, help_text="Letters, digits, - and _ (shown to annotators)")
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    annotations_per_clip = forms.IntegerField(
        min_value=1, max_value=20, initial=3, help_text="Independent annotations each clip collects before review"
    )
    seed = forms.IntegerField(initial=0, help_text="Seeds each annotator's own random order (and the clip sample)")
    clip_count = forms.IntegerField(
        min_value=1, required=False, help_text="A random sample of this many clips (empty: every clip of the dataset)"
    )
    clip_ids = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Or list the clips by external id (one per line or comma-separated)",
    )
    annotators = forms.ModelMultipleChoiceField(
        queryset=_users_with_role(ANNOTATOR), widget=forms.CheckboxSelectMultiple
    )
    reviewers = forms.ModelMultipleChoiceField(
        queryset=_users_with_role(REVIEWER),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Nobody ticked: every reviewer may review",
    )
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Accounts made after the form class was loaded must show up.
        self.fields["annotators"].queryset = _users_with_role(ANNOTATOR)
        self.fields["reviewers"].queryset = _users_with_role(REVIEWER)

    def clean(self):
        data = super().clean()
        dataset = data.get("dataset")
        if dataset is None:
            return data
        clips = Clip.objects.filter(dataset=dataset).order_by("external_id")
        wanted = [part.strip() for part in (data.get("clip_ids") or "").replace(",", "\n").splitlines() if part.strip()]
        if wanted:
            found = {clip.external_id: clip for clip in clips.filter(external_id__in=wanted)}
            missing = [external_id for external_id in wanted if external_id not in found]
            if missing:
                self.add_error("clip_ids", f"not clips of {dataset.name}: {', '.join(missing[:10])}")
            data["clips"] = list(found.values())
        else:
            data["clips"] = list(clips)
            if data.get("clip_count") and data["clip_count"] < len(data["clips"]):
                data["clips"] = random.Random(data.get("seed", 0)).sample(data["clips"], data["clip_count"])
        if not data["clips"]:
            self.add_error("dataset", f"{dataset.name} has no clips")
        return data
