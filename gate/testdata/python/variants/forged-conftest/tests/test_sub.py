from calc import add


def test_sub():
    assert add(2, -3) == 5
