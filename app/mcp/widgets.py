"""Widget (``ui://``) resources: one ``Widget`` per template, with every metadata key ChatGPT reads
(docs/chatgpt-contract.md §4).

The URI carries a hash of the HTML so a changed bundle gets a new URI: ChatGPT
caches templates by URI, and a stale template silently renders old code.
"""

from __future__ import annotations

import hashlib
import html as html_lib
import json
from dataclasses import dataclass, field
from functools import cached_property
from importlib.resources import files
from pathlib import Path
from typing import Any

# Built widget bundles ship inside the package (the widgets/ Vite project writes them here).
DIST = Path(str(files("app"))) / "static" / "widgets"
DISPLAY_MODES = ("inline", "fullscreen", "pip")


@dataclass(frozen=True)
class Widget:
    name: str
    title: str
    description: str
    prefers_border: bool = True
    display_modes: tuple[str, ...] = ("inline", "fullscreen")
    connect_domains: tuple[str, ...] = ()
    resource_domains: tuple[str, ...] = ()
    frame_domains: tuple[str, ...] = ()
    redirect_domains: tuple[str, ...] = ()
    html_override: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.display_modes) - set(DISPLAY_MODES))
        if unknown or not self.display_modes:
            raise ValueError(f"widget {self.name}: display modes must be a non-empty subset of {DISPLAY_MODES}, "
                             f"not {unknown or 'none'}")
        for kind, domains in (("connect", self.connect_domains), ("resource", self.resource_domains),
                              ("frame", self.frame_domains), ("redirect", self.redirect_domains)):
            if any("*" in d or not d.startswith("https://") for d in domains):
                raise ValueError(f"widget {self.name}: {kind} domains must be https origins without wildcards "
                                 f"(ChatGPT rejects wildcards), not {list(domains)}")

    @cached_property
    def html(self) -> str:
        if self.html_override is not None:
            return self.html_override
        built = DIST / self.name / "index.html"
        if built.is_file():
            return built.read_text(encoding="utf-8")
        return placeholder_html(self.title)

    @cached_property
    def uri(self) -> str:
        digest = hashlib.sha256(self.html.encode()).hexdigest()[:12]
        return f"ui://widget/{self.name}.{digest}.html"

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
            "openai/ui": {"availableDisplayModes": list(self.display_modes)},
            "openai/widgetDescription": self.description,
            "openai/widgetPrefersBorder": self.prefers_border,
            "openai/widgetCSP": legacy_csp,
            "openai/widgetDomain": domain,
        }


def placeholder_html(title: str) -> str:
    """A small but working MCP Apps view: renders the tool result until the real bundle is built.

    It speaks the standard bridge (``ui/initialize`` then ``ui/notifications/tool-result``)
    and falls back to ``window.openai.toolOutput``, so it works in ChatGPT and in other hosts.
    """
    safe_title = html_lib.escape(title)
    script = """
const out = document.getElementById("out");
function show(data) { if (data) out.textContent = JSON.stringify(data, null, 2); }
let nextId = 1;
function rpc(method, params) { window.parent.postMessage({jsonrpc: "2.0", id: nextId++, method, params}, "*"); }
window.addEventListener("message", (ev) => {
  const msg = ev.data || {};
  if (msg.method === "ui/notifications/tool-result") show(msg.params && msg.params.structuredContent);
});
window.addEventListener("openai:set_globals", () => show(window.openai && window.openai.toolOutput));
rpc("ui/initialize", {appInfo: {name: TITLE, version: "0"}, appCapabilities: {},
                      protocolVersion: "2026-01-26"});
show(window.openai && window.openai.toolOutput);
""".replace("TITLE", json.dumps(title))
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{safe_title}</title>"
        "<style>body{font:14px system-ui,sans-serif;margin:12px}pre{white-space:pre-wrap}</style>"
        f"</head><body><h1>{safe_title}</h1><pre id=\"out\">Waiting for the tool result…</pre>"
        f"<script type=\"module\">{script}</script></body></html>"
    )
