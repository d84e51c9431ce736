"""``python -m app listing``: read the listing, hold it against the server's tools, write and
check the plugin, replay every test case, print the report. Exit 0 when every step holds.

The server is the one at ``--url`` (its MCP URL), or this checkout's app, which the CLI serves on
a free loopback port for the run (app.__main__._served_here). Linked
cases carry a token: LISTING_TOKEN's when set (an external identity provider's), else one the
built-in authorization server's sign-in gives (``sign_in``: absent without that package)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from app.listing import entries, plugin, review
from app.settings import Settings

TOKEN_VARIABLE = "LISTING_TOKEN"
# (http, base_url, resource, scope) -> an access token for the review account.
SignIn = Callable[[Any, str, str, str], str]


def run(settings: Settings, http: Any, mcp_url: str, base_url: str, features_root: Path,
        instructions: Mapping[str, str], *, published: str, plugin_dir: Path | None,
        sign_in: SignIn | None, account_page: str | None,
        out: Callable[[str], None] = print) -> int:
    """Replay against the server at ``mcp_url`` (``base_url``); the plugin and the notes are
    about ``published``, the address the directory will be given (APP_BASE_URL, or --url's)."""
    hidden = [v for v in (os.environ.get(TOKEN_VARIABLE), os.environ.get("LISTING_PASSWORD")) if v]
    return _run(settings, http, mcp_url, base_url, features_root, instructions,
                published=published, plugin_dir=plugin_dir, sign_in=sign_in,
                account_page=account_page, out=lambda line: out(printable(line, hidden)))


def printable(line: str, hidden: Sequence[str]) -> str:
    """``line`` as a terminal may show it: what a server wrote goes through without its control
    characters (no escape sequence rewrites the report), and without a secret it echoed."""
    for secret in hidden:
        line = line.replace(secret, "[hidden]")
    return "".join(c for c in line if c == "\n" or (c.isprintable() or c == " "))


def _run(settings: Settings, http: Any, mcp_url: str, base_url: str, features_root: Path,
         instructions: Mapping[str, str], *, published: str, plugin_dir: Path | None,
         sign_in: SignIn | None, account_page: str | None, out: Callable[[str], None]) -> int:
    try:
        listing = entries.load(features_root)
    except entries.ListingError as exc:
        for line in exc.lines:
            out(line)
        return 1
    from app.mcp.check import collect

    try:
        tools, resources = collect(http, mcp_url)
    except httpx.HTTPError as exc:
        out(f"listing: cannot reach an MCP server at {mcp_url}: {exc}")
        return 1
    except (KeyError, TypeError, AttributeError, ValueError, RuntimeError) as exc:
        # A server that is not this one, or not well: its answers are not what MCP says.
        out(f"listing: the server's tools and resources cannot be read: "
            f"{type(exc).__name__}: {exc}")
        return 1
    out(f"listing: {listing.app.name} {listing.app.version}: {len(listing.features)} features, "
        f"{len(listing.prompts)} starter prompts, {len(listing.cases)} test cases")
    if problems := review.problems(listing, tools, resources, base_url):
        for line in problems:
            out(line)
        out(f"listing: {len(problems)} {'problem' if len(problems) == 1 else 'problems'}: "
            "nothing was replayed")
        return 1
    server = plugin.Server(base_url=published, mcp_url=f"{published}/mcp",
                           contact=settings.operator_contact, account_page=account_page)
    with tempfile.TemporaryDirectory() as scratch:
        dest = plugin_dir or Path(scratch)
        try:
            written = plugin.write(dest, listing, tools, instructions, server)
        except OSError as exc:
            out(f"plugin: cannot write it to {dest}: {exc.strerror or exc}")
            return 1
        if packaged := plugin.problems(dest):
            for line in packaged:
                out(line)
            return 1
    if plugin_dir is not None:
        out(f"plugin: {', '.join(written)} written to {plugin_dir}")
    by_name = {tool["name"]: tool for tool in tools}
    scope = " ".join(review.scopes(listing, by_name))
    outcomes = review.replay(listing, tools, http, mcp_url, base_url,
                             lambda: _token(http, base_url, mcp_url, scope, sign_in))
    out(f"replay against {mcp_url}:")
    for outcome in outcomes:
        out(_reported(outcome))
    passed = sum(o.ok for o in outcomes)
    out(f"{passed} of {len(outcomes)} test cases answered as expected")
    remote = published != settings.base_url
    for note in notes(listing, settings, published, http if remote else None):
        out(f"before you submit: {note}")
    return 0 if passed == len(outcomes) else 1


def _token(http: Any, base_url: str, resource: str, scope: str, sign_in: SignIn | None) -> str:
    if given := os.environ.get(TOKEN_VARIABLE):
        return given
    if sign_in is None:
        raise RuntimeError(f"set {TOKEN_VARIABLE} to an access token your identity provider "
                           "issued for a test account")
    return sign_in(http, base_url, resource, scope)


def _reported(outcome: review.Outcome) -> str:
    case = outcome.case
    arguments = json.dumps(outcome.arguments, ensure_ascii=False)
    if len(arguments) > 60:
        arguments = arguments[:59] + "…"
    head = f"  {'ok  ' if outcome.ok else 'FAIL'}  {case.where}: {case.tool} {arguments}"
    form = ""
    if case.form is not None:  # the form the tool asked, and what the replay filled in
        filled = json.dumps(dict(case.form.answer), ensure_ascii=False)
        form = f"        form {case.form.key!r} filled in: {filled[:80]}\n"
    return (f"{head} ({outcome.millis} ms)\n        asked: {case.prompt}\n{form}"
            f"        {'answered' if outcome.ok else 'wrong'}: {outcome.detail}")


def notes(listing: entries.Listing, settings: Settings, base_url: str,
          remote: Any = None) -> list[str]:
    """What the submission will ask for that this deployment does not give yet (not failures:
    a development server replays its listing too). ``remote``: the HTTP client of a --url run,
    which asks the deployment itself what only it knows; else this environment's settings say."""
    found = []
    if not base_url.startswith("https://"):
        found.append(f"the directory needs a public https address ({base_url} is not one)")
    if remote is not None:
        answer = remote.get(f"{base_url}/.well-known/openai-apps-challenge")
        if answer.status_code != 200:
            found.append(f"domain verification: {base_url}/.well-known/openai-apps-challenge "
                         f"answers HTTP {answer.status_code}: set APP_OPENAI_APPS_CHALLENGE there "
                         "to the token OpenAI gives you")
    elif not settings.openai_apps_challenge:
        found.append("domain verification: set APP_OPENAI_APPS_CHALLENGE to the token OpenAI "
                     "gives you")
    if not listing.app.support and not settings.operator_contact:
        found.append("no support link in the plugin: set APP_OPERATOR_CONTACT here (or "
                     "`support` in app/listing/app.toml)")
    if remote is None and settings.server_title != listing.app.name:
        found.append(f"the privacy and terms pages call the app {settings.server_title!r} and "
                     f"the listing {listing.app.name!r}: set APP_SERVER_TITLE to the listing's")
    return found


def instructions_of(features: Sequence[Any]) -> dict[str, str]:
    return {feature.name: feature.instructions for feature in features}
