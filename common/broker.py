"""Which Celery broker the app uses, and a name for it that carries no secret.

Two brokers: Redis when REDIS_URL is set; otherwise an embedded broker that needs no
server: kombu's filesystem transport made atomic (common/broker_transport.py; messages
are files in a folder that the web process, `compute_metrics` and the workers share).
Its folder belongs to one database:
two checkouts or two test databases on one machine must never feed each other's
workers, so by default it sits next to the SQLite file (or is named after the
PostgreSQL database). Plain Python: no Django import, usable before settings load.
"""

import hashlib
from pathlib import Path
from urllib.parse import urlparse

from kombu.transport import TRANSPORT_ALIASES

# The URL scheme of the embedded broker. kombu's own `filesystem` transport can hand a consumer a message file
# that is still being written (the worker dies, the message is lost): the scheme names the transport that cannot.
# A scheme rather than Celery's `broker_transport` setting, which would outlive a broker URL set to Redis.
EMBEDDED_SCHEME = "filesystem-atomic"
TRANSPORT_ALIASES[EMBEDDED_SCHEME] = "common.broker_transport:Transport"
# The host means nothing to the filesystem transport; naming it spares kombu's warning that none was supplied.
EMBEDDED_BROKER_URL = f"{EMBEDDED_SCHEME}://localhost/"


def embedded_broker_folder(*, database: dict, base_dir: Path) -> Path:
    """The default folder of the embedded broker for a Django database settings dict."""
    if database["ENGINE"].endswith("sqlite3"):
        database_file = Path(database["NAME"])
        return database_file.with_name(database_file.name + ".celery-broker")
    identity = f"{database.get('HOST') or 'localhost'}:{database.get('PORT') or 5432}/{database['NAME']}"
    return base_dir / "celery-broker" / hashlib.sha256(identity.encode()).hexdigest()[:16]


def embedded_broker_options(folder: Path) -> dict:
    """Transport options of the filesystem broker in `folder` (created if missing)."""
    queue = folder / "queue"
    control = folder / "control"
    for path in (queue, control):
        path.mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "control_folder": str(control),
        "store_processed": False,
        # Seconds between looks at the folder when it is empty: how soon an idle worker notices a new chunk.
        "polling_interval": 0.25,
    }


def broker_identity(url: str, transport_options: dict | None = None) -> str:
    """A stable name of the broker without credentials, e.g. `redis://host:6379/0` or `filesystem:/path`.

    Workers record it with their heartbeat so a web process only counts workers that
    listen to its own broker.
    """
    if is_embedded_broker(url):
        return "filesystem:" + str((transport_options or {}).get("data_folder_in", ""))
    parsed = urlparse(url)
    host = parsed.hostname or ""
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path}"


def is_embedded_broker(url: str) -> bool:
    """Whether `url` names a filesystem broker (the embedded one, or kombu's own transport it replaces)."""
    return url.startswith((f"{EMBEDDED_SCHEME}:", "filesystem:"))
