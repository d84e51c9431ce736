from app.db.base import Base
from app.db.database import Database, DatabaseUnavailable, UnitOfWork

__all__ = ["Base", "Database", "DatabaseUnavailable", "UnitOfWork"]
