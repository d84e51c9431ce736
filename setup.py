"""Package layout that pyproject.toml alone cannot express.

``migrations/`` sits at the top of the repository, where alembic users look for it,
yet an installed server must be able to migrate its database: the folder ships
inside the wheel as the ``app.migrations`` package. Data folders (``data/``) are
namespace packages so setuptools ships them without ambiguity. Everything else is
declared in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages(include=["app", "app.*"], exclude=["*.__pycache__"]),
        "app.migrations",
        "app.migrations.versions",
    ],
    package_dir={"app.migrations": "migrations"},
)
