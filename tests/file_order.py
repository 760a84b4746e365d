"""The order in which the test processes of scripts/test (pytest-xdist, `--dist loadfile`) take up the test files.

xdist hands out whole files, by default the files with the most tests first. The files of one long test (a whole
data set, a real worker, a browser walk of a minute and more) then came last, and the run ended with one process
idle while the other ran them. Here each process orders its collection the same way (xdist checks that they
agree): the files with a test marked `slow`, then those with a `browser` test, then `db_specific` or transactional
ones (worker processes, migrations), then the others, each group by number of tests, most first, as xdist would.
scripts/test passes `--no-loadscope-reorder` so that xdist keeps this order: the short files fill in at the end
and the processes finish close together.

Only the order of files changes (tests stay in their file's order); a run in one process (`-n 0`) is untouched.
"""

import pytest

#: Markers of long tests, longest kind first: a whole data set or real service, a browser walk, worker processes
#: or migrations (db_specific, or a transactional test: the database is emptied and reloaded after it).
LONG_MARKERS = ("slow", "browser", "db_specific")


def _long_kind(item: pytest.Item) -> int:
    """The position in LONG_MARKERS of the item's first long marker (a transactional test counts as db_specific);
    len(LONG_MARKERS) for a short test."""
    names = {marker.name for marker in item.iter_markers()}
    if any(marker.kwargs.get("transaction") for marker in item.iter_markers("django_db")):
        names.add("db_specific")
    return next((position for position, name in enumerate(LONG_MARKERS) if name in names), len(LONG_MARKERS))


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def files_long_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items regrouped by file, by the first of LONG_MARKERS a test of the file carries, then by size."""
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(_file_of(item), []).append(item)

    def rank(file_items: list[pytest.Item]) -> tuple[int, int]:
        return min(_long_kind(item) for item in file_items), -len(file_items)

    ordered = sorted(by_file.values(), key=rank)  # stable: files of one rank keep the collection's order
    return [item for file_items in ordered for item in file_items]


@pytest.hookimpl(trylast=True)  # after pytest-django's own reordering within the collection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist test process; the controller does not collect
        items[:] = files_long_first(items)
