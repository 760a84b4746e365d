"""No silent skips (docs/operations.md, "Tests").

A test that cannot run here says why with `pytest.skip("needs X (Debian package Y)")`: a missing binary,
or a test about the other database engine. Run locally, the test command ends with the list of what was
skipped and what to install to run it. With CI=true a run that skipped a test fails, unless the test is
listed in tests/skip_allowlist.txt with the database it may skip on and the reason.
"""

import fnmatch
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ALLOWLIST = Path(__file__).with_name("skip_allowlist.txt")
DATABASES = ("any", "sqlite", "postgresql")


@dataclass(frozen=True)
class AllowedSkip:
    pattern: str  # a test id, or an fnmatch pattern of test ids
    database: str  # one of DATABASES: where the skip is allowed
    reason: str

    def covers(self, nodeid: str, database: str) -> bool:
        return self.database in ("any", database) and fnmatch.fnmatchcase(nodeid, self.pattern)


def allowlist_read(path: Path = ALLOWLIST) -> list[AllowedSkip]:
    """Lines `<test id or pattern> | <any|sqlite|postgresql> | <reason>`; blank lines and # comments are ignored."""
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = [field.strip() for field in line.split("|")]
        if len(fields) != 3 or not all(fields) or fields[1] not in DATABASES:
            raise pytest.UsageError(
                f"{path.name} line {number}: expected '<test id> | <{'|'.join(DATABASES)}> | <reason>', got {line!r}"
            )
        entries.append(AllowedSkip(*fields))
    return entries


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def database_engine() -> str:
    from django.conf import settings

    return "sqlite" if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3") else "postgresql"


def _reason(report) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


class SkipPolicy:
    """A pytest plugin (registered by tests/conftest.py): records skips, reports them, fails CI on unlisted ones."""

    def __init__(self, config, allowlist: Path = ALLOWLIST):
        self.config = config
        self.allowlist = allowlist_read(allowlist)
        self.skipped: list[tuple[str, str]] = []  # (test id, reason)

    def pytest_collectreport(self, report):
        if report.skipped:  # a module skipped as a whole
            self.skipped.append((report.nodeid, _reason(report)))

    def pytest_runtest_logreport(self, report):
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped.append((report.nodeid, _reason(report)))

    def unlisted(self) -> list[tuple[str, str]]:
        database = database_engine()
        return [
            (nodeid, reason)
            for nodeid, reason in self.skipped
            if not any(entry.covers(nodeid, database) for entry in self.allowlist)
        ]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if in_ci() and self.unlisted() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if not self.skipped:
            return
        write = terminalreporter.write_line
        terminalreporter.section(f"{len(self.skipped)} skipped test(s), by reason", sep="=", yellow=True)
        by_reason = defaultdict(list)
        for nodeid, reason in self.skipped:
            by_reason[reason].append(nodeid)
        for reason, nodeids in sorted(by_reason.items(), key=lambda item: -len(item[1])):
            write(f"{len(nodeids):4d} x {reason}")
            for nodeid in nodeids[:3]:
                write(f"       {nodeid}")
            if len(nodeids) > 3:
                write(f"       ... and {len(nodeids) - 3} more")
        unlisted = self.unlisted()
        if in_ci() and unlisted:
            write(
                f"CI=true: {len(unlisted)} skipped test(s) are not in tests/skip_allowlist.txt for "
                f"{database_engine()}, so this run fails. Install what the reasons name (.ci/run does), "
                "or list the test there with its reason.",
                red=True,
                bold=True,
            )
            for nodeid, reason in unlisted:
                write(f"  {nodeid}: {reason}", red=True)
        elif not in_ci():
            write(
                "These tests did not run. Install what each reason names (Debian packages; .ci/run installs them "
                "all) and run the test command again; CI fails on any skip not listed in tests/skip_allowlist.txt."
            )
