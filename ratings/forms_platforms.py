"""Forms of the platform actions page (ratings/views_platforms.py)."""

import re

from django import forms

COUNTRY = re.compile(r"^[A-Z]{2}$")


class ProlificLinkForm(forms.Form):
    prolific_study_id = forms.CharField(label="Prolific STUDY_ID", max_length=24, min_length=24)


class BonusForm(forms.Form):
    bonus_text = forms.CharField(
        label="Bonuses, one per line: participant id,amount",
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        max_length=20000,
    )
    bonus_reason = forms.CharField(label="Reason shown to the participant", max_length=500, required=False)
    screen_out_pay = forms.DecimalField(
        label="Screen-out payment per submission (Prolific, study currency)",
        min_value=0.1,
        max_value=100,
        decimal_places=2,
        required=False,
    )


class ActiveLimitForm(forms.Form):
    active_limit = forms.IntegerField(
        label="Pause on Prolific with this many participants in progress (0: off)", min_value=0, max_value=100000
    )


class HitForm(forms.Form):
    title = forms.CharField(max_length=128)
    description = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    keywords = forms.CharField(max_length=1000, required=False)
    reward = forms.DecimalField(min_value=0.01, max_value=100, decimal_places=2, label="Reward (USD)")
    max_assignments = forms.IntegerField(min_value=1, max_value=1000000)
    duration_minutes = forms.IntegerField(min_value=1, max_value=24 * 60, label="Time allotted (minutes)")
    lifetime_hours = forms.IntegerField(min_value=1, max_value=24 * 365, label="Available for (hours)")
    auto_approval_days = forms.IntegerField(min_value=0, max_value=30, initial=3, label="Auto-approve after (days)")
    approval_rate_min = forms.IntegerField(
        min_value=0, max_value=100, required=False, initial=95, label="Approval rate at least (%)"
    )
    locales = forms.CharField(max_length=200, required=False, initial="US", label="Countries (e.g. US GB)")
    excluded_qualification_id = forms.CharField(
        max_length=64, required=False, label="Not in earlier studies: their qualification type id"
    )

    def clean_locales(self) -> list[str]:
        codes = self.cleaned_data["locales"].replace(",", " ").upper().split()
        bad = [code for code in codes if not COUNTRY.match(code)]
        if bad:
            raise forms.ValidationError(f"countries are two-letter codes (ISO 3166); not {', '.join(bad)[:60]}")
        return codes
