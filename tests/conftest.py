"""Shared pytest setup: pytester, for testing toolreel's own pytest plugin; a PostgreSQL server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import postgres_server
import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def postgres() -> Iterator[postgres_server.Server]:
    """One throwaway PostgreSQL server for the whole run (skips, saying why, where none can run)."""
    try:
        import psycopg  # noqa: F401, PLC0415
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'toolreel[postgres]')")
    try:
        server = postgres_server.start()
    except (RuntimeError, OSError) as exc:
        pytest.skip(f"cannot start a PostgreSQL server: {exc}")
    yield server
    server.stop()


@pytest.fixture
def postgres_dsn(postgres: postgres_server.Server) -> str:
    """A DSN whose tables live in a schema of this test's own (an empty journal)."""
    return postgres_server.schema_dsn(postgres.dsn, f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def postgres_journal(postgres_dsn: str) -> Iterator[object]:
    """A `PostgresJournal` on an empty schema of the test's own (closed afterwards)."""
    from toolreel.adapters import PostgresJournal  # noqa: PLC0415 - psycopg, once it is known

    journal = PostgresJournal(postgres_dsn)
    yield journal
    journal.close()
