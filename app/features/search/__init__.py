"""Full-text search over the Python standard library documentation (FTS5 or PostgreSQL tsvector)."""

from app.auth.scopes import Scope
from app.db import UnitOfWork
from app.feature import Deps, Feature
from app.features.search.documents import SearchDocuments
from app.features.search.repository import SearchRepository
from app.features.search.seed import seed
from app.features.search.tool import READ_SCOPE, register


def forget(uow: UnitOfWork, subject: str, _: Deps) -> int:
    """An account deleted: the private documents any feature indexed for it go too (the files
    feature's own hook removes its documents with its files; whatever else indexed some, here)."""
    return uow.repository(SearchRepository).remove_owned(subject)


FEATURE = Feature(
    name="search",
    instructions="Use `search` to look up the Python standard library documentation.",
    tools=register,
    seed=seed,
    documents=SearchDocuments(),
    forget=forget,
    scopes=(Scope(READ_SCOPE, {
        "en": "Search your private documents too",
        "es": "Buscar también en tus documentos privados",
        "fr": "Rechercher aussi dans vos documents privés",
        "pt": "Pesquisar também nos seus documentos privados",
        "zh": "同时搜索你的私人文档",
    }),),
)
