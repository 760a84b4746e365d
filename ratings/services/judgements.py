"""Judgements made on the rating pages: THumBS ratings, pairwise votes and drafts.

The listening rule is enforced here, not only in the browser: an item can be submitted only
after it was marked heard, which the server does only when the audio it served proves it
(ratings/services/listening.py: coverage of the file, and the listening time on the rater's one clock).

Values are checked strictly, the same way for drafts and submissions: whole scores 1..5,
penalties -2..0 in tenths, written plainly (no padding, no exponent, no NUL character), and
item versions are whole numbers.

No answer is overwritten without the rater knowing. Every submission and draft carries the
item `version` the page was built from; the item row is locked (SELECT ... FOR UPDATE on
PostgreSQL; on SQLite every transaction takes the write lock when it begins, see settings),
the version compared and, on a match, the answer stored and the version incremented. A page
holding an older version (a second tab, an old draft, a double click) gets `StaleItemError`
with the newer answer, which the page shows with the choice to keep it or replace it. Every
accepted answer, every refusal and every re-opening of a submitted answer is an `ItemEvent`.
"""

import copy
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.db.models import Exists, Subquery
from django.utils import timezone

from common.compiled_reads import CompiledRead
from ratings import projection
from ratings.models import AssignmentItem, Campaign, ItemEvent, PairwiseVote, Source, ThumbsRating

TENTH = Decimal("0.1")
DRAFT_MAX_CHARACTERS = 20_000
COMMENT_MAX_CHARACTERS = 2000
# Slack for timer resolution and network delay when checking how long a clip was heard.
SIDES = projection.SIDES
SCORE_NAMES = ("precision", "recall")
PENALTY_NAMES = ("fluency", "conciseness", "irrelevance")
DRAFT_FIELD = re.compile(r"^(precision|recall|fluency|conciseness|irrelevance|comment)_(\d{1,3})$")
# Values as a form or a page sends them, written plainly: no padding, no exponent, no sign on a score.
PLAIN_SCORE = re.compile(r"[1-5]")
PLAIN_PENALTY = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
PLAIN_VERSION = re.compile(r"[0-9]{1,9}")


class JudgementError(ValueError):
    """A judgement was refused (message says why)."""


class StaleItemError(JudgementError):
    """The page was built from an older version of the item: someone (another tab) answered since.

    `current_answer` is the stored answer in the rater's terms (caption numbers, sides) and
    `current_version` the version a replacement must carry.
    """

    def __init__(self, *, item: AssignmentItem, seen_version):
        self.current_version = item.version
        self.current_answer = item_answer(item=item)
        self.answered_at = item.events.filter(version=item.version).values_list("created_at", flat=True).last()
        super().__init__(
            "this item was answered again after this page was opened (in another tab or window): "
            "keep the saved answer or replace it with yours"
        )
        self.seen_version = seen_version


@dataclass(frozen=True)
class CaptionScores:
    caption_id: int
    precision: int
    recall: int
    fluency: Decimal = Decimal("0")
    conciseness: Decimal = Decimal("0")
    irrelevance: Decimal = Decimal("0")
    comment: str = ""


def _lock(item: AssignmentItem) -> AssignmentItem:
    # of=("self",): PostgreSQL refuses FOR UPDATE on the nullable side of the outer join to `pair`.
    return (
        AssignmentItem.objects.select_for_update(of=("self",))
        .select_related("assignment__campaign", "clip", "pair")
        .get(pk=item.pk)
    )


def _check_open(item: AssignmentItem) -> None:
    if not item.assignment.campaign.is_active:
        raise JudgementError(f"the study {item.assignment.campaign.rater_title} is closed")


def _version(value) -> int:
    """An item version: a whole number (an int, or digits only); 0.5, "1.0" or " 2" are refused."""
    if value is None or value == "":
        raise JudgementError("the page did not say which version of the item it shows; reload it")
    if isinstance(value, str) and PLAIN_VERSION.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise JudgementError(f"the page's item version {value!r} is not a whole number; reload it")
    return value


