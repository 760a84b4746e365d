"""What to send to a study's platforms, previewed, then sent once: approvals, rejections, bonuses, pause/resume,
the submission sync (Prolific) and the HIT (MTurk). A plan is one platform's, for the participants who came from it
(a study may recruit on Prolific and MTurk at once).

- The plan comes from the pay export's decisions (`pay_action`, ratings/services/study_policy.py decides): approve
  and reject become the platform's approve and reject; screen-out, return and none send nothing.
- Every request is logged as a PlatformAction with what was asked and what the platform answered.
- A planned action carries an idempotency key (platform, action, the submission or assignment); once a row with
  that key succeeded the action shows as done and is never sent again. Bonuses carry a key made of the worker,
  the amount and the reason, which is also MTurk's UniqueRequestToken, so MTurk itself refuses a duplicate.
- A refusal is logged with the platform's message and reported back; the other actions of the batch go on.
"""

import hashlib
import json
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal, InvalidOperation

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from ratings.crowd_platforms import MTURK, PROLIFIC, PROLIFIC_ID
from ratings.models_platforms import PlatformAction, StudyPlatformLink
from ratings.models_study import Participant, Study
from ratings.platforms import PlatformError, mturk, prolific
from ratings.platforms.admission import admission_decide
from ratings.services.participants import participant_return
from ratings.services.study_policy import return_rejection_reason
from ratings.services.study_report import pay_action, study_participant_rows
from ratings.services.study_shares import share_release

# Which Prolific rejection category goes with each exclusion rule that can reject (an instructional rule only).
REJECTION_CATEGORY_FOR_RULE = {"instructional": "FAILED_CHECK"}
DEFAULT_REJECTION_CATEGORY = "FAILED_CHECK"
REJECTION_EXPLANATION = (
    "The study's instructions asked for a given answer on some attention-check items, and at least two of them "
    "were answered otherwise, so the submission cannot be accepted."
)
BONUS_MAX = Decimal("100")
AWAITING_REVIEW = "AWAITING REVIEW"
MTURK_SUBMITTED = "Submitted"


class PlanError(ValueError):
    """The plan cannot be made or sent (message says which field or what to do first)."""


@dataclass
class PlannedAction:
    platform: str
    action: str  # approve, reject, bonus
    target_id: str
    key: str
    label: str
    participant_id: str = ""
    params: dict = field(default_factory=dict)
    blocked: str = ""  # why it cannot be sent now ("" : it can)
    done_at: object = None  # when a logged request with the same key succeeded

    @property
    def sendable(self) -> bool:
        return not self.blocked and self.done_at is None


def _key(*parts) -> str:
    text = ":".join(str(part) for part in parts)
    return text if len(text) <= 64 else text[:40] + ":" + hashlib.sha256(text.encode()).hexdigest()[:23]


def link_for(study: Study) -> StudyPlatformLink:
    return StudyPlatformLink.objects.get_or_create(study=study)[0]


def prolific_link_set(*, study: Study, prolific_study_id: str) -> StudyPlatformLink:
    value = prolific_study_id.strip().lower()
    if not PROLIFIC_ID.match(value):
        raise PlanError(f"Prolific STUDY_ID must be 24 hexadecimal characters; got {value[:40]!r}")
    link = link_for(study)
    link.prolific_study_id = value
    link.save(update_fields=["prolific_study_id"])
    return link


def _rejection_message(participant: Participant) -> str:
    """The explanation Prolific shows the participant (and requires to be long enough), with the reasons."""
    reasons = "; ".join(participant.exclusion_reasons) or "failed instructional attention checks"
    message = f"{REJECTION_EXPLANATION} ({reasons})"[:1000]
    assert len(message) >= prolific.REJECTION_MESSAGE_MIN, "the fixed explanation alone is long enough"
    return message


def _rejection_category(participant: Participant) -> str:
    category = next(
        (
            REJECTION_CATEGORY_FOR_RULE[code]
            for code in participant.exclusion_codes
            if code in REJECTION_CATEGORY_FOR_RULE
        ),
        DEFAULT_REJECTION_CATEGORY,
    )
    if category not in dict(prolific.REJECTION_CATEGORIES):
        raise PlanError(f"rejection category {category!r} is not one of Prolific's")
    return category


