"""What each exclusion rule and each ending of a crowd study means for pay, as data (plain Python).

Prolific's published rules allow a rejection for a failed *instructional* attention check (an item that tells
the participant what to answer, e.g. "choose the left description here"; Prolific asks for at least two such
failures before a rejection) and for nonsensical answers, never for *performance*: a wrong answer to a question
that needs judgement. So each rule has a kind:

- instructional: may justify a rejection (the pay export proposes `reject`);
- performance: the participant's data are left out of every figure, but they are paid (`approve`).

Gold HI pairs, catch captions, the same answer everywhere and a short median time are performance rules: a
careless listener fails them, so does an honest one with poor hearing or a different reading of a caption.
Only an admin marks an instructional failure (the participant page's exclusion form), after looking at the
answers.

Endings: MTurk has no screen-out payment, and a worker who submits a HIT expects to be paid for it, so a
worker who declines consent, finds the study full or fails the headphone screen is asked to *return* the HIT
(MTurk's convention): no code, no submission, nothing to approve. An experimenter who wants to pay screened-out
workers on MTurk opts in (`Study.mturk_screen_out_pay`): they then submit with the screen-out code, approved.
"""

from dataclasses import dataclass

INSTRUCTIONAL = "instructional"
PERFORMANCE = "performance"
# Prolific: at least this many failed instructional checks before a rejection.
INSTRUCTIONAL_FAILURES_FOR_REJECTION = 2


@dataclass(frozen=True)
class Rule:
    code: str
    kind: str  # INSTRUCTIONAL or PERFORMANCE
    label: str


RULES = {
    rule.code: rule
    for rule in (
        Rule("gold_pair", PERFORMANCE, "failed gold HI pairs"),
        Rule("catch_caption", PERFORMANCE, "failed catch captions"),
        Rule("median_time", PERFORMANCE, "median time per item below the study's minimum"),
        Rule("same_answer", PERFORMANCE, "the same answer on every item"),
        Rule("admin_quality", PERFORMANCE, "excluded by an admin (data quality)"),
        Rule("instructional", INSTRUCTIONAL, "failed instructional attention checks (marked by an admin)"),
    )
}
# The kinds of exclusion an admin may choose on the participant page (code, what the form says).
ADMIN_EXCLUSION_CODES = (
    ("admin_quality", "Data quality (left out of the figures, paid)"),
    (
        "instructional",
        f"Failed at least {INSTRUCTIONAL_FAILURES_FOR_REJECTION} instructional attention checks (may be rejected)",
    ),
)


class PolicyError(ValueError):
    """An exclusion code no rule has (message names it)."""


def rule_kind(code: str) -> str:
    if code not in RULES:
        raise PolicyError(f"unknown exclusion code {code!r}; known: {', '.join(RULES)}")
    return RULES[code].kind


def exclusion_action(codes: list[str]) -> str:
    """The pay action for an excluded participant: reject only when an instructional rule excluded them.

    An exclusion recorded before rules had codes (no codes) counts as performance: paid."""
    return "reject" if any(rule_kind(code) == INSTRUCTIONAL for code in codes) else "approve"


# Pay action per (platform, ending) for participants who were not excluded. "return": the participant is asked
# to return the submission (MTurk: no submission should exist, nothing to approve).
ENDING_ACTIONS = {
    "prolific": {"completed": "approve", "screened_out": "screen-out", "full": "screen-out"},
    "generic": {"completed": "approve", "screened_out": "screen-out", "full": "screen-out"},
    "mturk": {
        "completed": "approve",
        "screened_out": "return",
        "full": "return",
        "no_consent": "return",
        "timed_out": "return",
        "returned": "return",
    },
}


# Endings with no work done: a worker asked to return the HIT who submits it anyway is rejected, not auto-approved
# with the full reward (MTurk approves a submitted assignment nobody marks, after the HIT's auto-approval delay).
NO_WORK_ENDINGS = {"no_consent": "declined consent", "full": "the study was full", "screened_out": "screened out"}


def return_rejection_reason(study, platform: str, status: str) -> str:
    """The Reject text for a worker asked to return the HIT after no work, should they submit it anyway ("": none)."""
    if ending_action(study, platform, status) != "return" or status not in NO_WORK_ENDINGS:
        return ""
    return f"No work was done ({NO_WORK_ENDINGS[status]}): the HIT was to be returned, not submitted."


def ending_action(study, platform: str, status: str) -> str:
    """approve, screen-out, return or none (still in progress, or nothing for the platform to do) for an ending of
    a participant who came from `platform` (on MTurk, `study` says whether the experimenter pays screened-out
    workers)."""
    if platform == "mturk" and status == "screened_out" and study.mturk_screen_out_pay:
        return "approve"  # MTurk pays a screen-out only as an approved HIT (submitted with the screen-out code)
    return ENDING_ACTIONS.get(platform, {}).get(status, "none")


def ending_returns_submission(study, platform: str, status: str) -> bool:
    """Whether this ending asks the participant to return the study instead of submitting a code."""
    return ending_action(study, platform, status) == "return"


# MTurk pays rewards and bonuses in US dollars only; a study shown to its workers in another currency would promise
# what the HIT does not pay.
PLATFORM_CURRENCIES = {"mturk": "USD"}


def currency_error(platforms: list[str], currency: str) -> str:
    """Why `currency` cannot be the reward currency of a study recruiting on `platforms` ("" when it can): one
    reward is shown to every participant, so a platform with a fixed currency fixes it for the whole study."""
    for platform in platforms:
        required = PLATFORM_CURRENCIES.get(platform)
        if required and currency.upper() != required:
            return f"MTurk pays in {required} only: set the currency to {required} (the HIT's reward is in {required})"
    return ""
