"""The listing's files, read into plain values: ``app/listing/app.toml`` and every feature's
``listing.toml``. Whatever is wrong in them is one line naming the file and the entry
(``ListingError.lines``); nothing here needs a server."""

from __future__ import annotations

import datetime
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
APP_FILE = HERE / "app.toml"
FEATURE_FILE = "listing.toml"
# The directory's limits, as OpenAI's plugin manifest checks them (docs/submission.md).
MAX_NAME = 30
MAX_SHORT = 30
MAX_LONG = 4000
MAX_DEVELOPER = 80
MAX_PROMPT = 128
MAX_DEFAULT_PROMPTS = 3  # the manifest's defaultPrompt
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
COLOR = re.compile(r"#[0-9A-Fa-f]{6}")
LOGO_TYPES = (".svg", ".png")
ACCOUNTS = ("linked", "anonymous")
EXPECT_KEYS = ("error", "text", "count", "equals")
# {base_url}, {saved.recipe.id}: a value replaced when the case is replayed (app.listing.review).
REFERENCE = re.compile(r"\{([a-z][a-z0-9_-]*)((?:\.[A-Za-z0-9_-]+)*)\}")


class ListingError(ValueError):
    """The listing's files cannot be read as a listing; one line per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass(frozen=True)
class Expect:
    """What a replayed call must answer: an error or not, sentences in its text, how many items
    a list holds (``count``), values at paths of its structured content (``equals``)."""

    error: bool = False
    text: tuple[str, ...] = ()
    count: Mapping[str, int] = field(default_factory=dict)
    equals: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """A test case: what a person types, the tool and arguments the model should choose, the
    outcome a reviewer should see (``outcome``, in words) and what the replay checks."""

    where: str  # "app/features/zoo/listing.toml, case 1": for every line said about it
    feature: str
    prompt: str
    tool: str
    arguments: Mapping[str, Any]
    outcome: str
    expect: Expect
    id: str | None = None  # for later cases' {id.path} references
    account: str | None = None  # linked | anonymous; None: linked when the tool needs an account
    # The person's answer to the form the tool asks (app/mcp/forms.py): its key, and what they fill
    # in; the replay then speaks MCP 2026-07-28 with OpenAI's form capability, as ChatGPT does.
    form: Form | None = None


@dataclass(frozen=True)
class Form:
    key: str
    answer: Mapping[str, Any]


@dataclass(frozen=True)
class FeatureListing:
    feature: str
    path: str
    prompts: tuple[str, ...]
    cases: tuple[Case, ...]


@dataclass(frozen=True)
class AppListing:
    """The app-level fields. ``links`` are absolute URLs or paths on this server."""

    name: str
    slug: str
    version: str  # the plugin's: raise it for each submission
    short_description: str
    long_description: str
    developer: str
    category: str
    logo: Path
    brand_color: str
    website: str
    support: str  # "" when APP_OPERATOR_CONTACT is the support link
    privacy: str
    terms: str
    # Features whose starter prompts the manifest shows first, in this order (a deleted one is
    # passed over: deleting a feature never needs this file changed).
    lead: tuple[str, ...] = ()


@dataclass(frozen=True)
class Listing:
    app: AppListing
    features: tuple[FeatureListing, ...]

    @property
    def cases(self) -> list[Case]:
        return [case for feature in self.features for case in feature.cases]

    @property
    def prompts(self) -> list[str]:
        return [prompt for feature in self.features for prompt in feature.prompts]

    def default_prompts(self) -> list[str]:
        """At most three for the manifest: each feature's first (``lead`` features first), then
        each one's second..."""
        lead = self.app.lead
        features = sorted(self.features, key=lambda f: (
            lead.index(f.feature) if f.feature in lead else len(lead), f.feature))
        rounds = max((len(f.prompts) for f in features), default=0)
        ordered = [f.prompts[i] for i in range(rounds) for f in features if i < len(f.prompts)]
        return ordered[:MAX_DEFAULT_PROMPTS]