def _prolific_params(participant: Participant, decision: str, screen_out_pay: Decimal | None) -> tuple[str, dict]:
    """The action's name and its request body (or, for a screen-out, its share of the bulk request)."""
    if decision == "screen-out":
        return "screen_out", {"bonus_per_submission": f"{screen_out_pay:.2f}" if screen_out_pay else ""}
    params = {"action": decision.upper()}
    if decision == "reject":
        params.update(message=_rejection_message(participant), rejection_category=_rejection_category(participant))
    return decision, params


def _decision_actions(
    study: Study, platform: str, link: StudyPlatformLink, screen_out_pay: Decimal | None
) -> list[PlannedAction]:
    planned = []
    for row in study_participant_rows(study=study):
        participant = row.participant
        if participant.platform != platform:
            continue
        decision = pay_action(participant)
        assignments = link.mturk_assignments or {}
        returned_but_submitted = (
            decision == "return"
            and return_rejection_reason(study, platform, participant.status)
            and assignments.get((participant.platform_data or {}).get("assignmentId", "")) == MTURK_SUBMITTED
        )
        if returned_but_submitted:
            decision = "reject"  # asked to return the HIT after no work, submitted it anyway (the pay CSV's Reject)
        elif decision not in ("approve", "reject") and not (decision == "screen-out" and platform == PROLIFIC):
            continue
        pid = participant.platform_id
        if platform == PROLIFIC:
            submission = (link.prolific_submissions or {}).get(pid) or {}
            target = submission.get("id", "")
            decision, params = _prolific_params(participant, decision, screen_out_pay)
            blocked = ""
            if not target:
                blocked = "no Prolific submission for this participant in the last sync: sync first"
            elif submission.get("status") != AWAITING_REVIEW:
                blocked = f"Prolific says the submission is {submission.get('status')}, not {AWAITING_REVIEW}"
            elif decision == "screen_out" and not screen_out_pay:
                blocked = "enter the screen-out payment (Prolific pays it with the screen-out) and preview again"
        else:
            target = (participant.platform_data or {}).get("assignmentId", "")
            params = {"AssignmentId": target}
            if returned_but_submitted:
                params["RequesterFeedback"] = return_rejection_reason(study, platform, participant.status)
            elif decision == "reject":
                params["RequesterFeedback"] = _rejection_message(participant)[:1024]
            else:
                params["RequesterFeedback"] = "Thank you for taking part."
            blocked = "" if target else "no MTurk assignment id recorded for this worker"
            if target and assignments and assignments.get(target) != MTURK_SUBMITTED:
                state = assignments.get(target) or "not submitted"
                blocked = f"MTurk says the assignment is {state} (last sync), not {MTURK_SUBMITTED}"
        planned.append(
            PlannedAction(
                platform=platform,
                action=decision,
                target_id=target,
                key=_key(platform, decision, target or pid),
                label=f"{decision} {pid}"
                + (f" ({params.get('rejection_category', '')})" if decision == "reject" else ""),
                participant_id=pid,
                params=params,
                blocked=blocked,
            )
        )
    return planned


def bonuses_parse(*, study: Study, platform: str, text: str, reason: str) -> list[PlannedAction]:
    """Bonus lines "<participant id>,<amount>" (one per line) for participants who came from `platform`, as planned
    actions; PlanError names the bad line."""
    participants = {
        participant.platform_id: participant
        for participant in study.participants.filter(is_preview=False, platform=platform)
    }
    planned, seen = [], set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 2:
            raise PlanError(f"bonuses line {number}: write '<participant id>,<amount>', not {line[:60]!r}")
        pid, amount_text = parts
        participant = participants.get(pid) or participants.get(pid.lower())
        if participant is None:
            raise PlanError(f"bonuses line {number}: {pid[:40]!r} is not a participant of this study from {platform}")
        try:
            amount = Decimal(amount_text)
        except InvalidOperation:
            raise PlanError(f"bonuses line {number}: amount {amount_text[:20]!r} is not a number") from None
        if not (Decimal("0") < amount <= BONUS_MAX) or amount != amount.quantize(Decimal("0.01")):
            raise PlanError(f"bonuses line {number}: amount must be above 0, at most {BONUS_MAX}, with 2 decimals")
        if participant.platform_id in seen:
            raise PlanError(f"bonuses line {number}: {pid} has a bonus on an earlier line already")
        seen.add(participant.platform_id)
        amount_text = f"{amount:.2f}"
        digest = hashlib.sha256(f"{participant.platform_id}|{amount_text}|{reason}".encode()).hexdigest()[:24]
        data = participant.platform_data or {}
        params = {"participant_id": participant.platform_id, "amount": amount_text}
        blocked = ""
        if platform == MTURK:
            params = {
                "WorkerId": participant.platform_id,
                "BonusAmount": amount_text,
                "AssignmentId": data.get("assignmentId", ""),
                "Reason": reason,
            }
            blocked = "" if data.get("assignmentId") else "no MTurk assignment id recorded for this worker"
            if not reason:
                raise PlanError("reason: MTurk shows the worker a reason with every bonus; write one")
        planned.append(
            PlannedAction(
                platform=platform,
                action="bonus",
                target_id=participant.platform_id,
                key=_key(platform, "bonus", digest),
                label=f"bonus {amount_text} {study.reward_currency if platform == PROLIFIC else 'USD'} to "
                f"{participant.platform_id}",
                participant_id=participant.platform_id,
                params=params,
                blocked=blocked,
            )
        )
    return planned


