from calc import old


def test_old():
    assert old() == 1
