"""The embedded broker's transport: kombu's filesystem transport, made so that it never loses a message.

kombu's own (kombu/transport/filesystem.py) creates a message file in the queue folder and only then
writes it, and a consumer takes whatever file it lists: it can take one that is still empty, the JSON
error that follows kills the Celery worker, and the message is gone (deleted when it was taken). Here,
in folders beside the queue folder (one filesystem, so renames are atomic):

- a producer writes the message in `incoming/` and renames it into the queue: a file in the queue is
  always complete;
- a consumer claims a file by renaming it into `claimed/` under a name carrying its pid. One rename of a
  file succeeds, the others find it gone: two consumers never deliver the same message. The claimed file
  is deleted when the message is acknowledged or rejected (or at once for a consumer that does not
  acknowledge), and sent again when kombu restores unacknowledged messages (a worker's warm shutdown);
- a claim whose consumer died (its pid is gone: killed, out of memory) goes back to the queue when the
  next channel opens (a worker starting): a message a worker had taken but not finished is delivered
  again, as Redis does after its visibility timeout (kombu's transport deleted it when it was taken);
- a file that is not a message (empty, cut short, not JSON, no envelope) goes to `bad/`, logged, and the
  consumer goes on with the next one: kept for inspection, never a dead worker.

One machine only: claims are matched to live processes by pid.
"""

import logging
import os
import tempfile
import uuid
from collections import deque
from pathlib import Path
from queue import Empty
from time import monotonic_ns

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property

from common.structured_log import log_event

logger = logging.getLogger("captioneval.broker")

MESSAGE_SUFFIX = ".msg"


def message_queue(name: str) -> str | None:
    """The queue a message file belongs to: names are `<time>_<uuid>.<queue>.msg` (as kombu's), the queue may
    hold dots; None for anything else (a leftover, a file somebody put there)."""
    stem, dot, rest = name.partition(".")
    if not dot or "_" not in stem or not rest.endswith(MESSAGE_SUFFIX):
        return None
    return rest[: -len(MESSAGE_SUFFIX)]


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody else's process: alive
        return True
    return True


class QoS(virtual.QoS):
    """kombu's bookkeeping of delivered messages; an acknowledged or rejected message's claim file goes."""

    def ack(self, delivery_tag):
        super().ack(delivery_tag)
        self.channel.claim_done(delivery_tag)

    def reject(self, delivery_tag, requeue=False):
        super().reject(delivery_tag, requeue=requeue)  # a requeued message is sent again first
        self.channel.claim_done(delivery_tag)


