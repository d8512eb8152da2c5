from typing import Dict, List, Set, Tuple


class Tools:
    def mappings(self, plain: dict, typed: Dict[str, int], nested: dict[str, list[int]] = {}):
        """Dictionaries."""
        return [plain, typed, nested]

    def sequences(self, names: List[str], scores: list[float], matrix: list[list[int]], anything: list, unique: set, tagged: Set[int] = set()):
        """Lists and sets."""
        return [names, scores, matrix, anything, sorted(unique), sorted(tagged)]

    def tuples(self, pair: Tuple[int, str], many: tuple[int, ...] = (), point: tuple = ()):
        """Tuples."""
        return [pair, many, point]
