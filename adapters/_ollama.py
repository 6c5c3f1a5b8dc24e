"""Placeholder: the ollama codec (being written)."""