class Channel(filesystem.Channel):
    QoS = QoS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Names of the last listing not yet tried, per queue: listing a folder of thousands of messages for
        # each message would make a long queue quadratic. Names others took meanwhile fail their claim.
        self._listed: dict[str, deque] = {}
        self._tables: dict[str, tuple] = {}  # exchange -> (file version, table)
        self._claims: dict[str, Path] = {}  # delivery tag -> claim file of a message delivered, not yet settled
        for folder in (self.incoming_folder, self.claimed_folder, self.bad_folder):
            folder.mkdir(parents=True, exist_ok=True)
        self._return_abandoned_claims()

    # --- folders ---------------------------------------------------------------------------------

    @cached_property
    def queue_folder(self) -> Path:
        return Path(self.data_folder_in)

    @cached_property
    def incoming_folder(self) -> Path:
        return Path(self.data_folder_out).parent / "incoming"

    @cached_property
    def claimed_folder(self) -> Path:
        return self.queue_folder.parent / "claimed"

    @cached_property
    def bad_folder(self) -> Path:
        return self.queue_folder.parent / "bad"

    # --- producing -------------------------------------------------------------------------------

    def _put(self, queue, payload, **kwargs):
        """Write the message outside the queue folder, then rename it in: consumers see it whole or not at all."""
        # Zero-padded nanoseconds of the machine-wide monotonic clock: names sort in sending order (kombu's
        # milliseconds leave the messages of one millisecond in random order).
        name = f"{monotonic_ns():020d}_{uuid.uuid4()}.{queue}{MESSAGE_SUFFIX}"
        written = self.incoming_folder / name
        try:
            with open(written, "xb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.replace(written, Path(self.data_folder_out) / name)
        except OSError as error:
            written.unlink(missing_ok=True)
            raise ChannelError(
                f"cannot add message {name} to the queue folder {self.data_folder_out}: {error}"
            ) from error

    def get_table(self, exchange):
        """kombu's exchange table, read again only when its file changed: kombu reads it (open, lock, parse)
        for every message sent, as many opens as the message files themselves."""
        try:
            stat = (self.control_folder / f"{exchange}.exchange").stat()
        except FileNotFoundError:
            return []
        # A binding rewrites the file in place, longer: size and mtime change (a read that races a write sees the
        # new table under kombu's lock and is cached under the old key, so it is read once more, never missed).
        version = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        cached = self._tables.get(exchange)
        if cached is None or cached[0] != version:
            cached = self._tables[exchange] = (version, super().get_table(exchange))
        return cached[1]

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        """kombu's binding, except that the exchange table is created whole (a hard link of a file written
        aside fails if another process created it first): a reader never sees it empty, two processes that
        bind at once never overwrite each other."""
        table = self.control_folder / f"{exchange}.exchange"
        self.control_folder.mkdir(parents=True, exist_ok=True)
        if not table.exists():
            entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
            handle, written = tempfile.mkstemp(dir=self.control_folder, suffix=".writing")
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(str_to_bytes(dumps([entry])))
                os.link(written, table)
                return
            except FileExistsError:
                pass  # created meanwhile: add this binding to it as kombu does
            finally:
                os.unlink(written)
        super()._queue_bind(exchange, routing_key, pattern, queue)

    # --- consuming -------------------------------------------------------------------------------

    def _get(self, queue):
        """The oldest message of `queue` this consumer could claim; Empty when a fresh listing has none."""
        payload = self._claim_first(self._listed.get(queue))
        if payload is None:  # the last listing is used up: list the folder again
            payload = self._claim_first(self._relist(queue))
        if payload is None:
            raise Empty()
        return payload

    def _relist(self, queue: str) -> deque:
        self._listed[queue] = self._list(queue)
        return self._listed[queue]

    def _claim_first(self, waiting: deque | None) -> dict | None:
        while waiting:
            payload = self._claim(waiting.popleft())
            if payload is not None:
                return payload
        return None

    def _list(self, queue: str) -> deque:
        try:
            names = os.listdir(self.queue_folder)
        except OSError as error:
            raise ChannelError(f"cannot list the queue folder {self.queue_folder}: {error}") from error
        return deque(sorted(name for name in names if message_queue(name) == queue))

    def _claim(self, name: str) -> dict | None:
        """The message in queue file `name` if this consumer got it (None: another one did, or it was bad)."""
        claimed = self.claimed_folder / f"{os.getpid()}.{name}"
        try:
            os.rename(self.queue_folder / name, claimed)
        except FileNotFoundError:
            return None  # another consumer claimed it first
        except OSError as error:
            raise ChannelError(f"cannot claim message {name} in {self.queue_folder}: {error}") from error
        try:
            payload = loads(bytes_to_str(claimed.read_bytes()))
            self._check_envelope(payload)
        except (OSError, ValueError, TypeError, KeyError) as error:
            self._set_aside(claimed, name, error)
            return None
        self._claims[payload["properties"]["delivery_tag"]] = claimed
        return payload

    def claim_done(self, delivery_tag) -> None:
        """The message was acknowledged, rejected or sent again: its claim file goes (or to processed/)."""
        claimed = self._claims.pop(delivery_tag, None)
        if claimed is None:
            return
        if self.store_processed:
            os.replace(claimed, Path(self.processed_folder) / claimed.name.partition(".")[2])
        else:
            claimed.unlink(missing_ok=True)

    def basic_get(self, queue, no_ack=False, **kwargs):
        message = super().basic_get(queue, no_ack=no_ack, **kwargs)
        if message is not None and no_ack:
            self.claim_done(message.delivery_tag)
        return message

    def basic_consume(self, queue, no_ack, callback, consumer_tag, **kwargs):
        if no_ack:  # nothing will acknowledge these messages: settled as they are handed over

            def settled_callback(message):
                self.claim_done(message.delivery_tag)
                return callback(message)

            return super().basic_consume(queue, no_ack, settled_callback, consumer_tag, **kwargs)
        return super().basic_consume(queue, no_ack, callback, consumer_tag, **kwargs)

    def _restore(self, message):
        """An unacknowledged message sent again (kombu at a warm shutdown): the new file first, then the claim."""
        super()._restore(message)
        self.claim_done(message.delivery_tag)

    def _check_envelope(self, payload) -> None:
        """Raise unless `payload` is what virtual.Message needs (kombu would raise while delivering it) with a
        body its content type can read (Celery would log a JSON body it cannot decode and drop the message:
        here it is kept in bad/ with the others)."""
        if not isinstance(payload, dict) or not isinstance(payload.get("properties"), dict):
            raise TypeError("not a message envelope (no properties)")
        properties = payload["properties"]
        if "delivery_tag" not in properties or not isinstance(properties.get("delivery_info", {}), dict):
            raise KeyError("the message's properties have no delivery tag or delivery info")
        if payload.get("body"):
            body = self.decode_body(payload["body"], properties.get("body_encoding"))
            if payload.get("content-type") == "application/json":
                loads(bytes_to_str(body))

    def _set_aside(self, claimed: Path, name: str, error: Exception) -> None:
        kept, reason = self.bad_folder / name, f"{type(error).__name__}: {error}"
        try:
            os.replace(claimed, kept)
        except OSError as move_error:
            kept, reason = claimed, f"{reason} (not moved to {self.bad_folder}: {move_error})"
        log_event(logger, "broker_bad_message", level=logging.ERROR, file=str(kept), error=reason)

    def _return_abandoned_claims(self) -> None:
        """Put back in the queue the files claimed by consumers that died before reading them."""
        try:
            claims = os.listdir(self.claimed_folder)
        except OSError:
            return
        for claim in claims:
            pid, _, name = claim.partition(".")
            if not pid.isdigit() or process_alive(int(pid)):
                continue
            try:
                os.replace(self.claimed_folder / claim, self.queue_folder / name)
            except OSError:
                continue  # another channel put it back first
            log_event(logger, "broker_claim_returned", level=logging.WARNING, file=name, dead_pid=int(pid))

    # --- counting and purging (kombu's, with exact queue names) -----------------------------------

    def _size(self, queue):
        return len(self._list(queue))

    def _purge(self, queue):
        count = 0
        for name in self._list(queue):
            try:
                (self.queue_folder / name).unlink()
            except FileNotFoundError:
                continue  # taken meanwhile
            count += 1
        self._listed.pop(queue, None)
        return count


class Transport(filesystem.Transport):
    """kombu's filesystem transport with the channel above (see the module's note)."""

    Channel = Channel
    # State of its own (exchanges and bindings held in memory), not shared with kombu's filesystem transport.
    global_state = virtual.BrokerState()
    driver_name = "filesystem-atomic"
