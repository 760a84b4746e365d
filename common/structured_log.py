"""Structured logs: one JSON object per line for metric runs, chunks, workers and imports.

Call `log_event(logger, "chunk_done", run=1, chunk=3, ...)` on a logger under `captioneval.`;
the settings route that namespace to `JsonLinesFormatter`, which writes
`{"time": ..., "level": ..., "logger": ..., "event": ..., <fields>}`. Log shippers read the
fields without parsing prose; a person can still grep for the event name.
"""

import functools
import json
import logging
import time
from datetime import UTC, datetime

EVENT_FIELDS = "event_fields"


def log_event(logger: logging.Logger, event: str, *, level: int = logging.INFO, **fields) -> None:
    logger.log(level, event, extra={EVENT_FIELDS: {"event": event, **fields}})


class JsonLinesFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, EVENT_FIELDS, None)
        if fields:
            entry.update(fields)
        else:
            entry["message"] = record.getMessage()
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


imports_logger = logging.getLogger("captioneval.imports")


def logged_import(kind: str):
    """Decorator for an import service: logs import_started / import_finished (with its summary) / import_failed."""

    def decorator(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            source = next(
                (kwargs[key] for key in ("source_name", "file_name", "directory", "path") if kwargs.get(key)), None
            )
            started = time.monotonic()
            log_event(imports_logger, "import_started", kind=kind, source=str(source) if source else None)
            try:
                result = function(*args, **kwargs)
            except Exception as error:
                log_event(
                    imports_logger,
                    "import_failed",
                    level=logging.WARNING,
                    kind=kind,
                    source=str(source) if source else None,
                    error=f"{type(error).__name__}: {error}"[:2000],
                    duration_ms=round((time.monotonic() - started) * 1000),
                )
                raise
            summary = result.as_dict() if hasattr(result, "as_dict") else result if isinstance(result, dict) else None
            log_event(
                imports_logger,
                "import_finished",
                kind=kind,
                source=str(source) if source else None,
                duration_ms=round((time.monotonic() - started) * 1000),
                summary=summary,
            )
            return result

        return wrapper

    return decorator
