"""Logging filters for the console (referenced by LOGGING in config/settings.py)."""

import logging


class NoTracebackForClientErrors(logging.Filter):
    """A 4xx is the client's mistake (a bad Host header, a form sent twice): say it in one line, without the
    traceback Django attaches to it. Server errors (5xx) keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status is not None and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
