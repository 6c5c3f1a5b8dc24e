"""Placeholder: the anthropic codec (being written)."""
