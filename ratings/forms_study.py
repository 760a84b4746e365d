"""Forms of the crowd study pages: publishing and settings (admins), the participant's questionnaire answers."""

from django import forms

from ratings.models import Campaign
from ratings.models_study import RECRUITING_PLATFORMS, Study
from ratings.services.studies import (
    DEFAULT_CONSENT,
    DEFAULT_QUESTIONNAIRE,
    questionnaire_parse,
    questionnaire_text,
)
from ratings.services.study_policy import currency_error
from ratings.services.study_shares import StudySetupError


class StudySettingsForm(forms.Form):
    """What an admin sets when publishing a campaign as a study (and may change later)."""

    platforms = forms.MultipleChoiceField(
        choices=[(platform.value, platform.label) for platform in RECRUITING_PLATFORMS],
        widget=forms.CheckboxSelectMultiple,
        initial=["prolific"],
        help_text="Where participants come from; one link serves them all, each platform's parameters tell who came "
        "from where: Prolific (PROLIFIC_PID, STUDY_ID, SESSION_ID), MTurk (workerId, assignmentId, hitId, "
        "turkSubmitTo), any panel (pid). Each participant ends on their own platform's terms.",
    )
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="What participants read on the landing page. Leave out dataset, system and split names.",
    )
    estimated_minutes = forms.IntegerField(label="Estimated minutes", min_value=1, max_value=600, initial=20)
    reward = forms.DecimalField(min_value=0, max_digits=8, decimal_places=2, initial=0)
    reward_currency = forms.CharField(max_length=3, initial="GBP")
    minimum_hourly_pay = forms.DecimalField(
        min_value=0,
        max_digits=8,
        decimal_places=2,
        required=False,
        help_text="A median effective hourly pay below this shows a warning (blank: none).",
    )
    consent_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), initial=DEFAULT_CONSENT)
    questionnaire_text = forms.CharField(
        label="Questionnaire",
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        required=False,
        initial=DEFAULT_QUESTIONNAIRE,
        help_text="One question per line: key | question | choice ; choice ; … (no choices: free text); "
        "a trailing * makes it required. Empty: no questionnaire.",
    )
    screens = forms.ChoiceField(choices=Study.Screens.choices, initial=Study.Screens.ANTIPHASE)
    screen_attempts = forms.IntegerField(
        min_value=1, max_value=5, initial=2, help_text="Attempts per screen; failing all ends with the screen-out code."
    )
    items_per_participant = forms.IntegerField(min_value=1, max_value=500, initial=20)
    attention_checks = forms.IntegerField(
        min_value=0,
        max_value=20,
        initial=4,
        help_text="Pairwise: gold HI pairs added to each share. THumBS: catch captions (a caption of another "
        "clip, which must get precision ≤ 2) put among the captions of that many items.",
    )
    time_limit_minutes = forms.IntegerField(
        label="Time limit (minutes)",
        min_value=1,
        max_value=1440,
        initial=60,
        help_text="A share is reserved this long; then it goes to others.",
    )
    exclude_failed_checks = forms.IntegerField(
        label="Failed checks that exclude",
        min_value=0,
        max_value=20,
        initial=2,
        help_text="Exclude at this many failed checks (0: never).",
    )
    exclude_median_seconds_below = forms.FloatField(
        label="Shortest median seconds per item",
        min_value=0,
        initial=0,
        help_text="Exclude when the median time per item is below this (0: never).",
    )
    exclude_same_answer = forms.BooleanField(
        required=False, initial=True, label="Exclude the same answer on every item"
    )
    mturk_screen_out_pay = forms.BooleanField(
        required=False,
        label="MTurk: pay workers who fail the headphone screen",
        help_text="Off: they are asked to return the HIT (MTurk has no screen-out payment). On: they submit the HIT "
        "with the screen-out code and the pay CSV marks it approve.",
    )
    redirect_url = forms.URLField(
        label="Redirect URL",
        required=False,
        assume_scheme="https",
        max_length=500,
        help_text='Any panel: where the end page sends participants; "{code}" becomes their code.',
    )
    completion_code = forms.CharField(
        required=False,
        max_length=16,
        help_text="The code a participant who finishes gets (Prolific: paste the completion code Prolific shows "
        "for the study). Letters and digits; blank: a random one.",
    )
    screen_out_code = forms.CharField(
        required=False,
        max_length=16,
        help_text="The code of a participant screened out (Prolific: the screen-out code, if the study pays "
        "screen-outs). Letters and digits; blank: a random one.",
    )
    excluded_campaigns = forms.ModelMultipleChoiceField(
        queryset=Campaign.objects.filter(study__isnull=False).order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Participants of these campaigns' studies (same platform id) may not take part.",
    )

    def __init__(self, *args, campaign: Campaign, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["excluded_campaigns"].queryset = (
            Campaign.objects.filter(study__isnull=False).exclude(pk=campaign.pk).order_by("name")
        )
        if campaign.task_type == Campaign.TaskType.THUMBS:
            self.fields["attention_checks"].initial = 2

    @classmethod
    def initial_from(cls, study: Study) -> dict:
        initial = {name: getattr(study, name) for name in cls.base_fields if hasattr(study, name)}
        initial["questionnaire_text"] = questionnaire_text(study.questionnaire)
        initial["excluded_campaigns"] = list(study.excluded_campaigns.all())
        return initial

    def clean_questionnaire_text(self) -> list[dict]:
        try:
            return questionnaire_parse(self.cleaned_data["questionnaire_text"])
        except StudySetupError as error:
            raise forms.ValidationError(str(error)) from None

    def clean_reward_currency(self) -> str:
        value = self.cleaned_data["reward_currency"].strip().upper()
        if len(value) != 3 or not value.isalpha():
            raise forms.ValidationError("Use a three-letter currency code, e.g. GBP or USD.")
        return value

    def clean(self) -> dict:
        data = super().clean()
        error = currency_error(data.get("platforms") or [], data.get("reward_currency", ""))
        if error:
            self.add_error("reward_currency", error)
        return data

    def settings(self) -> dict:
        """The cleaned values as study settings (service keywords)."""
        data = dict(self.cleaned_data)
        data["questionnaire"] = data.pop("questionnaire_text")
        data.pop("excluded_campaigns")
        for code in ("completion_code", "screen_out_code"):
            data[code] = data[code].strip()
            if not data[code]:
                del data[code]  # blank: the study keeps its code (a new study gets a random one)
        return data
