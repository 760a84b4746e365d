"""Forms of the People page and of the invitation link (accounts/views.py)."""

from django import forms
from django.contrib.auth.forms import SetPasswordForm

from accounts.services import MAX_INVITEES, PERSON_ROLES, AccountError, invitees_parse

ROLE_CHOICES = [(role, role.capitalize()) for role in PERSON_ROLES]


class InviteForm(forms.Form):
    people = forms.CharField(
        label="People",
        widget=forms.Textarea(attrs={"rows": 5, "placeholder": "ada@example.org\nbob bob@example.org\ncarol"}),
        help_text="One person per line: a username, an email address (it becomes the username), or both. "
        f"Up to {MAX_INVITEES} at once.",
    )
    role = forms.ChoiceField(choices=ROLE_CHOICES, widget=forms.RadioSelect, initial=PERSON_ROLES[0])

    def clean_people(self):
        try:
            return invitees_parse(text=self.cleaned_data["people"])
        except AccountError as error:
            raise forms.ValidationError(error.problems) from None


class RolesForm(forms.Form):
    roles = forms.MultipleChoiceField(choices=ROLE_CHOICES, required=False, widget=forms.CheckboxSelectMultiple)


class InvitationAcceptForm(SetPasswordForm):
    """Choose a password (Django's password rules); the username is fixed by the invitation."""
