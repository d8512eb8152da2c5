class Toolkit:
    def f(self) -> str:
        return "x"
