"""What crowd platforms put in a study link, validated, and where each sends a participant back (plain Python).

- Prolific appends `PROLIFIC_PID`, `STUDY_ID` and `SESSION_ID` (24 hexadecimal characters each) and takes
  participants back at its completion URL with the code: https://app.prolific.com/submissions/complete?cc=CODE.
- MTurk (an ExternalQuestion HIT) appends `workerId`, `assignmentId`, `hitId` and `turkSubmitTo`; while a worker
  only previews the HIT, `assignmentId` is `ASSIGNMENT_ID_NOT_AVAILABLE` and there is no `workerId`. The end page
  posts a form with `assignmentId` to `<turkSubmitTo>/mturk/externalSubmit`. `turkSubmitTo` must be one of MTurk's
  hosts (MTURK_SUBMIT_HOSTS), or the page would post to whatever a link names.
- Any other panel passes `pid` (letters, digits, `.`, `_`, `-`; at most 64).

A study may recruit on several platforms through one link: the parameters a link carries say which platform sent
the participant (`arrival_platform`), among the platforms the study recruits on.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

PROLIFIC = "prolific"
MTURK = "mturk"
GENERIC = "generic"
PROLIFIC_COMPLETION_URL = "https://app.prolific.com/submissions/complete"
MTURK_PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
DEFAULT_MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")

PROLIFIC_ID = re.compile(r"^[0-9a-f]{24}$")
MTURK_WORKER_ID = re.compile(r"^[A-Z0-9]{8,40}$")
MTURK_ASSIGNMENT_ID = re.compile(r"^[A-Z0-9]{10,64}$")
GENERIC_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# Query parameters that carry the participant's identity: kept out of every URL after the arrival.
IDENTITY_PARAMETERS = {
    PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    MTURK: ("workerId", "assignmentId", "hitId", "turkSubmitTo"),
    GENERIC: ("pid",),
}
LINK_TEMPLATES = {
    PROLIFIC: "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
    MTURK: "",  # MTurk appends its own parameters to an ExternalQuestion URL
    GENERIC: "?pid=PARTICIPANT_ID",
}


class ArrivalError(ValueError):
    """The link's parameters do not identify a participant of this platform (message names the parameter)."""


@dataclass(frozen=True)
class Arrival:
    platform: str
    participant_id: str = ""
    data: dict = field(default_factory=dict)
    # MTurk's preview of a HIT: instructions only, nobody is created.
    is_mturk_preview: bool = False

    @property
    def is_identified(self) -> bool:
        return bool(self.participant_id)


def _value(params: Mapping[str, str], name: str) -> str:
    return (params.get(name) or "").strip()


def _check(value: str, pattern: re.Pattern, *, name: str, rule: str) -> str:
    if not pattern.match(value):
        raise ArrivalError(f"{name} must be {rule}; this link has {value[:80]!r}")
    return value


def submit_host_allowed(url: str, allowed_hosts: Iterable[str]) -> bool:
    """True when `url` is on one of `allowed_hosts` (scheme and host, e.g. "https://www.mturk.com")."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    return parts.scheme in ("http", "https") and origin in {host.rstrip("/").lower() for host in allowed_hosts}


def arrival_parse(
    platform: str, params: Mapping[str, str], *, mturk_submit_hosts: Iterable[str] = DEFAULT_MTURK_SUBMIT_HOSTS
) -> Arrival:
    """The participant a study link names; an Arrival without id when it names none; ArrivalError when malformed."""
    if platform == PROLIFIC:
        pid = _value(params, "PROLIFIC_PID").lower()
        if not pid:
            return Arrival(platform)
        _check(pid, PROLIFIC_ID, name="PROLIFIC_PID", rule="24 hexadecimal characters")
        data = {}
        for name in ("STUDY_ID", "SESSION_ID"):
            value = _value(params, name).lower()
            if value:
                data[name] = _check(value, PROLIFIC_ID, name=name, rule="24 hexadecimal characters")
        return Arrival(platform, pid, data)
    if platform == MTURK:
        assignment = _value(params, "assignmentId")
        if assignment == MTURK_PREVIEW_ASSIGNMENT:
            return Arrival(platform, is_mturk_preview=True)
        worker = _value(params, "workerId")
        if not worker:
            return Arrival(platform)
        _check(worker, MTURK_WORKER_ID, name="workerId", rule="8 to 40 capital letters and digits")
        _check(assignment, MTURK_ASSIGNMENT_ID, name="assignmentId", rule="10 to 64 capital letters and digits")
        data = {"assignmentId": assignment}
        hit = _value(params, "hitId")
        if hit:
            data["hitId"] = _check(hit, MTURK_ASSIGNMENT_ID, name="hitId", rule="10 to 64 capital letters and digits")
        submit_to = _value(params, "turkSubmitTo")
        if not submit_to or not submit_host_allowed(submit_to, mturk_submit_hosts):
            raise ArrivalError(
                f"turkSubmitTo must be one of {', '.join(mturk_submit_hosts)}; this link has {submit_to[:80]!r}"
            )
        data["turkSubmitTo"] = submit_to.rstrip("/")
        return Arrival(platform, worker, data)
    if platform == GENERIC:
        pid = _value(params, "pid")
        if not pid:
            return Arrival(platform)
        return Arrival(platform, _check(pid, GENERIC_ID, name="pid", rule="1 to 64 letters, digits, '.', '_' or '-'"))
    raise ArrivalError(f"unknown platform {platform!r}")


def arrival_platform(platforms: Iterable[str], params: Mapping[str, str]) -> str:
    """The platform whose identity parameters the link carries, among `platforms` ("" when it carries none).

    ArrivalError when it carries those of two of them: nobody could tell who the participant is. Parameters of a
    platform the study does not recruit on name nobody here (the page asks to start from the platform)."""
    enabled = [
        platform
        for platform, names in IDENTITY_PARAMETERS.items()
        if platform in platforms and any(name in params for name in names)
    ]
    if len(enabled) > 1:
        raise ArrivalError(f"this link carries the parameters of {' and '.join(enabled)}: it can name one participant")
    return enabled[0] if enabled else ""


def prolific_completion_url(code: str) -> str:
    return f"{PROLIFIC_COMPLETION_URL}?{urlencode({'cc': code})}"


def mturk_submit_url(turk_submit_to: str) -> str:
    return f"{turk_submit_to.rstrip('/')}/mturk/externalSubmit"


def generic_redirect_url(template: str, code: str) -> str:
    return template.replace("{code}", code) if template else ""
