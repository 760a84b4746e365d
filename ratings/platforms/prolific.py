"""Prolific's public REST API v1: the few endpoints a study needs, with the token from PROLIFIC_API_TOKEN.

Endpoints (https://api.prolific.com/api/v1/, header `Authorization: Token <token>`):
- GET  studies/{id}/submissions/                 the study's submissions (paged: `_links.next.href`)
- POST submissions/{id}/transition/              {"action": "APPROVE"} or {"action": "REJECT", "message",
                                                 "rejection_category"}
- POST submissions/bonus-payments/               {"study_id", "csv_bonuses": "<participant id>,<amount>\n..."}
                                                 makes a bulk bonus (not paid yet), answers its `id`
- POST bulk-bonus-payments/{id}/pay/             pays it
- POST submissions/bulk-screen-out/{study id}/   {"submission_ids": [...], "bonus_per_submission": 0.5}: screened
                                                 out (as a return) and paid that much each, in the study currency
- POST studies/{id}/transition/                  {"action": "PAUSE"} or {"action": "START"} (resume)
Prolific answers errors as {"error": {"status", "title", "detail"}}; the detail is what the staff page shows.
"""

import os
from dataclasses import dataclass

import requests

from ratings.platforms import PlatformError

DEFAULT_API_URL = "https://api.prolific.com/api/v1/"
TIMEOUT_SECONDS = 20
MAX_PAGES = 100  # 100 pages of submissions is far more than a study has: a loop guard, not a limit
REJECTION_CATEGORIES = (
    ("TOO_QUICKLY", "Too quickly"),
    ("TOO_SLOWLY", "Too slowly"),
    ("FAILED_INSTRUCTIONS", "Failed instructions"),
    ("INCOMP_LONGITUDINAL", "Incomplete longitudinal"),
    ("FAILED_CHECK", "Failed attention checks"),
    ("LOW_EFFORT", "Low effort"),
    ("MALINGERING", "Malingering"),
    ("NO_CODE", "No code"),
    ("BAD_CODE", "Bad code"),
    ("NO_DATA", "No data"),
    ("UNSUPP_DEVICE", "Unsupported device"),
    ("OTHER", "Other"),
)
# Prolific refuses a rejection whose message is shorter than this.
REJECTION_MESSAGE_MIN = 100
# Submission statuses after which the participant no longer holds a place.
FREEING_STATUSES = ("RETURNED", "TIMED-OUT")


@dataclass(frozen=True)
class Response:
    status: int
    data: dict


def _error_message(status: int, data) -> str:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        detail = error.get("detail") or error.get("title") or error
        if isinstance(detail, dict):
            detail = "; ".join(f"{key}: {value}" for key, value in detail.items())
        return f"Prolific answered {status}: {detail}"
    return f"Prolific answered {status}: {str(data)[:300] or 'no detail'}"


class ProlificClient:
    """One authenticated session; every method returns the parsed answer or raises PlatformError."""

    def __init__(self, token: str | None = None, base_url: str | None = None):
        self.token = token if token is not None else os.environ.get("PROLIFIC_API_TOKEN", "")
        if not self.token:
            raise PlatformError("PROLIFIC_API_TOKEN is not set: Prolific actions need the API token (Settings → API)")
        self.base_url = (base_url or os.environ.get("PROLIFIC_API_URL") or DEFAULT_API_URL).rstrip("/") + "/"

    def _request(self, method: str, path: str, body: dict | None = None) -> Response:
        url = path if path.startswith("http") else self.base_url + path.lstrip("/")
        try:
            answer = requests.request(
                method,
                url,
                json=body,
                headers={"Authorization": f"Token {self.token}", "Accept": "application/json"},
                timeout=TIMEOUT_SECONDS,
            )
        except requests.RequestException as error:
            raise PlatformError(f"Prolific could not be reached: {error.__class__.__name__}") from error
        try:
            data = answer.json() if answer.content else {}
        except ValueError:
            data = {"text": answer.text[:300]}
        if not isinstance(data, dict):
            data = {"results": data}
        if answer.status_code >= 400:
            raise PlatformError(_error_message(answer.status_code, data), status=answer.status_code, data=data)
        return Response(answer.status_code, data)

    def study_submissions(self, study_id: str) -> list[dict]:
        submissions, path = [], f"studies/{study_id}/submissions/"
        for _ in range(MAX_PAGES):
            data = self._request("GET", path).data
            submissions.extend(data.get("results") or [])
            path = ((data.get("_links") or {}).get("next") or {}).get("href")
            if not path:
                break
        return submissions

    def submission_transition(self, submission_id: str, body: dict) -> Response:
        return self._request("POST", f"submissions/{submission_id}/transition/", body)

    def bonus_create(self, study_id: str, bonuses: list[tuple[str, str]]) -> Response:
        csv_bonuses = "\n".join(f"{participant_id},{amount}" for participant_id, amount in bonuses)
        return self._request("POST", "submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv_bonuses})

    def bonus_pay(self, bulk_id: str) -> Response:
        return self._request("POST", f"bulk-bonus-payments/{bulk_id}/pay/")

    def screen_out(self, study_id: str, body: dict) -> Response:
        return self._request("POST", f"submissions/bulk-screen-out/{study_id}/", body)

    def study_transition(self, study_id: str, action: str) -> Response:
        return self._request("POST", f"studies/{study_id}/transition/", {"action": action})
