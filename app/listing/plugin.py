"""The plugin a submission uploads (openai/mcp-extensions ``docs/spec.md``, "Plugin
Onboarding"): ``.codex-plugin/plugin.json`` (the manifest: the listing's fields, its skills, its
onboarding skill under ``extensions["com.openai"]``), ``.mcp.json`` (this server's MCP URL),
``skills/setup/SKILL.md`` (what the app does, how to link an account, what to try first) and
the logo. Written from the listing and the tools the server lists; ``problems`` reads a written
plugin back as a host would and says what is wrong with it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from app.listing.entries import (
    MAX_DEFAULT_PROMPTS,
    MAX_LONG,
    MAX_NAME,
    MAX_PROMPT,
    MAX_SHORT,
    SLUG,
    AppListing,
    Listing,
)
from app.listing.review import model_visible, needs_account

MANIFEST = ".codex-plugin/plugin.json"
SERVERS = ".mcp.json"
SKILLS = "./skills/"
ONBOARDING = "./skills/setup/SKILL.md"
MAX_SKILL_DESCRIPTION = 1024


@dataclass(frozen=True)
class Server:
    """What the plugin says of the deployment it points at."""

    base_url: str
    mcp_url: str
    contact: str | None  # APP_OPERATOR_CONTACT: the support link when the listing gives none
    account_page: str | None  # where a person sees and removes their connection, if served


def link(value: str, base_url: str) -> str:
    """A listing link as published: a path is on this server."""
    return f"{base_url.rstrip('/')}{value}" if value.startswith("/") else value


def support_link(app: AppListing, server: Server) -> str | None:
    if app.support:
        return link(app.support, server.base_url)
    contact = server.contact
    if not contact:
        return None
    return contact if "://" in contact or contact.startswith("mailto:") else f"mailto:{contact}"


def manifest(listing: Listing, server: Server, logo: str,
             tools: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    app = listing.app
    # Write: when a tool the model calls changes something (its readOnlyHint is not true).
    writes = any(model_visible(t) and isinstance(t.get("annotations"), Mapping)
                 and t["annotations"].get("readOnlyHint") is not True for t in tools)
    interface = {
        "displayName": app.name,
        "shortDescription": app.short_description,
        "longDescription": app.long_description,
        "developerName": app.developer,
        "category": app.category,
        "capabilities": ["Interactive", "Read", *(["Write"] if writes else [])],
        "websiteURL": link(app.website, server.base_url),
        "privacyPolicyURL": link(app.privacy, server.base_url),
        "termsOfServiceURL": link(app.terms, server.base_url),
        "defaultPrompt": listing.default_prompts(),
        "brandColor": app.brand_color,
        "composerIcon": logo,
        "logo": logo,
    }
    if support := support_link(app, server):
        interface["supportURL"] = support
    return {
        "name": app.slug,
        "version": app.version,
        "description": app.short_description,
        "author": {"name": app.developer},
        "homepage": link(app.website, server.base_url),
        "mcpServers": f"./{SERVERS}",
        "skills": SKILLS,
        "interface": interface,
        "extensions": {"com.openai": {"onboardingSkill": ONBOARDING}},
    }


def skill(listing: Listing, tools: Sequence[Mapping[str, Any]],
          instructions: Mapping[str, str], server: Server) -> str:
    """The onboarding skill: run once after installation, in the person's conversation."""
    app = listing.app
    visible = [t for t in tools if model_visible(t)]
    linked = sorted(t["name"] for t in visible if needs_account(t))
    anonymous = sorted(t["name"] for t in visible if not needs_account(t))
    description = (f"Set up {app.name} right after it is installed: say what it does, how to "
                   "connect an account, and what to try first.")
    lines = ["---", "name: setup", f"description: {json.dumps(description, ensure_ascii=False)}",
             "---", "", f"# Getting started with {app.name}", "", app.long_description, "",
             "## What it does", ""]
    lines += [f"- {instructions[f.feature]}" for f in listing.features
              if instructions.get(f.feature)]
    lines += ["", "## Connecting an account", ""]
    if anonymous:
        lines.append(f"These tools work without an account: {', '.join(anonymous)}.")
    if linked:
        lines.append(f"These need the person's account: {', '.join(linked)}. The first time "
                     "one is used, ChatGPT shows a button to connect; the person signs in at "
                     f"{server.base_url} and approves what the app may do. Until then, offer "
                     "what works without an account instead of failing.")
        if server.account_page:
            lines.append(f"They can see and remove the connection at {server.account_page}.")
    lines += ["", "## What to try first", "",
              "Offer the person one of these, in their own language, and run it if they agree:",
              ""]
    lines += [f"- {prompt}" for prompt in listing.prompts]
    return "\n".join(lines) + "\n"


