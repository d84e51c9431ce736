"""Full-text search over the Python standard library documentation (FTS5 or PostgreSQL tsvector)."""