def _mark_done(study: Study, planned: list[PlannedAction]) -> list[PlannedAction]:
    """Mark what succeeded already (done) and what another send is sending right now (blocked)."""
    rows = PlatformAction.objects.filter(
        Q(succeeded=True) | Q(pending=True), study=study, idempotency_key__in=[action.key for action in planned]
    ).values_list("idempotency_key", "created_at", "succeeded")
    done = {key: at for key, at, succeeded in rows if succeeded}
    pending = {key: at for key, at, succeeded in rows if not succeeded}
    for action in planned:
        action.done_at = done.get(action.key)
        if action.key in pending:
            action.blocked = f"being sent since {pending[action.key]:%H:%M:%S} (another send)"
    return planned


def _qualify_actions(study: Study, link: StudyPlatformLink) -> list[PlannedAction]:
    """MTurk: every worker who arrived gets the study's qualification, so later HITs can keep them out."""
    workers = study.participants.filter(is_preview=False, platform=MTURK).order_by("created_at", "pk")
    return [
        PlannedAction(
            platform=MTURK,
            action="qualify",
            target_id=worker.platform_id,
            key=_key(MTURK, "qualify", worker.platform_id),
            label=f"give the study's qualification to {worker.platform_id}",
            participant_id=worker.platform_id,
            params={
                "QualificationTypeId": link.mturk_qualification_id,
                "WorkerId": worker.platform_id,
                "IntegerValue": 1,
                "SendNotification": False,
            },
        )
        for worker in workers
    ]


def actions_plan(
    *,
    study: Study,
    platform: str,
    bonus_text: str = "",
    bonus_reason: str = "",
    screen_out_pay: Decimal | None = None,
) -> list[PlannedAction]:
    """The preview for the participants who came from `platform`: the decisions' approvals, rejections and
    (Prolific) screen-outs, the MTurk qualification for the study's workers, then the bonuses asked for, each
    marked done when a request with its key succeeded."""
    if platform not in (PROLIFIC, MTURK):
        raise PlanError("only Prolific and MTurk have platform actions")
    if not study.recruits_on(platform):
        raise PlanError(f"the study does not recruit on {platform}")
    _interrupted_release(study)
    link = link_for(study)
    planned = _decision_actions(study, platform, link, screen_out_pay)
    if platform == MTURK and link.mturk_qualification_id:
        planned += _qualify_actions(study, link)
    if bonus_text.strip():
        planned += bonuses_parse(study=study, platform=platform, text=bonus_text, reason=bonus_reason.strip())
    return _mark_done(study, planned)


