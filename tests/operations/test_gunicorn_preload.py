"""What gunicorn's master does once before forking its workers (config/gunicorn.py's on_starting)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_MASTER = """
import gc, importlib.util, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
spec = importlib.util.spec_from_file_location("gunicorn_config", "config/gunicorn.py")
config = importlib.util.module_from_spec(spec)
spec.loader.exec_module(config)
before = gc.get_freeze_count()
config.on_starting(None)
frozen = gc.get_freeze_count()
pid = os.fork()
if pid == 0:  # a worker: what it inherits
    # (a frozen object freed by its last reference leaves the frozen set: nearly all stay)
    os._exit(0 if gc.get_freeze_count() > 0.9 * frozen else 3)
_, status = os.waitpid(pid, 0)
print(before, frozen, os.waitstatus_to_exitcode(status))
"""


def test_the_loaded_app_is_frozen_for_the_collector_before_the_workers_are_forked():
    """Full collections in a worker no longer walk Django and the app (65 ms each): the master freezes what it
    loaded, and a forked worker inherits the frozen objects."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    completed = subprocess.run(
        [sys.executable, "-c", _MASTER], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    before, frozen, worker_status = (int(value) for value in completed.stdout.split()[-3:])
    assert before == 0
    assert frozen > 50_000, "Django, the app and the warmed templates are tens of thousands of objects"
    assert worker_status == 0
