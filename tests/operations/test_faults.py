"""Faults on the full stack: Redis restarted mid-run, PostgreSQL connections terminated mid-run and mid-import.

Every fault hits only the stack's own private servers (its redis-server, its PostgreSQL cluster started in a
temporary folder), never a shared one. After each: nothing half-written, no score twice, the work completes.
"""

import json
import subprocess
import sys
import time

import psycopg
import pytest
import requests

from scripts.stack import PROJECT_DIR
from tests.chunk_gate import FOLDER_VARIABLE, ChunkGate

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def admin_headers(stack, demo) -> dict:
    token = requests.post(
        f"{stack.web_url}/api/token/", data={"username": "admin", "password": demo["passwords"]["admin"]}, timeout=30
    ).json()["token"]
    return {"Authorization": f"Token {token}"}


@pytest.fixture
def gate(stack, tmp_path):
    """The stack's worker replaced by one whose chunks wait at a gate the test opens (tests/chunk_gate.py), so
    "mid-run" is a state the test sets, not a moment it hopes to catch; the plain worker is restored after."""
    chunk_gate = ChunkGate(tmp_path / "gate")
    stack.worker.stop()
    worker = stack.start_worker(include=["tests.chunk_gate"], **{FOLDER_VARIABLE: str(chunk_gate.folder)})
    chunk_gate.worker = worker
    yield chunk_gate
    chunk_gate.open()
    worker.stop()
    stack.start_worker()


def database(stack):
    return psycopg.connect(stack.database_url, autocommit=True)


def import_clotho_items(stack, tmp_path, shared_dir, *, name: str, items: int) -> None:
    data = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:items]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    stack.manage("import_pairwise_judgements", str(path), "--dataset", name, check=True)


def start_run(stack, headers, dataset: str) -> dict:
    response = requests.post(
        f"{stack.web_url}/api/metric-runs/",
        json={"dataset": dataset, "metrics": ["ROUGE_L"]},
        headers=headers,
        timeout=60,
    )
    assert response.status_code == 201, response.text
    return response.json()


def run_row(stack, run_id: int) -> dict:
    with database(stack) as connection:
        status, done, failed, total = connection.execute(
            "SELECT status, chunks_done, chunks_failed, chunks_total FROM metrics_bridge_metricrun WHERE id = %s",
            [run_id],
        ).fetchone()
    return {"status": status, "done": done, "failed": failed, "total": total}


def wait_run(stack, run_id: int, predicate, *, timeout: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = run_row(stack, run_id)
        if predicate(row):
            return row
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}: {run_row(stack, run_id)}\n{stack.logs_tail()}")


def assert_scored_exactly_once(stack, run_id: int) -> None:
    """Every planned (caption, reference set) of the run has exactly one ROUGE_L score, and the run is done."""
    with database(stack) as connection:
        planned = connection.execute(
            "SELECT count(DISTINCT (request->>'caption_id') || ':' || (request->>'reference_set_key')) "
            "FROM metrics_bridge_metricrunchunk chunk, jsonb_array_elements(chunk.requests) request "
            "WHERE chunk.run_id = %s",
            [run_id],
        ).fetchone()[0]
        stored, distinct = connection.execute(
            "SELECT count(*), count(DISTINCT (score.caption_id, score.reference_set_id)) "
            "FROM metrics_bridge_metricscore score "
            "JOIN metrics_bridge_referenceset refs ON refs.id = score.reference_set_id "
            "WHERE score.metric = 'ROUGE_L' AND (score.caption_id::text || ':' || refs.key) IN ("
            "  SELECT (request->>'caption_id') || ':' || (request->>'reference_set_key')"
            "  FROM metrics_bridge_metricrunchunk chunk,"
            "  jsonb_array_elements(chunk.requests) request WHERE chunk.run_id = %s)",
            [run_id],
        ).fetchone()
        statuses = dict(
            connection.execute(
                "SELECT status, count(*) FROM metrics_bridge_metricrunchunk WHERE run_id = %s GROUP BY status", [run_id]
            ).fetchall()
        )
    assert planned > 0 and stored == distinct == planned
    assert set(statuses) == {"done"}


def terminate_backends(stack, *, only_in_transaction: bool = False) -> list[int]:
    """pg_terminate_backend on the stack's own database (its private cluster), sparing this connection."""
    condition = (
        "AND xact_start IS NOT NULL AND now() - xact_start > interval '200 milliseconds'" if only_in_transaction else ""
    )
    with database(stack) as connection:
        rows = connection.execute(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = current_database() AND pid <> pg_backend_pid() {condition}"
        ).fetchall()
    return [pid for pid, terminated in rows if terminated]