# --- The answer as the rater sees it (for conflicts, the submitted view and the audit trail) ---------


def item_answer(*, item: AssignmentItem) -> dict:
    """The stored answer in the rater's terms: {} when unanswered; pairwise {"side"}; THumBS
    {"synthesized", "captions": [{"number", "precision", ...}]} in the rater's caption order."""
    campaign_id, rater_id = item.assignment.campaign_id, item.assignment.rater_id
    if item.pair_id is not None:
        vote = PairwiseVote.objects.filter(campaign_id=campaign_id, rater_id=rater_id, pair_id=item.pair_id).first()
        return {"side": projection.vote_side(choice=vote.choice, a_on_left=item.a_on_left)} if vote else {}
    rows = ThumbsRating.objects.filter(
        campaign_id=campaign_id, rater_id=rater_id, caption_id__in=item.caption_order
    ).values("caption_id", *RATING_VALUE_FIELDS)
    return thumbs_answer(caption_order=item.caption_order, ratings={row["caption_id"]: row for row in rows})


RATING_VALUE_FIELDS = ("precision", "recall", "fluency", "conciseness", "irrelevance", "synthesized", "comment")


def thumbs_answer(*, caption_order: list[int], ratings: dict[int, dict]) -> dict:
    """A THumBS answer in the rater's terms from rating values by caption id ({} when none is rated)."""
    captions = []
    synthesized = ""
    for number, caption_id in enumerate(caption_order, start=1):
        values = ratings.get(caption_id)
        if values is None:
            continue
        synthesized = synthesized or values["synthesized"]
        penalties = {name: Decimal(str(values[name])).quantize(TENTH) for name in PENALTY_NAMES}
        overall = Decimal(values["precision"] + values["recall"]) / 2 + sum(penalties.values())
        captions.append(
            {
                "number": number,
                "precision": values["precision"],
                "recall": values["recall"],
                **{name: str(value) for name, value in penalties.items()},
                "comment": values["comment"],
                "overall": str(overall),
            }
        )
    return {"synthesized": synthesized, "captions": captions} if captions else {}


# --- Showing, listening, drafts ---------------------------------------------------------------------


def item_mark_shown(*, item: AssignmentItem) -> AssignmentItem:
    """Start the item's clock the first time the rater sees it.

    A conditional UPDATE, not a row lock: every later view of the item writes nothing (on SQLite a lock
    would take the database's write lock on every page view), and of two first views only one sets it. The
    statement is atomic by itself: no transaction around it (its BEGIN and COMMIT were two more round trips on
    every item page and answer).
    """
    if item.first_shown_at is None:
        now = timezone.now()
        if AssignmentItem.objects.filter(pk=item.pk, first_shown_at__isnull=True).update(first_shown_at=now):
            item.first_shown_at = now
        else:
            item.refresh_from_db(fields=["first_shown_at"])
    return item


def _draft_value_clean(name: str, value, *, caption_count: int):
    """Draft values are partial answers: blank is fine, anything else must be valid as in a submission.

    Returns the value as stored: scores and penalties in their plain written form ("4", "-0.5").
    """
    if name in ("side", "synthesized"):
        allowed = SIDES if name == "side" else ThumbsRating.Synthesized.values
        if value not in ("", *allowed):
            raise JudgementError(f"draft: {name} must be one of {', '.join(allowed)}, got {value!r}")
        return value
    match = DRAFT_FIELD.match(name)
    if match is None:
        raise JudgementError(f"draft: unknown field {name!r}")
    kind, number = match.group(1), int(match.group(2))
    if not 1 <= number <= caption_count:
        raise JudgementError(f"draft: there is no caption {number} on this page")
    if kind == "comment":
        return _comment(value, caption_number=number)
    if value == "":
        return ""
    if kind in SCORE_NAMES:
        return str(_score(value, name=kind, caption_number=number))
    return _penalty_text(_penalty(value, name=kind, caption_number=number))


