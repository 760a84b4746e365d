"""Publishing a campaign as a crowd study, its settings, and opening or closing it.

Publishing checks that the campaign can supply what the study asks for (items to cover, gold pairs or clips
for the attention checks), creates the study with fresh random link and codes, and makes the item slots.
Closing a study closes its campaign: nobody new arrives, and participants in progress see a "closed" page.
"""

import re

from django.db import transaction

from ratings.models import Campaign
from ratings.models_study import RECRUITING_PLATFORMS, Study
from ratings.services.study_policy import currency_error
from ratings.services.study_shares import StudySetupError, study_setup_check, study_slots_create

DEFAULT_CONSENT = (
    "You are invited to take part in a research study on how well written descriptions match short sound "
    "recordings. You will listen to clips over headphones and judge descriptions of them. Taking part is "
    "voluntary: you can stop at any time by closing this page or returning the study on your platform. "
    "Your answers are stored with a random identifier, never with your name; your platform identifier is "
    "used only to pay you. There are no known risks beyond those of everyday computer use; keep the volume "
    "at a comfortable level."
)
# One question per line: key | question | choice ; choice ; ... (no choices: free text). A trailing * : required.
DEFAULT_QUESTIONNAIRE = "\n".join(
    [
        "age_band | Your age | 18-24 ; 25-34 ; 35-44 ; 45-54 ; 55-64 ; 65 or over ; Prefer not to say *",
        "hearing | Do you have any hearing difficulties? | No ; Yes ; Prefer not to say *",
        "native_language | Your native language |",
        "device | What are you listening with? | Over-ear headphones ; On-ear headphones ; In-ear earphones ; Other *",
        "headphone_model | Headphone model (if you know it) |",
    ]
)
QUESTION_KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
STUDY_SETTING_FIELDS = (
    "platforms",
    "description",
    "estimated_minutes",
    "reward",
    "reward_currency",
    "minimum_hourly_pay",
    "consent_text",
    "questionnaire",
    "screens",
    "screen_attempts",
    "items_per_participant",
    "attention_checks",
    "time_limit_minutes",
    "exclude_failed_checks",
    "exclude_median_seconds_below",
    "exclude_same_answer",
    "mturk_screen_out_pay",
    "redirect_url",
    "completion_code",
    "screen_out_code",
)
#: what a platform's code may hold: Prolific's completion codes are letters and digits (it makes 8 of them)
STUDY_CODE_CHARACTERS = re.compile(r"[A-Za-z0-9]{1,16}")


def questionnaire_parse(text: str) -> list[dict]:
    """Questions from the one-per-line form (see DEFAULT_QUESTIONNAIRE); StudySetupError names the bad line."""
    questions, keys = [], set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        required = line.rstrip().endswith("*")
        parts = [part.strip() for part in line.rstrip().rstrip("*").split("|")]
        if len(parts) < 2 or len(parts) > 3:
            raise StudySetupError(f"questionnaire line {number}: expected 'key | question | choice ; choice'")
        key, label = parts[0], parts[1]
        if not QUESTION_KEY.match(key):
            raise StudySetupError(f"questionnaire line {number}: key {key!r} must be lower-case letters, digits, _")
        if key in keys:
            raise StudySetupError(f"questionnaire line {number}: key {key!r} is used twice")
        if not label:
            raise StudySetupError(f"questionnaire line {number}: the question is empty")
        choices = [choice.strip() for choice in parts[2].split(";") if choice.strip()] if len(parts) == 3 else []
        keys.add(key)
        questions.append({"key": key, "label": label, "choices": choices, "required": required})
    return questions


def questionnaire_text(questions: list[dict]) -> str:
    """The one-per-line form of stored questions (for editing)."""
    lines = []
    for question in questions:
        line = f"{question['key']} | {question['label']} | {' ; '.join(question['choices'])}".rstrip()
        lines.append(line + (" *" if question.get("required") else ""))
    return "\n".join(lines)


