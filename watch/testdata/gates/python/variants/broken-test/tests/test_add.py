from calc import add


def test_add_unit_001(:
    assert add(2, 3) == 5
