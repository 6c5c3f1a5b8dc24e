"""Placeholder: the gemini codec (being written)."""
