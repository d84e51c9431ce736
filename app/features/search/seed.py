"""Load the bundled documentation corpus (idempotent: unchanged documents are not rewritten)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from importlib.resources import files

from app.db import UnitOfWork
from app.feature import AccountProfile
from app.features.search.repository import SearchRepository

CORPUS = files("app.features.search") / "data" / "corpus.jsonl.gz"
FIELDS = ("id", "title", "url", "module", "kind", "body")
BATCH = 1000


def seed(uow: UnitOfWork, demo_accounts: Sequence[AccountProfile] = ()) -> str:
    repo = uow.repository(SearchRepository)
    total, batch = 0, []
    with CORPUS.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            batch.append({k: doc[k] for k in FIELDS})
            if len(batch) == BATCH:
                repo.save_all(batch)
                total, batch = total + len(batch), []
    repo.save_all(batch)
    notes = private_notes(demo_accounts)
    repo.save_all(notes)
    return f"{total + len(batch)} documents, {len(notes)} private notes"


# Private documents of the demo accounts: what `search` adds for a token with search.read.
NOTES = (
    ("asyncio-timeouts", "My notes: asyncio timeouts",
     "Use asyncio.timeout() as a context manager; wait_for cancels the task when the timeout expires."),
    ("pathlib-recipes", "My notes: pathlib recipes",
     "Path.glob for patterns, Path.read_text for small files, Path.mkdir(parents=True, exist_ok=True)."),
)


def private_notes(accounts: Sequence[AccountProfile]) -> list[dict]:
    return [
        {"id": f"note:{account.username}:{slug}", "title": title, "url": f"https://notes.example/{account.username}/{slug}",
         "module": "notes", "kind": "note", "body": body, "owner": account.id}
        for account in accounts
        for slug, title, body in NOTES
    ]