def item_draft_validate(*, item: AssignmentItem, draft) -> dict:
    """The draft as stored, or JudgementError: the same value rules as a submission (blank allowed)."""
    if not isinstance(draft, dict):
        raise JudgementError("a draft must be a JSON object")
    if len(json.dumps(draft)) > DRAFT_MAX_CHARACTERS:
        raise JudgementError(f"the draft is larger than {DRAFT_MAX_CHARACTERS} characters")
    is_pairwise = item.pair_id is not None
    allowed_plain = {"side"} if is_pairwise else {"synthesized"}
    caption_count = 0 if is_pairwise else len(item.caption_order)
    cleaned = {}
    for name, value in draft.items():
        if name == "version":
            continue
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise JudgementError(f"draft: {name} must be a plain value")
        if is_pairwise and name != "side":
            raise JudgementError(f"draft: unknown field {name!r}")
        if not is_pairwise and name not in allowed_plain and DRAFT_FIELD.match(name) is None:
            raise JudgementError(f"draft: unknown field {name!r}")
        cleaned[name] = _draft_value_clean(name, value, caption_count=caption_count)
    return cleaned


def item_draft_save(*, item: AssignmentItem, draft, seen_version) -> AssignmentItem:
    """Keep unsubmitted form state so a reload or a later visit restores it.

    Validated like a submission (out-of-range values are refused, never stored) and refused with
    StaleItemError when the item was answered after the page was built.
    """
    seen = _version(seen_version)
    cleaned = item_draft_validate(item=item, draft=draft)
    # The usual case in one conditional UPDATE (the page's version still current, the campaign open): an autosave
    # comes with every change of the form, and locking and reading the row first cost three more statements. When
    # it matches nothing, the locked path below says why.
    current = AssignmentItem.objects.filter(pk=item.pk, version=seen, assignment__campaign__is_active=True)
    if current.update(draft=cleaned):
        item.draft = cleaned
        return item
    with transaction.atomic():
        item = _lock(item)
        _check_open(item)
        if item.version != seen:
            raise StaleItemError(item=item, seen_version=seen)
        item.draft = cleaned
        item.save(update_fields=["draft"])
    return item


# --- Submissions --------------------------------------------------------------------------------------


def _penalty(value, *, name: str, caption_number: int) -> Decimal:
    """A penalty -2..0 in tenths: a number, or text written plainly ("-0.5"; not " -0.5", "-5e-1" or "-.5")."""
    if isinstance(value, str):
        if not PLAIN_PENALTY.fullmatch(value):
            try:
                Decimal(value)
            except (InvalidOperation, ValueError):
                raise JudgementError(f"caption {caption_number}: {name} {value!r} is not a number") from None
            raise JudgementError(
                f"caption {caption_number}: {name} {value!r} is not written plainly (e.g. -0.5: no spaces, no exponent)"
            )
        penalty = Decimal(value)
    elif isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        try:
            penalty = Decimal(str(value))
        except InvalidOperation:
            raise JudgementError(f"caption {caption_number}: {name} {value!r} is not a number") from None
    else:
        raise JudgementError(f"caption {caption_number}: {name} {value!r} is not a number")
    if not penalty.is_finite() or not Decimal("-2") <= penalty <= 0:
        raise JudgementError(f"caption {caption_number}: {name} must be between -2 and 0, got {value}")
    if penalty != penalty.quantize(TENTH):
        raise JudgementError(f"caption {caption_number}: {name} allows one decimal, got {value}")
    return penalty.quantize(TENTH)


def _penalty_text(penalty: Decimal) -> str:
    """A penalty as a draft stores it: "0", "-0.5", "-1"."""
    return "0" if penalty == 0 else format(penalty.normalize(), "f")


