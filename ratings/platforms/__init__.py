"""Crowd platforms spoken to through their APIs: Prolific's REST API v1 (prolific.py) and MTurk through boto3
(mturk.py). The clients only speak each wire format and turn any refusal into a PlatformError; what to send,
the preview, the log and the idempotency live in ratings/platforms/actions.py."""


class PlatformError(Exception):
    """The platform refused a request or could not be reached: `status` (0: no answer) and its own message."""

    def __init__(self, message: str, *, status: int = 0, data: dict | None = None):
        super().__init__(message)
        self.status = status
        self.data = data or {}