def _validated(study: Study) -> Study:
    if study.campaign.task_type not in Campaign.TaskType.values:
        raise StudySetupError("unknown task type")
    if study.campaign.origin != Campaign.Origin.APP:
        raise StudySetupError("a study run outside the app (workbooks) cannot be published as a crowd study")
    _platforms_check(study)
    study_setup_check(study)
    _codes_check(study)
    return study


def _platforms_check(study: Study) -> None:
    """At least one known platform, each once, stored in the pages' order; the reward currency suits every one."""
    chosen = set(study.platforms or [])
    known = {platform.value for platform in RECRUITING_PLATFORMS}
    if not chosen:
        raise StudySetupError("platforms: choose at least one platform to recruit on")
    if chosen - known:
        raise StudySetupError(f"platforms: unknown platform {sorted(chosen - known)[0]!r}")
    study.platforms = [platform.value for platform in RECRUITING_PLATFORMS if platform.value in chosen]
    error = currency_error(study.platforms, study.reward_currency)
    if error:
        raise StudySetupError(error)


def _codes_check(study: Study) -> None:
    """An experimenter may set the codes to the platform's own (Prolific shows its completion code); each must
    be letters and digits, and the endings' codes must differ, or the pay CSV could not tell them apart."""
    codes = {
        "completion_code": study.completion_code,
        "screen_out_code": study.screen_out_code,
        "no_consent_code": study.no_consent_code,
        "full_code": study.full_code,
    }
    for name, code in codes.items():
        if not STUDY_CODE_CHARACTERS.fullmatch(code or ""):
            raise StudySetupError(f"{name} {code!r}: use 1 to 16 letters and digits")
    seen = {}
    for name, code in codes.items():
        if code.upper() in seen:
            raise StudySetupError(f"{name} equals {seen[code.upper()]}: each ending needs its own code")
        seen[code.upper()] = name


def _platforms_kept(study: Study) -> None:
    """A platform participants came from stays: their pay CSV, platform actions and end pages need it."""
    arrived = set(study.participants.filter(is_preview=False).values_list("platform", flat=True).distinct())
    dropped = sorted(arrived - set(study.platforms or []))
    if dropped:
        raise StudySetupError(f"platforms: participants came from {dropped[0]}, so the study keeps recruiting on it")


@transaction.atomic
def study_publish(*, campaign: Campaign, excluded_campaigns=(), **settings) -> Study:
    """Publish the campaign as a crowd study (StudySetupError, nothing written, when it cannot be)."""
    if Study.objects.filter(campaign=campaign).exists():
        raise StudySetupError(f"campaign {campaign.name} is already published as a study")
    unknown = set(settings) - set(STUDY_SETTING_FIELDS)
    if unknown:
        raise StudySetupError(f"unknown study setting {sorted(unknown)[0]}")
    study = _validated(Study(campaign=campaign, **settings))
    study.save()
    study.excluded_campaigns.set([other for other in excluded_campaigns if other.pk != campaign.pk])
    study_slots_create(study)
    return study


@transaction.atomic
def study_settings_update(*, study: Study, excluded_campaigns=None, **settings) -> Study:
    """Change a published study's settings; the share size and checks apply to participants who start later."""
    study = Study.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=study.pk)
    unknown = set(settings) - set(STUDY_SETTING_FIELDS)
    if unknown:
        raise StudySetupError(f"unknown study setting {sorted(unknown)[0]}")
    for name, value in settings.items():
        setattr(study, name, value)
    _platforms_kept(study)
    _validated(study).save()
    if excluded_campaigns is not None:
        study.excluded_campaigns.set([other for other in excluded_campaigns if other.pk != study.campaign_id])
    return study


@transaction.atomic
def study_open_set(*, study: Study, is_open: bool) -> Study:
    """Close (no new arrivals, no more answers) or reopen the study by closing or reopening its campaign."""
    campaign = Campaign.objects.select_for_update().get(pk=study.campaign_id)
    campaign.is_active = is_open
    campaign.save(update_fields=["is_active", "updated_at"])
    study.campaign = campaign
    return study
