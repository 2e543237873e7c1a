"""``GlobGroup``: the module-name patterns of ``PackageExporter.intern``/``extern``/``mock``/
``deny`` (``"torchvision.**"``, ``"numpy.*"``) with their exclusions."""
import re
from collections.abc import Iterable

GlobPattern = str | Iterable[str]


class GlobGroup:
    """Names matching any ``include`` pattern and no ``exclude`` one. ``*`` matches within one
    segment (between separators), ``**`` any number of whole segments (zero too)."""

    def __init__(self, include, *, exclude=(), separator="."):
        self._dbg = f"GlobGroup(include={include}, exclude={exclude})"
        self.include = GlobGroup._glob_list(include, separator)
        self.exclude = GlobGroup._glob_list(exclude, separator)
        self.separator = separator

    def __str__(self):
        return self._dbg

    def __repr__(self):
        return self._dbg

    def matches(self, candidate):
        candidate = self.separator + candidate
        return (any(p.fullmatch(candidate) for p in self.include)
                and all(not p.fullmatch(candidate) for p in self.exclude))

    @staticmethod
    def _glob_list(elems, separator="."):
        if isinstance(elems, str):
            return [GlobGroup._glob_to_re(elems, separator)]
        return [GlobGroup._glob_to_re(e, separator) for e in elems]

    @staticmethod
    def _glob_to_re(pattern, separator="."):
        sep = re.escape(separator)

        def component_to_re(component):
            if "**" in component:
                if component == "**":
                    return "(" + sep + "[^" + separator + "]+)*"
                raise ValueError("** can only appear as an entire path segment")
            return sep + ("[^" + separator + "]*").join(re.escape(x) for x in component.split("*"))

        return re.compile("".join(component_to_re(c) for c in pattern.split(separator)))