def _comment(value, *, caption_number: int) -> str:
    if not isinstance(value, str) or len(value) > COMMENT_MAX_CHARACTERS:
        raise JudgementError(
            f"caption {caption_number}: the comment must be text of at most {COMMENT_MAX_CHARACTERS} characters"
        )
    if "\x00" in value:
        raise JudgementError(f"caption {caption_number}: the comment contains a NUL character")
    return value


def _score(value, *, name: str, caption_number: int) -> int:
    """A whole score 1..5: an int, or the digit alone as text ("4"; not " 4", "4.0" or "+4")."""
    if isinstance(value, str) and PLAIN_SCORE.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise JudgementError(f"caption {caption_number}: {name} must be a whole number from 1 to 5, got {value!r}")
    return value


def caption_values_clean(values: dict, *, caption_number: int) -> dict:
    """One caption's precision, recall and penalties checked as the rating pages check them (JudgementError)."""
    return {
        **{name: _score(values[name], name=name, caption_number=caption_number) for name in SCORE_NAMES},
        **{name: _penalty(values[name], name=name, caption_number=caption_number) for name in PENALTY_NAMES},
    }


def _previous_completion(*, item_id: int, rater_id: int, until):
    """The latest first submission up to `until` among the rater's items other than `item_id` (a one-value
    queryset)."""
    return (
        AssignmentItem.objects.filter(assignment__rater_id=rater_id, completed_at__lte=until)
        .exclude(pk=item_id)
        .order_by("-completed_at")
        .values_list("completed_at", flat=True)
    )


def seconds_on_one_clock(*, first_shown_at, completed_at, previous) -> float:
    """The time an item took, counted on the rater's one clock: from when it was first shown, or from the
    rater's `previous` first submission (any campaign; None if none) if that came later, to its own first
    submission.

    Pages opened at once and submitted in turn overlap; a person works on one at a time, so each item is
    credited only the time since the last one was done (the minimum-median-time rule reads this).
    """
    start = max(first_shown_at, previous) if previous else first_shown_at
    return max(0.0, (completed_at - start).total_seconds())


def _accepted(item: AssignmentItem, *, replacing: bool, previous: dict, answer: dict, previous_completed_at) -> None:
    """Complete the item (first time: stamp the time spent), bump its version, log the event.

    `answer` is what was just written (in the rater's terms) and `previous_completed_at` the rater's previous first
    submission, both known already: reading them back would be two more queries on every answer.
    """
    was_completed = item.completed_at is not None
    item.draft = {}
    item.version += 1
    fields = ["draft", "version"]
    if not was_completed:
        item.completed_at = timezone.now()
        if item.first_shown_at:
            item.seconds_spent = seconds_on_one_clock(
                first_shown_at=item.first_shown_at, completed_at=item.completed_at, previous=previous_completed_at
            )
        fields += ["completed_at", "seconds_spent"]
    item.save(update_fields=fields)
    if not was_completed:
        kind = ItemEvent.Kind.SUBMITTED
    else:
        kind = ItemEvent.Kind.STALE_REPLACED if replacing else ItemEvent.Kind.CHANGED
    ItemEvent.objects.create(item=item, kind=kind, version=item.version, previous_answer=previous, answer=answer)


def _refusal_log(error: StaleItemError, item: AssignmentItem, attempted: dict) -> None:
    ItemEvent.objects.create(
        item=item,
        kind=ItemEvent.Kind.STALE_REFUSED,
        version=error.seen_version,
        previous_answer=error.current_answer,
        answer=attempted,
    )


def _lock_read(item_id, campaign_id, rater_id, now, assignment_id, position):
    """The statement of _lock_for_submit (its values as keywords, so that it compiles once with markers)."""
    item = AssignmentItem(pk=item_id, assignment_id=assignment_id, position=position)
    return (
        AssignmentItem.objects.select_for_update()
        .filter(pk=item_id)
        # No ordering: the model's default one joins the assignment and campaign, and FOR UPDATE would lock them.
        .order_by()
        .values(
            "version",
            "completed_at",
            "listened_at",
            "first_shown_at",
            is_open=Exists(Campaign.objects.filter(pk=campaign_id, is_active=True)),
            previous_completed_at=Subquery(_previous_completion(item_id=item_id, rater_id=rater_id, until=now)[:1]),
            next_open_token=Subquery(projection.next_open_after(item=item).values("token")[:1]),
        )
    )


