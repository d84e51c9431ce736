"""Widget (``ui://``) resources: one ``Widget`` per template, with every metadata key ChatGPT reads
(docs/chatgpt-contract.md §4).

The HTML comes from the ``widgets/`` Vite project, built into ONE self-contained file per
widget under ``app/static/widgets/`` with a ``manifest.json`` of content hashes (the bundles
ship in the package: the server never needs Node). The URI carries that hash, so a changed
bundle gets a new URI: ChatGPT caches templates by URI, and a stale template silently renders
old code.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from importlib.resources import files
from pathlib import Path
from typing import Any

from openai_mcp_extensions import OpenAIUiResourceMetadata

DIST = Path(str(files("app"))) / "static" / "widgets"
# What ChatGPT renders (openai/mcp-extensions docs/spec.md): never picture-in-picture.
DISPLAY_MODES = ("inline", "fullscreen")
HASH_CHARS = 12


_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_ORIGIN = re.compile(r"(https?)://(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([1-9][0-9]{0,4}))?")


def _host_ok(host: str) -> bool:
    """A DNS name (lower-case labels), a dotted IPv4 address or a bracketed IPv6 one: what a
    browser reads as the same host (it reads ``0x7f000001`` or ``a%2eb`` otherwise)."""
    if host.startswith("["):
        try:
            return isinstance(ipaddress.ip_address(host[1:-1]), ipaddress.IPv6Address)
        except ValueError:
            return False
    labels = host.split(".")
    if labels[-1][:1].isdigit():  # a browser reads this as an IPv4 address, in whatever notation
        try:
            return str(ipaddress.IPv4Address(host)) == host
        except ValueError:
            return False
    return all(_LABEL.fullmatch(label) for label in labels)


def is_origin(value: str) -> bool:
    """``https://host[:port]`` written as a browser writes it, with no path, wildcard, user or
    character a CSP would read otherwise; ``http://`` only for a loopback host (development)."""
    found = _ORIGIN.fullmatch(value)
    if found is None or not _host_ok(found[2]) or (found[3] and int(found[3]) > 65535):
        return False
    if found[1] == "https":
        return True
    host = found[2].strip("[]")
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class WidgetBundleMissing(LookupError):
    """A declared widget has no built bundle (refused at start-up with the command that builds it)."""


@dataclass(frozen=True)
class Bundle:
    name: str
    html: str
    sha256: str


def load_bundle(name: str, dist: Path = DIST) -> Bundle:
    """The built HTML of widget ``name`` and its content hash, from the manifest the build writes."""
    manifest_path = dist / "manifest.json"
    try:
        entry = json.loads(manifest_path.read_text(encoding="utf-8"))["widgets"][name]
        raw = (dist / entry["file"]).read_bytes()
        listed = str(entry["sha256"])
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise WidgetBundleMissing(
            f"widget {name!r} has no built bundle in {dist} ({type(exc).__name__}: {exc}); "
            f"add widgets/src/{name}/ and run `npm --prefix widgets ci && npm --prefix widgets run build`"
        ) from None
    sha = hashlib.sha256(raw).hexdigest()
    if sha != listed:  # the URI must name the bytes served, whatever edited them
        raise WidgetBundleMissing(f"widget {name!r}: {entry['file']} does not match manifest.json (sha256 {sha[:12]} "
                                  f"vs {listed[:12]}); rebuild with `npm --prefix widgets run build`")
    return Bundle(name, raw.decode("utf-8"), sha)


@dataclass(frozen=True)
class Widget:
    """One widget template. ``name`` is its folder under ``widgets/src/``."""

    name: str
    title: str
    # Told to the model when the widget loads: what the user already sees, so it is not repeated.
    description: str
    prefers_border: bool = True
    display_modes: tuple[str, ...] = ("inline", "fullscreen")
    # Only what the widget really uses: the bundles inline their JS and CSS, so most need none.
    connect_domains: tuple[str, ...] = ()
    resource_domains: tuple[str, ...] = ()
    frame_domains: tuple[str, ...] = ()
    # Origins the widget opens with openExternal (ChatGPT reads these from openai/widgetCSP only).
    redirect_domains: tuple[str, ...] = ()
    # Tests and experiments pass the HTML directly instead of a built bundle.
    html_override: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.display_modes) - set(DISPLAY_MODES))
        if unknown or not self.display_modes:
            raise ValueError(f"widget {self.name}: display modes must be a non-empty subset of {DISPLAY_MODES}, "
                             f"not {unknown or 'none'}")
        for kind, domains in (("connect", self.connect_domains), ("resource", self.resource_domains),
                              ("frame", self.frame_domains), ("redirect", self.redirect_domains)):
            if not all(is_origin(d) for d in domains):
                raise ValueError(f"widget {self.name}: {kind} domains must be https origins without wildcards "
                                 f"or paths (ChatGPT rejects wildcards; http only on loopback), not {list(domains)}")

    @cached_property
    def bundle(self) -> Bundle:
        if self.html_override is not None:
            return Bundle(self.name, self.html_override, hashlib.sha256(self.html_override.encode()).hexdigest())
        return load_bundle(self.name)

    @property
    def html(self) -> str:
        return self.bundle.html

    def uri_for(self, domain: str) -> str:
        """Its ``ui://`` URI, named by the hash of all a client keeps of it: the HTML and the
        resource
        ``_meta`` it is served with (CSP, domain, description). A client may keep a copy for good
        (the
        cache hint says so): new content, or a new CSP after a deploy, is a new URI."""
        meta = json.dumps(self.resource_meta(domain), sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(f"{self.bundle.sha256}\0{meta}".encode()).hexdigest()
        return f"ui://widget/{self.name}-{digest[:HASH_CHARS]}.html"

    def resource_meta(self, domain: str) -> dict[str, Any]:
        csp: dict[str, Any] = {
            "connectDomains": list(self.connect_domains),
            "resourceDomains": list(self.resource_domains),
        }
        legacy_csp: dict[str, Any] = {
            "connect_domains": list(self.connect_domains),
            "resource_domains": list(self.resource_domains),
        }
        if self.frame_domains:
            csp["frameDomains"] = list(self.frame_domains)
            legacy_csp["frame_domains"] = list(self.frame_domains)
        if self.redirect_domains:
            legacy_csp["redirect_domains"] = list(self.redirect_domains)
        return {
            "ui": {"prefersBorder": self.prefers_border, "csp": csp, "domain": domain},
            # Inline first: offered both, ChatGPT would open full screen unless told otherwise.
            "openai/ui": OpenAIUiResourceMetadata(
                available_display_modes=list(self.display_modes),  # pyright: ignore
                preferred_display_mode="inline" if "inline" in self.display_modes else None,
            ).model_dump(by_alias=True, exclude_none=True),
            "openai/widgetDescription": self.description,
            "openai/widgetPrefersBorder": self.prefers_border,
            "openai/widgetCSP": legacy_csp,
            "openai/widgetDomain": domain,
        }
