from mul import mul


def test_unit_001_mul():
    assert mul(2, 3) == 6
