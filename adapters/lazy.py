"""Names a package imports at first use, for toolreel's own packages' `__getattr__`.

`toolreel.adapters`, its providers and `toolreel.shell` list the names a
one-conversation program never touches, each with the module it comes from;
`lazy_names` makes the PEP 562 `__getattr__` that imports one when first asked
for and keeps it (adapters/_lazy.py).
"""

from __future__ import annotations

from ._lazy import lazy_names

__all__ = ["lazy_names"]
