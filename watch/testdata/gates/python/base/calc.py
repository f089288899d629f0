def old():
    return 1