def write(dest: Path, listing: Listing, tools: Sequence[Mapping[str, Any]],
          instructions: Mapping[str, str], server: Server) -> list[str]:
    """The plugin's files under ``dest`` (made if missing); returns their paths, relative."""
    logo = f"./assets/logo{listing.app.logo.suffix.lower()}"
    files = {
        MANIFEST: json.dumps(manifest(listing, server, logo, tools), indent=2,
                             ensure_ascii=False) + "\n",
        SERVERS: json.dumps({"mcpServers": {listing.app.slug: {
            "type": "http", "url": server.mcp_url}}}, indent=2) + "\n",
        ONBOARDING.removeprefix("./"): skill(listing, tools, instructions, server),
    }
    for path, text in files.items():
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_text(text, encoding="utf-8")
    (dest / logo).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(listing.app.logo, dest / logo)
    return [*files, logo.removeprefix("./")]


def problems(root: Path) -> list[str]:
    """What a host would refuse in the plugin at ``root``, one line each."""
    try:
        data = json.loads((root / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return [f"plugin: {MANIFEST} cannot be read: {exc}"]
    lines: list[str] = []
    if not isinstance(data.get("name"), str) or not SLUG.fullmatch(data["name"]):
        lines.append("plugin: name must be lowercase words joined by hyphens")
    interface = data.get("interface") if isinstance(data.get("interface"), dict) else {}
    for key, limit in (("displayName", MAX_NAME), ("shortDescription", MAX_SHORT),
                       ("longDescription", MAX_LONG)):
        value = interface.get(key)
        if not isinstance(value, str) or not 0 < len(value) <= limit:
            lines.append(f"plugin: interface.{key} must be 1 to {limit} characters")
    prompts = interface.get("defaultPrompt")
    if not isinstance(prompts, list) or not 0 < len(prompts) <= MAX_DEFAULT_PROMPTS or not all(
            isinstance(p, str) and 0 < len(p) <= MAX_PROMPT for p in prompts):
        lines.append(f"plugin: interface.defaultPrompt must hold 1 to {MAX_DEFAULT_PROMPTS} "
                     f"prompts of at most {MAX_PROMPT} characters")
    for key in ("websiteURL", "privacyPolicyURL", "termsOfServiceURL"):
        if not str(interface.get(key, "")).startswith(("https://", "http://")):
            lines.append(f"plugin: interface.{key} must be an absolute URL")
    for key in ("logo", "composerIcon"):
        lines.extend(_inside(root, interface.get(key), f"interface.{key}"))
    lines.extend(_inside(root, data.get("mcpServers"), "mcpServers"))
    lines.extend(_inside(root, data.get("skills"), "skills", folder=True))
    onboarding = ((data.get("extensions") or {}).get("com.openai") or {}).get("onboardingSkill")
    found = _inside(root, onboarding, 'extensions["com.openai"].onboardingSkill')
    lines.extend(found)
    if not found:
        lines.extend(_skill_problems(root / str(onboarding), str(onboarding)))
    if not found and not str(onboarding).startswith(str(data.get("skills"))):
        lines.append("plugin: the onboarding skill must be one of the plugin's skills")
    lines.extend(_servers_problems(root / str(data.get("mcpServers"))))
    return lines


def _inside(root: Path, value: Any, key: str, folder: bool = False) -> list[str]:
    """A path the manifest names: relative (./), inside the plugin, present."""
    if not isinstance(value, str) or not value.startswith("./"):
        return [f"plugin: {key} must be a path starting with ./"]
    parts = PurePosixPath(value[2:]).parts
    if ".." in parts or not parts:
        return [f"plugin: {key} {value!r} must stay inside the plugin"]
    target = root.joinpath(*parts)
    if not (target.is_dir() if folder else target.is_file()):
        return [f"plugin: {key} {value!r} is not in the plugin"]
    return []


def _skill_problems(path: Path, shown: str) -> list[str]:
    """A skill file opens with front matter naming it and saying when to use it."""
    lines = path.read_text("utf-8").splitlines()
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        return [f"plugin: {shown} must open with front matter between --- lines"]
    fields = dict(line.split(":", 1) for line in lines[1:lines.index("---", 1)] if ":" in line)
    problems = []
    if not fields.get("name", "").strip():
        problems.append(f"plugin: {shown}: the front matter has no name")
    described = fields.get("description", "").strip()
    if not described or len(described) > MAX_SKILL_DESCRIPTION:
        problems.append(f"plugin: {shown}: the front matter needs a description of at most "
                        f"{MAX_SKILL_DESCRIPTION} characters")
    return problems


def _servers_problems(path: Path) -> list[str]:
    try:
        servers = json.loads(path.read_text("utf-8")).get("mcpServers")
    except (OSError, ValueError, AttributeError) as exc:
        return [f"plugin: {SERVERS} cannot be read: {exc}"]
    if not isinstance(servers, dict) or len(servers) != 1:
        return [f"plugin: {SERVERS} must name this server, once"]
    (entry,) = servers.values()
    url = entry.get("url") if isinstance(entry, dict) else None
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        return [f"plugin: {SERVERS}: the server's url must be its absolute MCP URL"]
    return []
