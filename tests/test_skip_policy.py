"""The skip policy (tests/skip_policy.py): with CI=true an unlisted skip fails the run; the allowlist is strict."""

from types import SimpleNamespace

import pytest

from tests.skip_policy import ALLOWLIST, SkipPolicy, allowlist_read, database_engine


def _skip_report(nodeid: str, reason: str):
    return SimpleNamespace(nodeid=nodeid, skipped=True, longrepr=("file.py", 1, f"Skipped: {reason}"))


@pytest.fixture
def allowlist(tmp_path):
    path = tmp_path / "skip_allowlist.txt"
    path.write_text(
        "# comment\n\n"
        "tests/a.py::test_listed | any | a reason\n"
        "tests/b.py::test_* | sqlite | only meaningful on PostgreSQL\n"
        "tests/c.py::test_pg | postgresql | only meaningful on SQLite\n"
    )
    return path


def _finish(policy: SkipPolicy) -> int:
    session = SimpleNamespace(exitstatus=pytest.ExitCode.OK)
    policy.pytest_sessionfinish(session, pytest.ExitCode.OK)
    return session.exitstatus


def test_with_ci_an_unlisted_skip_fails_the_run_and_a_listed_one_does_not(allowlist, monkeypatch):
    monkeypatch.setenv("CI", "true")
    policy = SkipPolicy(config=None, allowlist=allowlist)
    policy.pytest_runtest_logreport(_skip_report("tests/a.py::test_listed", "needs something"))
    other_database = "tests/c.py::test_pg" if database_engine() == "sqlite" else "tests/b.py::test_one"
    this_database = "tests/b.py::test_one" if database_engine() == "sqlite" else "tests/c.py::test_pg"
    policy.pytest_runtest_logreport(_skip_report(this_database, "about the other engine"))
    assert policy.unlisted() == [] and _finish(policy) == pytest.ExitCode.OK

    policy.pytest_runtest_logreport(_skip_report(other_database, "listed for the other engine only"))
    assert policy.unlisted() == [(other_database, "listed for the other engine only")]
    assert _finish(policy) == pytest.ExitCode.TESTS_FAILED

    monkeypatch.setenv("CI", "")  # run locally: listed, not failed
    assert _finish(policy) == pytest.ExitCode.OK


def test_an_allowlist_line_without_database_or_reason_is_refused(tmp_path):
    for line in ("tests/a.py::test_x | any", "tests/a.py::test_x | mysql | why", "tests/a.py::test_x | any | "):
        path = tmp_path / "skip_allowlist.txt"
        path.write_text(line + "\n")
        with pytest.raises(pytest.UsageError, match="line 1"):
            allowlist_read(path)


def test_the_projects_allowlist_reads_and_names_existing_tests():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for entry in allowlist_read(ALLOWLIST):
        module = entry.pattern.split("::")[0]
        assert (root / module).is_file(), f"{entry.pattern}: no such test module"
        assert len(entry.reason) > 20, f"{entry.pattern}: say why it may skip"
