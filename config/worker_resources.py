"""A Celery worker gives way to the web server on the CPU.

Workers compute metrics and dashboards in the background; a page must not wait behind them. On a small machine the
worker ran at the web server's priority and its numeric libraries started one thread per core, so while it computed
a dashboard view took over a second. Every worker process therefore, as it starts:

- lowers its CPU priority (WORKER_NICENESS, default 10). Linux shares the CPU first between *autogroups* (one per
  session) when the kernel has them on, and ./scripts/run starts the worker in a session of its own: a process's
  nice value then only orders it against its own session, so the session's autogroup is lowered as well, but only
  when the worker leads its session (a worker started from a shell shares the shell's autogroup, and lowering it
  would slow the shell's other programs too). Separate containers share the CPU by cgroup weight, which neither
  touches (docker-compose.yml gives the worker a lower cpu_shares);
- caps the threads of its numeric libraries (WORKER_NUMERIC_THREADS, default half the cores, at least one): the
  OpenMP/BLAS variables for libraries loaded later, threadpoolctl for those already loaded, torch's own setting.

Runs from Celery's celeryd_init signal (before the worker imports its tasks) and again in each prefork child;
applying it twice changes nothing.
"""

import contextlib
import os
import sys

from config.env import ConfigurationError, env_int

#: what a worker's niceness is raised to (0: not lowered; 19: the lowest)
DEFAULT_NICENESS = 10
#: the variables numeric libraries read for their thread count when they are loaded
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
AUTOGROUP_FILE = "/proc/self/autogroup"


def worker_niceness() -> int:
    niceness = env_int("WORKER_NICENESS", DEFAULT_NICENESS, minimum=0)
    if niceness > 19:
        raise ConfigurationError(f"WORKER_NICENESS={niceness} must be at most 19")
    return niceness


def worker_numeric_threads() -> int:
    return env_int("WORKER_NUMERIC_THREADS", max(1, (os.cpu_count() or 1) // 2), minimum=1)


def lower_priority(niceness: int) -> None:
    """Raise this process's nice value to `niceness` (never lower it), and its session's autogroup's if it leads it."""
    current = os.nice(0)
    if current < niceness:
        os.nice(niceness - current)
    if os.getsid(0) == os.getpid():
        # No autogroups (kernel without them, or a cgroup other than the root one: a container) or a read-only /proc:
        # the process's own nice value is what counts then.
        with contextlib.suppress(OSError, ValueError):
            with open(AUTOGROUP_FILE) as autogroup:
                group_niceness = int(autogroup.read().rsplit("nice", 1)[1])
            if group_niceness < niceness:
                with open(AUTOGROUP_FILE, "w") as autogroup:
                    autogroup.write(str(niceness))


def cap_numeric_threads(threads: int) -> None:
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)
    torch = sys.modules.get("torch")  # loaded later, it reads OMP_NUM_THREADS
    if torch is not None:
        torch.set_num_threads(threads)


def worker_resources_apply() -> dict:
    """Lower this worker's priority and cap its numeric threads (as configured); returns what was applied."""
    niceness, threads = worker_niceness(), worker_numeric_threads()
    lower_priority(niceness)
    cap_numeric_threads(threads)
    return {"niceness": os.nice(0), "numeric_threads": threads}