def load(features_root: Path, app_file: Path = APP_FILE) -> Listing:
    """The listing of the features under ``features_root`` (each folder's listing.toml, when it
    has one) and the app-level file; every problem found, at once, in ``ListingError``."""
    problems: list[str] = []
    app = _app(app_file, problems)
    listings = []
    for folder in sorted(p for p in features_root.iterdir()
                         if p.is_dir() and not p.name.startswith(("_", "."))):
        if (folder / FEATURE_FILE).is_file():
            listings.append(_feature(folder, problems))
    ids = [case.id for listing in listings for case in listing.cases if case.id]
    problems.extend(f"case id {i!r} is given to {ids.count(i)} cases: make each one unique"
                    for i in sorted({i for i in ids if ids.count(i) > 1}))
    if problems or app is None:
        raise ListingError(problems)
    return Listing(app, tuple(listings))


def _read(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except OSError as exc:
        problems.append(f"{_shown(path)}: cannot be read: {exc.strerror or exc}")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        problems.append(f"{_shown(path)}: not TOML: {exc}")
    return None


def _shown(path: Path) -> str:
    """The path as a forker sees it: from the checkout's root."""
    try:
        return str(path.resolve().relative_to(HERE.parents[1]))
    except ValueError:
        return str(path)


def _text(data: Mapping[str, Any], key: str, where: str, problems: list[str], *,
          limit: int | None = None, required: bool = True) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{where}: `{key}` must be a text that is not empty")
        return ""
    # A long text as written in TOML, its lines wrapped: one line per paragraph, as shown.
    value = "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", value.strip()))
    if limit is not None and len(value) > limit:
        problems.append(f"{where}: `{key}` has {len(value)} characters, at most {limit} are shown")
    return value


def _unknown(data: Mapping[str, Any], known: tuple[str, ...], where: str,
             problems: list[str]) -> None:
    problems.extend(f"{where}: `{key}` is not a field of it (known: {', '.join(known)})"
                    for key in data if key not in known)


APP_KEYS = ("name", "slug", "version", "short_description", "long_description", "developer",
            "category", "logo", "brand_color", "website", "support", "privacy", "terms", "lead")


def _app(path: Path, problems: list[str]) -> AppListing | None:
    data = _read(path, problems)
    if data is None:
        return None
    where = _shown(path)
    _unknown(data, APP_KEYS, where, problems)
    text = {key: _text(data, key, where, problems, limit=limit) for key, limit in (
        ("name", MAX_NAME), ("slug", 64), ("short_description", MAX_SHORT),
        ("long_description", MAX_LONG), ("developer", MAX_DEVELOPER), ("category", 40),
        ("logo", None), ("brand_color", None), ("website", 1024), ("privacy", 1024),
        ("terms", 1024), ("version", 32))}
    # Optional: without it, the operator's contact (APP_OPERATOR_CONTACT) is the support link.
    text["support"] = _text(data, "support", where, problems, limit=1024, required=False)
    if text["slug"] and not SLUG.fullmatch(text["slug"]):
        problems.append(f"{where}: `slug` {text['slug']!r}: lowercase letters and digits, "
                        "words joined by hyphens (it names the plugin)")
    if text["brand_color"] and not COLOR.fullmatch(text["brand_color"]):
        problems.append(f"{where}: `brand_color` {text['brand_color']!r}: a colour as #RRGGBB")
    logo = path.parent / text["logo"]
    # Beside the file, itself: the plugin packages it, and nothing else of this machine.
    if text["logo"] and (logo.suffix.lower() not in LOGO_TYPES or not logo.is_file()
                         or logo.is_symlink() or logo.resolve().parent != path.parent.resolve()):
        problems.append(f"{where}: `logo` {text['logo']!r}: an .svg or .png file beside it")
    for key in ("website", "support", "privacy", "terms"):
        value = text[key]
        if value and not (value.startswith("/") or re.match(r"(https://|mailto:)", value)):
            problems.append(f"{where}: `{key}` {value!r}: a path on this server (/privacy) or an "
                            "https:// (or mailto:) address")
    lead = data.get("lead", [])
    if not isinstance(lead, list) or not all(isinstance(n, str) for n in lead):
        problems.append(f"{where}: `lead` must be a list of feature names")
        lead = []
    return AppListing(**{**text, "logo": logo}, lead=tuple(lead))


FEATURE_KEYS = ("prompts", "cases")
CASE_KEYS = ("id", "prompt", "tool", "arguments", "outcome", "account", "expect", "form")