# Every answer runs it; compiling it was most of its CPU. Markers in their columns' ranges (position is positive).
_LOCK_FOR_SUBMIT = CompiledRead(
    _lock_read,
    item_id=-2_100_000_021,
    campaign_id=-2_100_000_022,
    rater_id=-2_100_000_023,
    now=datetime(1901, 2, 3, 4, 5, 6, 789012, tzinfo=UTC),
    assignment_id=-2_100_000_024,
    position=2_100_000_025,
)


def _lock_for_submit(item: AssignmentItem, *, now) -> tuple[AssignmentItem, dict]:
    """The item's row locked, in one statement: a copy of `item` with its changing fields as locked, and
    {"is_open", "previous_completed_at", "next_open_token"} read beside them.

    The campaign is read in a subquery, not joined: FOR UPDATE locks only the item's row (a joined campaign row
    would be locked too, and every participant of a study would wait on it). The rater's previous first submission
    (the one clock) and the next open item (where the page goes on) are read here rather than after: each was a
    query of its own on every answer. An item completed by another tab while this one commits can still be named
    next, as it could when read after the commit: its page then shows its answer.
    """
    row = _LOCK_FOR_SUBMIT.row(
        item_id=item.pk,
        campaign_id=item.assignment.campaign_id,
        rater_id=item.assignment.rater_id,
        now=now,
        assignment_id=item.assignment_id,
        position=item.position,
    )
    if row is None:
        raise AssignmentItem.DoesNotExist(f"assignment item {item.pk}")
    locked = copy.copy(item)
    for name in ("version", "completed_at", "listened_at", "first_shown_at"):
        setattr(locked, name, row[name])
    return locked, row


def _submit(item: AssignmentItem, *, seen_version, replacing: bool, attempted: dict, write) -> str | None:
    """Lock, check, compare versions and call `write(locked_item)` (which returns the answer as stored, in the
    rater's terms); refusals are logged after the rollback. Returns the token of the assignment's next open item
    (None when every other one is done)."""
    seen = _version(seen_version)
    try:
        with transaction.atomic():
            locked, row = _lock_for_submit(item, now=timezone.now())
            if not row["is_open"]:
                raise JudgementError(f"the study {item.assignment.campaign.rater_title} is closed")
            if locked.listened_at is None:
                raise JudgementError("listen to the clip before submitting")
            if locked.version != seen:
                raise StaleItemError(item=locked, seen_version=seen)
            previous = item_answer(item=locked) if locked.completed_at else {}
            answer = write(locked)
            _accepted(
                locked,
                replacing=replacing,
                previous=previous,
                answer=answer,
                previous_completed_at=row["previous_completed_at"],
            )
    except StaleItemError as error:
        _refusal_log(error, item, attempted)
        raise
    return row["next_open_token"]


