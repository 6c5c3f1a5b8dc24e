"""toolreel.adapters: provider wire formats and stores, around the pure core."""

from ._serde import converter, event_from_json, event_to_json, structure, unstructure

__all__ = ["converter", "event_from_json", "event_to_json", "structure", "unstructure"]
