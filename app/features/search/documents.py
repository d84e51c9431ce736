"""What search offers other features: their accounts' private documents, found by ``search`` for that account."""

from __future__ import annotations

from collections.abc import Sequence

from app.db import UnitOfWork
from app.features.search.repository import SearchRepository

MAX_BODY = 200_000
MAX_TITLE = 300


class SearchDocuments:
    def put(self, uow: UnitOfWork, *, id: str, owner: str, title: str, url: str, body: str, source: str) -> None:
        if not owner:
            raise ValueError("a private document needs an owner")
        uow.repository(SearchRepository).save_all([{
            "id": id, "title": title[:MAX_TITLE], "url": url, "module": source, "kind": source[:20],
            "body": body[:MAX_BODY], "owner": owner,
        }])

    def remove(self, uow: UnitOfWork, ids: Sequence[str]) -> None:
        if ids:
            uow.repository(SearchRepository).remove(list(ids))