def _feature(folder: Path, problems: list[str]) -> FeatureListing:
    path = folder / FEATURE_FILE
    data = _read(path, problems) or {}
    where = _shown(path)
    _unknown(data, FEATURE_KEYS, where, problems)
    prompts = data.get("prompts", [])
    if not isinstance(prompts, list) or not all(isinstance(p, str) and p.strip() for p in prompts):
        problems.append(f"{where}: `prompts` must be a list of texts")
        prompts = []
    for prompt in prompts:
        if len(prompt) > MAX_PROMPT:
            problems.append(f"{where}: the prompt {prompt[:40]!r}... has {len(prompt)} "
                            f"characters, at most {MAX_PROMPT}")
    raw = data.get("cases", [])
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        problems.append(f"{where}: `cases` must be a list of tables ([[cases]])")
        raw = []
    cases = tuple(_case(entry, folder.name, f"{where}, case {n}", problems)
                  for n, entry in enumerate(raw, start=1))
    return FeatureListing(folder.name, where, tuple(p.strip() for p in prompts), cases)


def _case(data: dict[str, Any], feature: str, where: str, problems: list[str]) -> Case:
    _unknown(data, CASE_KEYS, where, problems)
    prompt = _text(data, "prompt", where, problems, limit=MAX_PROMPT)
    tool = _text(data, "tool", where, problems)
    outcome = _text(data, "outcome", where, problems, limit=500)
    for key in ("arguments", "expect", "form"):
        if _has_date(data.get(key)):
            problems.append(f"{where}: `{key}` holds a TOML date or time: write it in quotes, "
                            "as the tool receives it (\"2026-06-01\")")
            data = {**data, key: {}}
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        problems.append(f"{where}: `arguments` must be a table (arguments = {{ name = value }})")
        arguments = {}
    case_id = data.get("id")
    if case_id is not None and (not isinstance(case_id, str) or not REFERENCE.fullmatch(
            "{" + case_id + "}") or case_id == "base_url"):
        problems.append(f"{where}: `id` {case_id!r}: lowercase letters, digits, - and _, "
                        "starting with a letter (and not base_url)")
        case_id = None
    account = data.get("account")
    if account is not None and account not in ACCOUNTS:
        problems.append(f"{where}: `account` {account!r}: one of {', '.join(ACCOUNTS)}")
        account = None
    return Case(where, feature, prompt, tool, arguments, outcome,
                _expect(data.get("expect", {}), where, problems), case_id, account,
                _form(data.get("form"), where, problems))


def _form(data: Any, where: str, problems: list[str]) -> Form | None:
    if data is None:
        return None
    key, answer = (data.get("key"), data.get("answer")) if isinstance(data, dict) else (None, None)
    if not isinstance(data, dict) or set(data) != {"key", "answer"} or not isinstance(key, str) \
            or not key or not isinstance(answer, dict):
        problems.append(f"{where}: `form` must be a table of `key` (the question the tool asks) "
                        "and `answer` (what the person fills in): form = { key = \"title\", "
                        "answer = { title = \"Lentil soup\" } }")
        return None
    return Form(key, answer)


def _has_date(value: Any) -> bool:
    """TOML's unquoted dates and times become Python objects JSON has no form for."""
    if isinstance(value, (datetime.date, datetime.time)):
        return True
    if isinstance(value, dict):
        return any(_has_date(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_date(v) for v in value)
    return False


def _expect(data: Any, where: str, problems: list[str]) -> Expect:
    if not isinstance(data, dict):
        problems.append(f"{where}: `expect` must be a table")
        return Expect()
    _unknown(data, EXPECT_KEYS, f"{where}, expect", problems)
    error = data.get("error", False)
    text = data.get("text", [])
    count = data.get("count", {})
    equals = data.get("equals", {})
    if not isinstance(error, bool):
        problems.append(f"{where}: `expect.error` must be true or false")
        error = False
    if not isinstance(text, list) or not all(isinstance(t, str) and t for t in text):
        problems.append(f"{where}: `expect.text` must be a list of texts the answer contains")
        text = []
    if not isinstance(count, dict) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in count.values()):
        problems.append(f"{where}: `expect.count` must map paths to numbers of items "
                        "(count = { animals = 3 })")
        count = {}
    if not isinstance(equals, dict):
        problems.append(f"{where}: `expect.equals` must map paths to values")
        equals = {}
    return Expect(error, tuple(text), count, equals)