def test_redis_restarted_without_its_data_mid_run(stack, demo, admin_headers, gate, tmp_path, shared_dir):
    # Given a run of a dozen chunks going through the stack's Redis, two done and the third held at the gate
    import_clotho_items(stack, tmp_path, shared_dir, name="fault-redis", items=3)
    run = start_run(stack, admin_headers, "fault-redis")
    assert run["chunks_total"] >= 8
    gate.allow(2)
    gate.wait_until_waiting(3, worker=gate.worker)
    wait_run(stack, run["id"], lambda row: row["done"] == 2, timeout=90, what="2 chunks")
    # When Redis is replaced by an empty one (its queued messages are gone)
    stack.redis.restart(lose_data=True)
    gate.open()
    # Then the worker reconnects, notices the pending chunks nobody will deliver, and the run completes
    final = wait_run(
        stack,
        run["id"],
        lambda row: row["status"] != "running" and row["status"] != "pending",
        timeout=120,
        what="run end after the Redis restart",
    )
    assert final["status"] == "done", final
    assert_scored_exactly_once(stack, run["id"])
    assert stack.health()[0] == 200


def test_postgres_connections_terminated_mid_run(stack, demo, admin_headers, gate, tmp_path, shared_dir):
    import_clotho_items(stack, tmp_path, shared_dir, name="fault-pg-run", items=3)
    run = start_run(stack, admin_headers, "fault-pg-run")
    assert run["chunks_total"] >= 8
    # Twice, at different moments of the run: while a chunk is held at the gate after one, then three more passed
    # (the worker takes one chunk at a time, so the held chunk arrived after the ones before it were stored)
    gate.allow(1)
    gate.wait_until_waiting(2, worker=gate.worker)
    terminated = terminate_backends(stack)
    arrived = gate.arrived()
    gate.allow(arrived + 2)
    gate.wait_until_waiting(arrived + 3, worker=gate.worker)
    terminated += terminate_backends(stack)
    assert terminated, "no backend to terminate"
    assert run_row(stack, run["id"])["done"] < run["chunks_total"], "the run ended before the faults"
    gate.open()
    final = wait_run(
        stack,
        run["id"],
        lambda row: row["status"] not in ("pending", "running"),
        timeout=150,
        what="run end after terminated connections",
    )
    assert final["status"] == "done", final
    assert_scored_exactly_once(stack, run["id"])
    # The web app answers normally again (health-checked connections replaced the dead ones)
    assert stack.health()[0] == 200


def test_postgres_connection_terminated_mid_import_leaves_nothing_then_the_import_completes(stack, shared_dir):
    source = shared_dir / "datasets" / "clotho_eval.json"
    command = [sys.executable, "manage.py", "import_pairwise_judgements", str(source), "--dataset", "fault-import"]

    def dataset_counts() -> tuple[int, int, int]:
        with database(stack) as connection:
            return connection.execute(
                "SELECT (SELECT count(*) FROM annotation_dataset WHERE name = 'fault-import'),"
                " (SELECT count(*) FROM annotation_clip clip JOIN annotation_dataset d ON d.id = clip.dataset_id"
                "   WHERE d.name = 'fault-import'),"
                " (SELECT count(*) FROM ratings_pairwisevote vote"
                "   JOIN ratings_captionpair pair ON pair.id = vote.pair_id"
                "   JOIN annotation_clip clip ON clip.id = pair.clip_id"
                "   JOIN annotation_dataset d ON d.id = clip.dataset_id"
                "   WHERE d.name = 'fault-import')"
            ).fetchone()

    # The import runs in one transaction; terminate its backend while that transaction is open
    importer = subprocess.Popen(
        command, cwd=PROJECT_DIR, env=stack.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    killed: list[int] = []
    deadline = time.monotonic() + 120
    while importer.poll() is None and not killed and time.monotonic() < deadline:
        killed = terminate_backends(stack, only_in_transaction=True)
        time.sleep(0.05)
    stdout, stderr = importer.communicate(timeout=120)
    assert killed, f"the import finished before its transaction could be hit:\n{stdout}"
    assert importer.returncode != 0
    assert "terminat" in stderr.lower() or "connection" in stderr.lower(), stderr[-2000:]
    assert dataset_counts() == (0, 0, 0)  # nothing half-written

    # Run again: everything, once; and a third time changes nothing
    stack.manage(*command[2:], check=True)
    assert dataset_counts() == (1, 250, 7000)
    stack.manage(*command[2:], check=True)
    assert dataset_counts() == (1, 250, 7000)
