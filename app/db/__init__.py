from app.db.base import Base
from app.db.database import Database, Readiness
from app.db.errors import DatabaseNotMigrated, DatabaseUnavailable
from app.db.uow import SqlUnitOfWork, UnitOfWork

__all__ = ["Base", "Database", "DatabaseNotMigrated", "DatabaseUnavailable", "Readiness", "SqlUnitOfWork",
           "UnitOfWork"]
