"""Producer and consumer processes on a filesystem broker folder, for the broker stress test.

    python -m tests.operations.broker_stress declare FOLDER TRANSPORT
    python -m tests.operations.broker_stress produce FOLDER TRANSPORT NAME COUNT
    python -m tests.operations.broker_stress consume FOLDER TRANSPORT OUT_FILE DONE_MARKER [--survive]

TRANSPORT is `atomic` (the embedded broker's, common/broker_transport.py) or `kombu` (kombu's own filesystem
transport). A producer sends COUNT messages `NAME-<i>`; a consumer writes every message body it received, one a
line, to OUT_FILE, and stops once DONE_MARKER exists and the queue is empty. An error kills the consumer (exit
status 1), as it kills a Celery worker, unless --survive: then it writes `error <type>` lines and goes on.
No Django: kombu and the broker modules only.
"""

import sys
from pathlib import Path

from kombu import Connection

from common.broker import EMBEDDED_BROKER_URL, embedded_broker_options

QUEUE = "stress"
URLS = {"atomic": EMBEDDED_BROKER_URL, "kombu": "filesystem://localhost/"}


def connection(folder: Path, transport: str) -> Connection:
    options = {**embedded_broker_options(folder), "polling_interval": 0.005}
    return Connection(URLS[transport], transport_options=options)


def declare(folder: Path, transport: str) -> None:
    with connection(folder, transport) as conn:
        conn.SimpleQueue(QUEUE).close()


def produce(folder: Path, transport: str, name: str, count: int) -> None:
    with connection(folder, transport) as conn:
        queue = conn.SimpleQueue(QUEUE)
        for index in range(count):
            queue.put(f"{name}-{index}", serializer="json")
        queue.close()


def consume(folder: Path, transport: str, out_file: Path, done_marker: Path, *, survive: bool) -> None:
    received = []
    try:
        with connection(folder, transport) as conn:
            queue = conn.SimpleQueue(QUEUE)
            while True:
                producers_done = done_marker.exists()
                try:
                    message = queue.get(timeout=0.2)
                except queue.Empty:
                    if producers_done:
                        break
                    continue
                except Exception as error:  # what kills a Celery worker (e.g. JSONDecodeError)
                    if not survive:
                        raise
                    received.append(f"error {type(error).__name__}")
                    continue
                received.append(message.payload)
                message.ack()
            queue.close()
    finally:
        out_file.write_text("".join(f"{line}\n" for line in received))


if __name__ == "__main__":
    command, folder, transport, *rest = sys.argv[1:]
    if command == "declare":
        declare(Path(folder), transport)
    elif command == "produce":
        produce(Path(folder), transport, rest[0], int(rest[1]))
    else:
        consume(Path(folder), transport, Path(rest[0]), Path(rest[1]), survive="--survive" in rest)
