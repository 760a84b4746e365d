"""The file order the test processes share (tests/file_order.py): long files first, each file's tests together."""

import pytest

from tests.file_order import files_long_first


class Item:
    """What files_long_first reads of a pytest item: its id and its markers."""

    def __init__(self, nodeid: str, *markers: str, transaction: bool = False):
        self.nodeid = nodeid
        self.markers = [pytest.Mark(name, (), {}) for name in markers]
        self.markers.append(pytest.Mark("django_db", (), {"transaction": transaction}))

    def iter_markers(self, name=None):
        return iter([marker for marker in self.markers if name is None or marker.name == name])


def test_slow_then_browser_then_db_specific_files_then_the_others_by_size_each_file_together():
    items = [
        Item("tests/a.py::one"),
        Item("tests/b.py::one"),
        Item("tests/b.py::two"),
        Item("tests/c.py::walk", "browser"),
        Item("tests/a.py::two"),  # pytest-django moved a transactional test of a.py after the others
        Item("tests/a.py::three"),
        Item("tests/d.py::whole_data_set", "slow"),
        Item("tests/e.py::one"),
        Item("tests/f.py::migrations", "db_specific"),
    ]
    ordered = [item.nodeid for item in files_long_first(items)]
    assert ordered == [
        "tests/d.py::whole_data_set",
        "tests/c.py::walk",
        "tests/f.py::migrations",
        "tests/a.py::one",
        "tests/a.py::two",
        "tests/a.py::three",
        "tests/b.py::one",
        "tests/b.py::two",
        "tests/e.py::one",
    ]


def test_a_file_is_slow_when_any_of_its_tests_is():
    items = [
        Item("tests/a.py::one"),
        Item("tests/a.py::two"),
        Item("tests/b.py::fast"),
        Item("tests/b.py::long", "slow"),
    ]
    assert [item.nodeid for item in files_long_first(items)] == [
        "tests/b.py::fast",
        "tests/b.py::long",
        "tests/a.py::one",
        "tests/a.py::two",
    ]


def test_a_transactional_test_counts_as_db_specific():
    items = [Item("tests/a.py::one"), Item("tests/a.py::two"), Item("tests/b.py::migrate", transaction=True)]
    assert [item.nodeid for item in files_long_first(items)] == [
        "tests/b.py::migrate",
        "tests/a.py::one",
        "tests/a.py::two",
    ]
