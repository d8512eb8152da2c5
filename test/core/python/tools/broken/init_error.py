class Tools:
    def __init__(self):
        raise RuntimeError("cannot start")
