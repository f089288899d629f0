"""A fixture of the testrun tests: some of its tests pass, some fail."""


def add(a, b):
    return a + b


def sub(a, b):
    return a + b  # wrong on purpose
