"""Load the bundled documentation corpus (idempotent: unchanged documents are not rewritten)."""

from __future__ import annotations

import gzip
import json
from importlib.resources import files

from app.db import UnitOfWork
from app.features.search.repository import SearchRepository

CORPUS = files("app.features.search") / "data" / "corpus.jsonl.gz"
FIELDS = ("id", "title", "url", "module", "kind", "body")
BATCH = 1000


def seed(uow: UnitOfWork) -> str:
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
    return f"{total + len(batch)} documents"
