"""Fixtures shared by integration test modules."""

from tests.filehost import deployed, file_server, s3  # noqa: F401 (fixtures, registered by being imported here)
