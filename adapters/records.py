"""Events, effects and configs as tagged JSON data: the forms journals store.

For toolreel's own layers: toolreel.temporal carries events and configs through
Temporal's payloads in these forms. Each value's `"type"` key names its class
(adapters/_serde.py); older journals' shapes read as today's.

- `event_data` / `event_of`: an event to JSON data and back.
- `effect_data`: an effect as JSON data (`effect_record` is the journal's slimmer form).
- `config_data` / `config_of`: a session's `LoopConfig` to JSON data and back.
- `get_converter()`: the one cattrs converter they are made with (built on first use;
  `toolreel.adapters.structure` and `unstructure` use it).
"""

from __future__ import annotations

from ._journal import config_data, config_of
from ._serde import effect_data, event_data, event_of, get_converter

__all__ = ["config_data", "config_of", "effect_data", "event_data", "event_of", "get_converter"]