def thumbs_item_submit(
    *,
    item: AssignmentItem,
    scores: list[CaptionScores],
    synthesized: str,
    seen_version,
    replacing: bool = False,
) -> str | None:
    """Save one clip's THumBS ratings (one row per caption, in the item's campaign) and complete the item.

    Returns the token of the assignment's next open item (None when every other one is done)."""
    if item.assignment.campaign.task_type != Campaign.TaskType.THUMBS:
        raise JudgementError("this item belongs to a pairwise study")
    if synthesized not in ThumbsRating.Synthesized.values:
        raise JudgementError(f"'is this audio synthesized?' must be yes or no, got {synthesized!r}")
    expected = list(item.caption_order)
    given = [score.caption_id for score in scores]
    if sorted(given) != sorted(expected) or len(set(given)) != len(given):
        raise JudgementError(f"expected ratings for the item's {len(expected)} captions, got {len(given)}")
    values = {}
    for score in scores:
        number = expected.index(score.caption_id) + 1
        values[score.caption_id] = {
            "precision": _score(score.precision, name="precision", caption_number=number),
            "recall": _score(score.recall, name="recall", caption_number=number),
            "fluency": _penalty(score.fluency, name="fluency", caption_number=number),
            "conciseness": _penalty(score.conciseness, name="conciseness", caption_number=number),
            "irrelevance": _penalty(score.irrelevance, name="irrelevance", caption_number=number),
            "synthesized": synthesized,
            "comment": _comment(score.comment, caption_number=number).strip(),
        }
    attempted = {
        "synthesized": synthesized,
        "captions": [
            {
                "number": expected.index(caption_id) + 1,
                **{key: str(value) for key, value in row.items() if key != "synthesized"},
            }
            for caption_id, row in values.items()
        ],
    }

    def write(locked: AssignmentItem) -> dict:
        # One INSERT … ON CONFLICT UPDATE for the item's captions (a first answer or a change alike).
        ThumbsRating.objects.bulk_create(
            [
                ThumbsRating(
                    campaign_id=locked.assignment.campaign_id,
                    rater_id=locked.assignment.rater_id,
                    caption_id=caption_id,
                    **row,
                    source=Source.WEB,
                    workbook_sha256="",
                )
                for caption_id, row in values.items()
            ],
            update_conflicts=True,
            unique_fields=["campaign", "rater", "caption"],
            update_fields=[*RATING_VALUE_FIELDS, "source", "workbook_sha256", "updated_at"],
        )
        return thumbs_answer(caption_order=locked.caption_order, ratings=values)

    return _submit(item, seen_version=seen_version, replacing=replacing, attempted=attempted, write=write)


def pairwise_item_submit(*, item: AssignmentItem, side: str, seen_version, replacing: bool = False) -> str | None:
    """Save a vote given as the side the rater preferred ("left", "right" or "none") and complete the item.

    Returns the token of the assignment's next open item (None when every other one is done)."""
    if item.pair_id is None:
        raise JudgementError("this item is not a caption pair")
    if side not in SIDES:
        raise JudgementError(f"choose left, right or none, got {side!r}")
    left_caption = projection.caption_on_left(a_on_left=item.a_on_left)
    choice = projection.side_choice(side=side, a_on_left=item.a_on_left)

    def write(locked: AssignmentItem) -> dict:
        # One INSERT … ON CONFLICT UPDATE (a first answer or a change alike), as for THumBS ratings.
        PairwiseVote.objects.bulk_create(
            [
                PairwiseVote(
                    campaign_id=locked.assignment.campaign_id,
                    rater_id=locked.assignment.rater_id,
                    pair_id=locked.pair_id,
                    choice=choice,
                    left_side=left_caption,
                    source=Source.WEB,
                )
            ],
            update_conflicts=True,
            unique_fields=["campaign", "rater", "pair"],
            update_fields=["choice", "left_side", "source", "updated_at"],
        )
        return {"side": projection.vote_side(choice=choice, a_on_left=locked.a_on_left)}

    return _submit(item, seen_version=seen_version, replacing=replacing, attempted={"side": side}, write=write)


@transaction.atomic
def item_change_open(*, item: AssignmentItem) -> AssignmentItem:
    """The rater opened a submitted answer to change it: logged (once per answer version, so the button's
    redirect and a reload do not log it twice), so changed answers are visible in the trail."""
    item = _lock(item)
    _check_open(item)
    if item.completed_at is None:
        raise JudgementError("this item has no submitted answer yet")
    already = item.events.filter(kind=ItemEvent.Kind.CHANGE_OPENED, version=item.version).exists()
    if not already:
        ItemEvent.objects.create(
            item=item, kind=ItemEvent.Kind.CHANGE_OPENED, version=item.version, previous_answer=item_answer(item=item)
        )
    return item
