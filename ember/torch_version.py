"""``ember.torch_version``, as ``torch.torch_version``: :class:`TorchVersion`, the version string
that compares as a version (``torch.__version__ >= "2.0"``), and the PEP 440 :class:`Version`
it compares with (PyTorch's vendored ``packaging.version``)."""
import itertools
import re
from collections.abc import Iterable

__all__ = ["TorchVersion"]


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version (``Version("parrot")``)."""


# PEP 440's grammar, as packaging spells it (case-insensitive, a leading "v" allowed)
_VERSION_PATTERN = r"""
    v?
    (?:
        (?:(?P<epoch>[0-9]+)!)?
        (?P<release>[0-9]+(?:\.[0-9]+)*)
        (?P<pre>[-_\.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_\.]?(?P<pre_n>[0-9]+)?)?
        (?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_\.]?(?P<post_l>post|rev|r)[-_\.]?(?P<post_n2>[0-9]+)?))?
        (?P<dev>[-_\.]?(?P<dev_l>dev)[-_\.]?(?P<dev_n>[0-9]+)?)?
    )
    (?:\+(?P<local>[a-z0-9]+(?:[-_\.][a-z0-9]+)*))?
"""
_REGEX = re.compile(r"^\s*" + _VERSION_PATTERN + r"\s*$", re.VERBOSE | re.IGNORECASE)
_SPELLINGS = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc", "rev": "post",
              "r": "post"}


def _letter_version(letter, number):
    if letter:  # an implicit 0 after a bare letter ("1.0a" is "1.0a0")
        letter = letter.lower()
        return _SPELLINGS.get(letter, letter), int(number or 0)
    if number:  # "1.0-1" is the post-release "1.0.post1"
        return "post", int(number)
    return None


class Version:
    """A PEP 440 version, normalized (``Version("1.0-ALPHA1")`` is ``1.0a1``) and ordered as
    PEP 440 orders them (``1.0.dev0 < 1.0a0 < 1.0 < 1.0.post0``, trailing zeros ignored)."""

    def __init__(self, version):
        match = _REGEX.search(version)
        if not match:
            raise InvalidVersion(f"Invalid version: '{version}'")
        self.epoch = int(match.group("epoch") or 0)
        self.release = tuple(int(i) for i in match.group("release").split("."))
        self.pre = _letter_version(match.group("pre_l"), match.group("pre_n"))
        self.post = _letter_version(match.group("post_l"),
                                    match.group("post_n1") or match.group("post_n2"))
        self.dev = _letter_version(match.group("dev_l"), match.group("dev_n"))
        local = match.group("local")
        self.local = None if local is None else tuple(
            int(p) if p.isdigit() else p.lower() for p in re.split(r"[\._-]", local))
        self._key = self._cmpkey()

    def _cmpkey(self):
        # each optional part as (rank, value): 0 sorts before any value, 2 after every one
        release = tuple(reversed(list(itertools.dropwhile(lambda x: x == 0,
                                                          reversed(self.release)))))
        if self.pre is None and self.post is None and self.dev is not None:
            pre = (0,)  # 1.0.dev0 before 1.0a0
        else:
            pre = (2,) if self.pre is None else (1,) + self.pre
        post = (0,) if self.post is None else (1,) + self.post
        dev = (2,) if self.dev is None else (1,) + self.dev
        # no local part first; alphanumeric parts before numeric ones
        local = () if self.local is None else tuple(
            (1, p, "") if isinstance(p, int) else (0, 0, p) for p in self.local)
        return self.epoch, release, pre, post, dev, local

    def __str__(self):
        parts = [f"{self.epoch}!" if self.epoch else "", ".".join(map(str, self.release))]
        if self.pre is not None:
            parts.append("".join(map(str, self.pre)))
        if self.post is not None:
            parts.append(f".post{self.post[1]}")
        if self.dev is not None:
            parts.append(f".dev{self.dev[1]}")
        if self.local is not None:
            parts.append("+" + ".".join(map(str, self.local)))
        return "".join(parts)

    def __repr__(self):
        return f"<Version('{self}')>"

    def __hash__(self):
        return hash(self._key)

    @property
    def public(self):
        return str(self).split("+", 1)[0]

    @property
    def base_version(self):
        return (f"{self.epoch}!" if self.epoch else "") + ".".join(map(str, self.release))

    @property
    def is_prerelease(self):
        return self.dev is not None or self.pre is not None

    @property
    def is_postrelease(self):
        return self.post is not None

    @property
    def is_devrelease(self):
        return self.dev is not None

    @property
    def major(self):
        return self.release[0]

    @property
    def minor(self):
        return self.release[1] if len(self.release) >= 2 else 0

    @property
    def micro(self):
        return self.release[2] if len(self.release) >= 3 else 0


def _version_comparison(op):
    def compare(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return op(self._key, other._key)
    return compare


for _name in ("__lt__", "__le__", "__eq__", "__ne__", "__ge__", "__gt__"):
    setattr(Version, _name, _version_comparison(getattr(tuple, _name)))


class TorchVersion(str):
    """A string that compares as a version with strings, tuples (``(2, 1)`` is ``2.1``) and
    :class:`Version` objects, so that ``torch.__version__ >= "2.0"`` means what it says; an
    operand that is not a version ("parrot") compares as a string."""

    __slots__ = ()

    def _convert_to_version(self, inp):
        if isinstance(inp, Version):
            return inp
        if isinstance(inp, str):
            return Version(inp)
        if isinstance(inp, Iterable):
            return Version(".".join(str(item) for item in inp))
        raise InvalidVersion(inp)

    def _cmp_wrapper(self, cmp, method):
        try:
            return getattr(Version(self), method)(self._convert_to_version(cmp))
        except InvalidVersion:
            return getattr(super(), method)(cmp)


# (set after the class so that str's __hash__ stays: a version string hashes as its text)
for _name in ("__gt__", "__lt__", "__eq__", "__ge__", "__le__"):
    setattr(TorchVersion, _name, lambda x, y, method=_name: x._cmp_wrapper(y, method))
del _name


def __getattr__(name):
    # read from ember.version at each access: ember.as_torch swaps that string while installed
    if name in ("__version__", "internal_version"):
        from . import version
        return version.__version__
    raise AttributeError(f"module 'ember.torch_version' has no attribute '{name}'")
