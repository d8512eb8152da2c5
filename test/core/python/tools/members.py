from pydantic import BaseModel


class Tools:
    class Valves(BaseModel):
        x: int = 1

    class Helper:
        pass

    def __init__(self):
        self.valves = self.Valves()
        self.shout = lambda text: text.upper()
        self.counter = 0

    def Zeta(self) -> str:
        """Uppercase names sort first."""
        return "Z"

    def alpha(self, value: str) -> str:
        """Plain method."""
        return value

    @staticmethod
    def beta(n: int) -> int:
        """A static method."""
        return n * 2

    @classmethod
    def gamma(cls, flag: bool = False) -> bool:
        """A class method."""
        return not flag

    async def delta(self, *args, **kwargs) -> str:
        """Varargs become required string properties."""
        return "delta"

    def epsilon(self, _hidden: int = 0, __user__: dict = {}, __id__: str = None, visible: str = "v") -> str:
        """Underscore parameters disappear."""
        return visible

    def _private(self):
        return None

    @property
    def prop(self):
        return 1
