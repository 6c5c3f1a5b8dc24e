"""Shared pytest setup: pytester, for testing toolreel's own pytest plugin."""

pytest_plugins = ["pytester"]
