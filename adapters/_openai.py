"""Placeholder: the openai codec (being written)."""