def plan_digest(planned: list[PlannedAction]) -> str:
    """What the preview showed, so a send can refuse a plan that changed since (a new sync, a new exclusion)."""
    text = json.dumps([(a.key, a.params, a.sendable) for a in planned], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _jsonable(data) -> dict:
    return json.loads(json.dumps(data, default=str))


def _log(study, by, *, platform, action, target_id="", key="", summary=None) -> PlatformAction:
    return PlatformAction(
        study=study,
        platform=platform,
        action=action,
        target_id=target_id,
        idempotency_key=key,
        request_summary=_jsonable(summary or {}),
        by=by if getattr(by, "pk", None) else None,
    )


def _claim(entry: PlatformAction) -> PlatformAction | None:
    """Save the row as pending before sending: the unique constraint over pending and successful rows lets one
    send only take an action (None: another send has it, or it is done). No lock is held while the platform
    answers, so participants are never kept waiting by a batch of requests."""
    entry.pending = True
    try:
        with transaction.atomic():
            entry.save()
    except IntegrityError:
        return None
    return entry


def _run(entry: PlatformAction, send) -> PlatformAction:
    """Send, then save the log row (pending no more) with the answer or the refusal."""
    try:
        answer = send()
    except PlatformError as error:
        entry.response_status, entry.error, entry.response_data = error.status, str(error), _jsonable(error.data)
    else:
        entry.response_status, entry.response_data, entry.succeeded = answer.status, _jsonable(answer.data), True
    entry.pending = False
    entry.save()
    return entry


def _settle(entries: list[PlatformAction], batch: PlatformAction, **extra) -> None:
    """The actions one bulk request carried end as it did."""
    for entry in entries:
        entry.pending, entry.succeeded, entry.response_status = False, batch.succeeded, batch.response_status
        entry.error = "" if batch.succeeded else batch.error
        entry.request_summary = {**entry.request_summary, **extra}
        entry.save()


@dataclass
class SendReport:
    sent: list[PlatformAction] = field(default_factory=list)
    skipped: list[PlannedAction] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [entry.error for entry in self.sent if not entry.succeeded]


def _prolific_client():
    return prolific.ProlificClient()


def _entry(study, by, action: PlannedAction, summary=None) -> PlatformAction:
    return _log(
        study,
        by,
        platform=action.platform,
        action=action.action,
        target_id=action.target_id,
        key=action.key,
        summary=action.params if summary is None else summary,
    )


def _interrupted_release(study: Study) -> None:
    """A send that died between claiming and the answer leaves a pending row: after a while it is marked failed,
    with what to check, so the action can be sent again."""
    PlatformAction.objects.filter(
        study=study, pending=True, created_at__lt=timezone.now() - timedelta(minutes=PENDING_MINUTES)
    ).update(pending=False, error=INTERRUPTED)


PENDING_MINUTES = 15
INTERRUPTED = "interrupted before the platform's answer was recorded: check on the platform before sending again"


def actions_send(*, study: Study, planned: list[PlannedAction], by=None) -> SendReport:
    """Send what the preview showed as sendable, once each: every action is claimed (a pending row) before it is
    sent, so two sends in parallel never both send it; actions done or claimed meanwhile are skipped."""
    report = SendReport()
    _interrupted_release(study)
    planned = _mark_done(study, planned)
    todo = [action for action in planned if action.sendable]
    report.skipped = [action for action in planned if not action.sendable]
    if not todo:
        return report
    # A plan is one platform's (actions_plan); each action still goes to its own platform's API.
    prolific_todo = [action for action in todo if action.platform == PROLIFIC]
    if prolific_todo:
        _prolific_send(study, prolific_todo, _prolific_client(), by, report)
    mturk_todo = [action for action in todo if action.platform == MTURK]
    client = mturk.mturk_client() if mturk_todo else None
    for action in mturk_todo:
        params = dict(action.params)
        if action.action == "bonus":
            params["UniqueRequestToken"] = action.key
        entry = _claim(_entry(study, by, action, params))
        if entry is None:
            report.skipped.append(action)
            continue
        operation = MTURK_OPERATIONS[action.action]
        report.sent.append(_run(entry, lambda op=operation, p=params: mturk.call(client, op, **p)))
    return report


MTURK_OPERATIONS = {
    "approve": "approve_assignment",
    "reject": "reject_assignment",
    "bonus": "send_bonus",
    "qualify": "associate_qualification_with_worker",
}


def _batch_key(name: str, entries: list[PlatformAction]) -> str:
    digest = hashlib.sha256(" ".join(sorted(e.idempotency_key for e in entries)).encode()).hexdigest()[:24]
    return _key(PROLIFIC, name, digest)


def _claimed(study, by, actions: list[PlannedAction], report: SendReport) -> list[PlatformAction]:
    entries = []
    for action in actions:
        entry = _claim(_entry(study, by, action))
        if entry is None:
            report.skipped.append(action)
        else:
            entries.append(entry)
    return entries


def _prolific_screen_out(study, link, items: list[PlatformAction], client, by, report) -> None:
    """One bulk screen-out (Prolific pays each the same amount and marks the submission screened out)."""
    body = {
        "submission_ids": [entry.target_id for entry in items],
        "bonus_per_submission": float(items[0].request_summary["bonus_per_submission"]),
    }
    entry = _log(
        study,
        by,
        platform=PROLIFIC,
        action="screen_out_bulk",
        target_id=link.prolific_study_id,
        key=_batch_key("screen_out_bulk", items),
        summary=body,
    )
    batch = _run(entry, lambda: client.screen_out(link.prolific_study_id, body))
    report.sent.append(batch)
    _settle(items, batch)


def _prolific_bonuses(study, link, items: list[PlatformAction], client, by, report) -> None:
    """Prolific pays bonuses in two steps (make the bulk bonus, then pay it): a retry after a refused payment pays
    the bulk already made (found by the batch's key) instead of making a second one."""
    batch_key = _batch_key("bonus_batch", items)
    made = PlatformAction.objects.filter(study=study, idempotency_key=batch_key, succeeded=True).first()
    if made is None:
        lines = [(entry.request_summary["participant_id"], entry.request_summary["amount"]) for entry in items]
        entry = _log(
            study,
            by,
            platform=PROLIFIC,
            action="bonus_create",
            target_id=link.prolific_study_id,
            key=batch_key,
            summary={"study_id": link.prolific_study_id, "bonuses": lines},
        )
        made = _run(entry, lambda: client.bonus_create(link.prolific_study_id, lines))
        report.sent.append(made)
        if not made.succeeded:
            _settle(items, made)
            return
    bulk_id = str(made.response_data.get("id", ""))
    entry = _log(
        study,
        by,
        platform=PROLIFIC,
        action="bonus_pay",
        target_id=bulk_id,
        key=_key(PROLIFIC, "bonus_pay", bulk_id),
        summary={"bulk_id": bulk_id},
    )
    paid = _run(entry, lambda: client.bonus_pay(bulk_id))
    report.sent.append(paid)
    _settle(items, paid, bulk_id=bulk_id)


def _prolific_send(study, todo, client, by, report) -> None:
    link = link_for(study)
    bulk = [action for action in todo if action.action in ("bonus", "screen_out")]
    if bulk and not link.prolific_study_id:
        raise PlanError("link the study to its Prolific STUDY_ID before paying bonuses or screen-outs")
    for action in todo:
        if action in bulk:
            continue
        entry = _claim(_entry(study, by, action))
        if entry is None:
            report.skipped.append(action)
            continue
        report.sent.append(_run(entry, lambda a=action: client.submission_transition(a.target_id, a.params)))
    screen_outs = _claimed(study, by, [action for action in bulk if action.action == "screen_out"], report)
    if screen_outs:
        amounts = {entry.request_summary["bonus_per_submission"] for entry in screen_outs}
        assert len(amounts) == 1, "one plan has one screen-out payment"
        _prolific_screen_out(study, link, screen_outs, client, by, report)
    bonuses = _claimed(study, by, [action for action in bulk if action.action == "bonus"], report)
    if bonuses:
        _prolific_bonuses(study, link, bonuses, client, by, report)


# --- Prolific: sync and pause/resume ----------------------------------------------------------------------


@dataclass
class SyncReport:
    submissions: int = 0
    freed: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    error: str = ""
    admission: str = ""  # what admission control did after the sync ("": nothing)


def prolific_sync(*, study: Study, by=None) -> SyncReport:
    """Read the study's submissions from Prolific, keep their ids and statuses for the plan, and end at once the
    participations Prolific says were returned or timed out (their unanswered items go to the next participants)."""
    link = link_for(study)
    if not link.prolific_study_id:
        raise PlanError("link the study to its Prolific STUDY_ID first")
    client = _prolific_client()
    entry = _log(study, by, platform=PROLIFIC, action="sync", target_id=link.prolific_study_id)
    report = SyncReport()
    submissions: list[dict] = []

    def fetch():
        submissions.extend(client.study_submissions(link.prolific_study_id))
        return prolific.Response(200, {"submissions": len(submissions)})

    _run(entry, fetch)
    if not entry.succeeded:
        report.error = entry.error
        return report
    mapping = {}
    for submission in submissions:
        pid = str(submission.get("participant_id") or submission.get("participant") or "").lower()
        if pid:
            mapping[pid] = {"id": str(submission.get("id", "")), "status": str(submission.get("status", ""))}
    link.prolific_submissions, link.synced_at = mapping, timezone.now()
    link.save(update_fields=["prolific_submissions", "synced_at"])
    report.submissions = len(mapping)
    participants = {
        p.platform_id: p
        for p in study.participants.filter(is_preview=False, platform=PROLIFIC, platform_id__in=list(mapping))
    }
    for pid, submission in mapping.items():
        if submission["status"] not in prolific.FREEING_STATUSES:
            continue
        participant = participants.get(pid)
        if participant is None:
            report.unknown.append(pid)
            continue
        if participant.stage == Participant.Stage.FINISHED:
            continue
        if submission["status"] == "RETURNED":
            participant_return(participant=participant)
        else:
            share_release(participant=participant, status=Participant.Status.TIMED_OUT, kind="timed_out")
        report.freed.append(pid)
    report.admission = admission_apply(study=study, by=by)
    return report


def prolific_study_transition(*, study: Study, pause: bool, by=None) -> PlatformAction:
    """Pause the study on Prolific (nobody new can start) or start it again."""
    link = link_for(study)
    if not link.prolific_study_id:
        raise PlanError("link the study to its Prolific STUDY_ID first")
    client = _prolific_client()
    action = "PAUSE" if pause else "START"
    entry = _log(
        study,
        by,
        platform=PROLIFIC,
        action=action.lower(),
        target_id=link.prolific_study_id,
        summary={"action": action},
    )
    return _run(entry, lambda: client.study_transition(link.prolific_study_id, action))


# --- MTurk: the HIT ---------------------------------------------------------------------------------------


def mturk_hit_params(*, study: Study, arrival_url: str, settings: dict) -> dict:
    """create_hit's parameters for the study: its arrival link as an ExternalQuestion, the reward, as many
    assignments as asked, and the qualification requirements (approval rate, locale, not in earlier studies)."""
    if not arrival_url.startswith("https://"):
        raise PlanError(f"MTurk shows only https pages in its frame; the study link is {arrival_url[:80]}")
    return {
        "Title": settings["title"],
        "Description": settings["description"],
        "Keywords": settings.get("keywords", ""),
        "Reward": f"{settings['reward']:.2f}",
        "MaxAssignments": settings["max_assignments"],
        "AssignmentDurationInSeconds": settings["duration_minutes"] * 60,
        "LifetimeInSeconds": settings["lifetime_hours"] * 3600,
        "AutoApprovalDelayInSeconds": settings["auto_approval_days"] * 86400,
        "Question": mturk.external_question(arrival_url),
        "QualificationRequirements": mturk.qualification_requirements(
            approval_rate_min=settings.get("approval_rate_min"),
            locales=settings.get("locales", []),
            excluded_qualification_id=settings.get("excluded_qualification_id", ""),
        ),
    }


def mturk_hit_create(*, study: Study, params: dict, by=None) -> PlatformAction:
    """Create the study's HIT once (a made HIT is never made again; UniqueRequestToken guards a lost answer)."""
    if not study.on_mturk:
        raise PlanError("only a study recruiting on MTurk has a HIT")
    key = _key(MTURK, "create_hit", study.pk)
    link = link_for(study)
    if link.mturk_hit_id or PlatformAction.objects.filter(study=study, idempotency_key=key, succeeded=True).exists():
        raise PlanError(f"the study's HIT exists already ({link.mturk_hit_id}): it is made once")
    client = mturk.mturk_client()
    request = {**params, "UniqueRequestToken": key}
    entry = _claim(_log(study, by, platform=MTURK, action="create_hit", key=key, summary=request))
    if entry is None:
        raise PlanError("the study's HIT is being created by another request")
    _run(entry, lambda: mturk.call(client, "create_hit", **request))
    if entry.succeeded:
        hit = entry.response_data.get("HIT", {})
        link.mturk_hit_id, link.mturk_hit_type_id = hit.get("HITId", ""), hit.get("HITTypeId", "")
        link.save(update_fields=["mturk_hit_id", "mturk_hit_type_id"])
        entry.target_id = link.mturk_hit_id
        entry.save(update_fields=["target_id"])
    return entry


def mturk_qualification_create(*, study: Study, by=None) -> PlatformAction:
    """Make the qualification this study's workers will be given (once), for later HITs' "not in earlier
    studies" (DoesNotExist)."""
    if not study.on_mturk:
        raise PlanError("only a study recruiting on MTurk has a qualification")
    link = link_for(study)
    if link.mturk_qualification_id:
        raise PlanError(f"the study's qualification exists already ({link.mturk_qualification_id})")
    client = mturk.mturk_client()
    request = {
        "Name": f"Took part in {study.campaign.name} ({study.slug[:8]})"[:100],
        "Description": "Workers who took part in this study: later studies keep them out.",
        "QualificationTypeStatus": "Active",
    }
    entry = _log(
        study,
        by,
        platform=MTURK,
        action="create_qualification",
        key=_key(MTURK, "qualification", study.pk),
        summary=request,
    )
    if _claim(entry) is None:
        raise PlanError("the study's qualification is being created by another request")
    _run(entry, lambda: mturk.call(client, "create_qualification_type", **request))
    if entry.succeeded:
        link.mturk_qualification_id = entry.response_data.get("QualificationType", {}).get("QualificationTypeId", "")
        link.save(update_fields=["mturk_qualification_id"])
        entry.target_id = link.mturk_qualification_id
        entry.save(update_fields=["target_id"])
    return entry


# --- Prolific: admission control -------------------------------------------------------------------------


def active_limit_set(*, study: Study, limit: int) -> StudyPlatformLink:
    if limit < 0:
        raise PlanError("active limit: 0 (off) or more")
    link = link_for(study)
    link.active_limit = limit
    link.save(update_fields=["active_limit"])
    return link


def admission_apply(*, study: Study, by=None) -> str:
    """Pause the Prolific study while `active_limit` participants or more are in progress, start it again when
    fewer are (only a pause this rule made is lifted); what was done, "" when nothing was needed. The link row
    stays locked while deciding and sending, so checks run at once (arrivals, endings, a sync) send one request."""
    link_for(study)
    with transaction.atomic():
        link = StudyPlatformLink.objects.select_for_update().get(study=study)
        decision = admission_decide(study=study, link=link)
        if not decision.action:
            return ""
        pause = decision.action == "PAUSE"
        entry = prolific_study_transition(study=study, pause=pause, by=by)
        if not entry.succeeded:
            return entry.error
        link.paused_for_limit = pause
        link.save(update_fields=["paused_for_limit"])
    verb = "paused" if pause else "started again"
    return f"{decision.active} participants in progress (limit {link.active_limit}): the study was {verb} on Prolific"


def mturk_sync(*, study: Study, by=None) -> int:
    """Read the state of every assignment of the study's HITs (Submitted, Approved, Rejected), so the plan rejects a
    worker who submitted a HIT they were asked to return and blocks what is decided already; the count read."""
    if not study.on_mturk:
        raise PlanError("only a study recruiting on MTurk has assignments")
    link = link_for(study)
    hits = {link.mturk_hit_id} | {
        (data or {}).get("hitId", "") for data in study.participants.values_list("platform_data", flat=True)
    }
    hits.discard("")
    if not hits:
        raise PlanError("no HIT yet: create the HIT, or wait for the first worker")
    client = mturk.mturk_client()
    states: dict[str, str] = {}
    for hit in sorted(hits):
        entry = _log(study, by, platform=MTURK, action="sync", target_id=hit)

        def fetch(hit=hit):
            params = {"HITId": hit, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
            for _ in range(prolific.MAX_PAGES):
                page = mturk.call(client, "list_assignments_for_hit", **params).data
                states.update({a["AssignmentId"]: a["AssignmentStatus"] for a in page.get("Assignments", [])})
                if not page.get("NextToken") or not page.get("Assignments"):
                    break
                params["NextToken"] = page["NextToken"]
            return mturk.Response(200, {"assignments": len(states)})

        if not _run(entry, fetch).succeeded:
            raise PlatformError(entry.error, status=entry.response_status)
    link.mturk_assignments, link.mturk_synced_at = states, timezone.now()
    link.save(update_fields=["mturk_assignments", "mturk_synced_at"])
    return len(states)
