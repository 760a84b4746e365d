"""The full stack (scripts/stack.py) shared by the end-to-end and fault tests: started once, when first asked for."""

import json
import re
import shutil
import time

import pytest

from scripts.stack import Stack, postgres_bin_dir


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    for binary in ("redis-server", "runuser"):
        if shutil.which(binary) is None:
            pytest.skip(f"needs {binary}")
    try:
        postgres_bin_dir()
    except RuntimeError as error:
        pytest.skip(str(error))
    started = time.monotonic()
    # Small chunks so runs have enough of them to interrupt; leases short enough to expire within a test.
    # The workers at normal priority: the suite's other process keeps a core busy at normal priority, and a lowered
    # worker could miss these one-second heartbeats (the priority itself is tested in test_worker_priority.py).
    extra = {
        "METRICS_CHUNK_SIZE": "6",
        "METRICS_CHUNK_LEASE_SECONDS": "3",
        "METRICS_WORKER_HEARTBEAT_SECONDS": "1",
        "WORKER_NICENESS": "0",
    }
    with Stack(tmp_path_factory.mktemp("stack"), extra_env=extra, say=print) as running:
        running.timings["total start"] = round(time.monotonic() - started, 1)
        print(f"stack started: {running.timings}")
        yield running


@pytest.fixture(scope="session")
def demo(stack) -> dict:
    """The demo dataset (audio uploaded to S3) and accounts; returns {username: password} and ids."""
    output = stack.manage("demo", "--no-metrics", "--url", stack.web_url + "/", check=True).stdout
    # The demo prints its accounts as a table: Account | Roles | Password.
    passwords = dict(re.findall(r"^(admin|rater)\s+\S+\s+(\S+)$", output, flags=re.M))
    ids = (
        stack.manage(
            "shell",
            "-c",
            (
                "import json; from ratings.models import Campaign, HeadphoneCheck; "
                "from django.contrib.auth import get_user_model; from django.utils import timezone; "
                "from corpus.models import Clip; c = Campaign.objects.get(name='demo-thumbs'); "
                # The rater has passed the headphone screen (its own pages are tested in tests/ratings).
                "HeadphoneCheck.objects.create(rater=get_user_model().objects.get(username='rater'), kind='antiphase', "
                "trials=[], correct_count=6, passed=True, completed_at=timezone.now()); "
                "print(json.dumps({'campaign': c.pk, 'rater': get_user_model().objects.get(username='rater').pk, "
                "'clips': list(Clip.objects.filter(dataset__name='demo').order_by('pk')"
                ".values_list('pk', flat=True)), "
                "'rater_item_tokens': list(c.assignments.get(rater__username='rater').items.order_by('position')"
                ".values_list('token', flat=True))}))"
            ),
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    return {"passwords": passwords, **json.loads(ids)}
