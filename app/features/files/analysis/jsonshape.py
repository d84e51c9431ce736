"""What the streaming JSON reader records as it goes: how many values of each type, how deep they nest, the
top-level object's keys, and the keys and value types of the top-level array's elements (``JsonScan``, the
reader's result, which ``Shape`` fills in)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, islice

from app.features.files.analysis.decoding import Tally
from app.features.files.analysis.model import clip

MAX_KEYS = 100
MAX_ELEMENT_KEYS = 200
KEY_CHARS = 200
TYPE_NAMES: dict[type, str] = {dict: "object", list: "array", str: "string", int: "number", float: "number",
                               bool: "boolean", type(None): "null"}


@dataclass
class JsonScan:
    ok: bool = False
    top_type: str | None = None
    error: str | None = None  # "line L, column C: what"
    error_kind: str | None = None  # syntax | eof | extra | depth | size
    next_on_new_line: bool = False  # "extra" data that starts a new line with { or [: JSON Lines
    members: int = 0  # members of the top-level container (entered or complete)
    depth: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    keys: list[dict] = field(default_factory=list)
    element_types: dict[str, int] = field(default_factory=dict)
    element_keys: list[dict] = field(default_factory=list)
    element_keys_truncated: bool = False
    index_text: str = ""
    tally: Tally = field(default_factory=Tally)



class Shape:
    """Fills in a JsonScan's counts and outline. Depths count from the top-level container (1); a member comes
    with ``key``, its property name, or None in an array; at depth 2, only members of the top-level array's
    elements (``top_is_object`` False) are recorded."""

    def __init__(self, scan: JsonScan) -> None:
        self.scan = scan
        self.types: Counter[type] = Counter()
        self._element_types: Counter[type] = Counter()
        self._element_keys: Counter[str] = Counter()
        self._key_types: dict[str, Counter[str]] = {}

    def opened(self, kind: type, depth: int) -> None:
        """A container entered (too large or too broken to decode whole) at ``depth``."""
        self.types[kind] += 1
        self.scan.depth = max(self.scan.depth, depth)

    def walk(self, value: object, depth: int) -> None:
        """Count every value in a decoded one, level by level; ``depth`` is the nesting of ``value`` itself."""
        level = [value]
        while level:
            self.types.update(map(type, level))
            nested = [v for v in level if type(v) is dict or type(v) is list]
            if not nested:
                return
            self.scan.depth = max(self.scan.depth, depth)
            level = list(chain.from_iterable(v.values() if type(v) is dict else v for v in nested))
            depth += 1

    def member(self, depth: int, top_is_object: bool, key: str | None, kind: type, value: object) -> None:
        """Record a member that is complete (``value``) or being entered (None)."""
        if depth == 1:
            self.scan.members += 1
            if key is not None:
                if len(self.scan.keys) < MAX_KEYS:
                    self.scan.keys.append({"key": clip(key, KEY_CHARS), "type": TYPE_NAMES[kind]})
            else:
                self._elements([value] if value is not None else [{}] if kind is dict else [[]])
        elif depth == 2 and key is not None and not top_is_object:
            self._element_member(key, kind)

    def run(self, depth: int, top_is_object: bool, keys: list[str] | None, values: list[object]) -> None:
        """Record a run of complete members, decoded together; ``keys`` is None in an array."""
        self.walk(values, depth)
        self.types[list] -= 1  # the list holding the run is not the document's
        if depth == 1:
            self.scan.members += len(values)
            if keys is None:
                self._elements(values)
            else:
                for key, value in zip(keys[: max(0, MAX_KEYS - len(self.scan.keys))], values, strict=False):
                    self.scan.keys.append({"key": clip(key, KEY_CHARS), "type": TYPE_NAMES[type(value)]})
        elif depth == 2 and keys is not None and not top_is_object:
            for key, value in zip(keys, values, strict=True):
                self._element_member(key, type(value))

    def finish(self) -> None:
        scan, t = self.scan, self.types
        scan.counts = {"objects": t[dict], "arrays": t[list], "strings": t[str], "numbers": t[int] + t[float],
                       "booleans": t[bool], "nulls": t[type(None)]}
        element_types: Counter[str] = Counter()
        for kind, n in self._element_types.items():
            element_types[TYPE_NAMES[kind]] += n
        scan.element_types = dict(element_types.most_common())
        scan.element_keys = [{"key": clip(k, KEY_CHARS), "count": n, "types": dict(self._key_types[k].most_common())}
                             for k, n in self._element_keys.items()]

    def _elements(self, elements: list) -> None:
        self._element_types.update(map(type, elements))
        objects = [e for e in elements if type(e) is dict]
        if not objects:
            return
        keys = self._element_keys
        keys.update(chain.from_iterable(objects))
        if len(keys) > MAX_ELEMENT_KEYS:
            for key in list(islice(keys, MAX_ELEMENT_KEYS, None)):
                del keys[key]
            self.scan.element_keys_truncated = True
        types = self._key_types
        for obj in objects:
            for key, member in obj.items():
                if key in keys:
                    counter = types.get(key)
                    if counter is None:
                        counter = types[key] = Counter()
                    counter[TYPE_NAMES[type(member)]] += 1

    def _element_member(self, key: str, kind: type) -> None:
        """A member of an element object too large to decode at once: its keys are recorded one by one."""
        keys = self._element_keys
        if key not in keys and len(keys) >= MAX_ELEMENT_KEYS:
            self.scan.element_keys_truncated = True
            return
        keys[key] += 1
        self._key_types.setdefault(key, Counter())[TYPE_NAMES[kind]] += 1
