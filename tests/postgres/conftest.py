"""The PostgreSQL journal's tests need psycopg (the `postgres` extra; `dev` installs it)."""

import importlib.util

if importlib.util.find_spec("psycopg") is None:  # nothing here can even be imported
    collect_ignore_glob = ["test_*.py"]
