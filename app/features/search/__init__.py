"""Full-text search over the Python standard library documentation (FTS5 or PostgreSQL tsvector)."""

from app.feature import Feature
from app.features.search.seed import seed
from app.features.search.tool import register

FEATURE = Feature(
    name="search",
    instructions="Use `search` to look up the Python standard library documentation.",
    tools=register,
    seed=seed,
)
