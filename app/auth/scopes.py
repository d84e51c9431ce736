"""OAuth scopes: declared by the feature that needs them, collected by the composition root.

A scope is published in both metadata documents (``scopes_supported``) and described,
in the user's language, on the consent page. ``implies`` builds the hierarchy: a token
granted ``recipes.write`` also satisfies a tool that asks for ``recipes.read``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from app.i18n import lookup


@dataclass(frozen=True)
class Scope:
    name: str
    # What the user grants, per language ("en" required): "Read your saved recipes".
    description: Mapping[str, str]
    implies: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if "en" not in self.description:
            raise ValueError(f"scope {self.name!r} needs an English description")

    def describe(self, locale: str) -> str:
        return self.description[lookup(locale, self.description)]


class ScopeCatalog:
    """Every scope the server knows, with the hierarchy expanded."""

    def __init__(self, scopes: Iterable[Scope]) -> None:
        self._scopes: dict[str, Scope] = {}
        for scope in scopes:
            known = self._scopes.get(scope.name)
            if known is not None and known != scope:
                raise ValueError(f"scope {scope.name!r} is declared twice, differently")
            self._scopes[scope.name] = scope
        for scope in self._scopes.values():
            if unknown := [name for name in scope.implies if name not in self._scopes]:
                raise ValueError(f"scope {scope.name!r} implies unknown scopes: {', '.join(unknown)}")

    @property
    def names(self) -> list[str]:
        return list(self._scopes)

    def __contains__(self, name: object) -> bool:
        return name in self._scopes

    def get(self, name: str) -> Scope | None:
        return self._scopes.get(name)

    def known(self, names: Iterable[str]) -> list[str]:
        """``names`` without the unknown ones, order kept, duplicates dropped."""
        return list(dict.fromkeys(n for n in names if n in self._scopes))

    def expand(self, names: Sequence[str]) -> list[str]:
        """The granted scopes plus every scope they imply (transitively)."""
        result = list(dict.fromkeys(names))
        i = 0
        while i < len(result):
            scope = self._scopes.get(result[i])
            for implied in scope.implies if scope else ():
                if implied not in result:
                    result.append(implied)
            i += 1
        return result
