import pytest

from calc import add, sub


def test_add():
    assert add(1, 2) == 3


def test_sub():
    assert sub(3, 1) == 2


class TestGroup:
    def test_zero(self):
        assert add(0, 0) == 0


@pytest.mark.parametrize("a,b", [(1, 2), ("x y", "z")])
def test_param(a, b):
    assert add(a, b) == a + b


@pytest.mark.skip(reason="later")
def test_later():
    pass
