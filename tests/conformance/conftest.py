"""Every conformance test reads the recorded traffic: without it they fail, never skip.

A green run that checked no capture would be a lie, so a missing folder is an error
naming the path (tests/conformance/traffic/, or TOOLREEL_TRAFFIC_DIR when set).
"""

from __future__ import annotations

import pytest
from traffic import TRAFFIC


@pytest.fixture(autouse=True, scope="session")
def _recorded_traffic_present() -> None:
    """Fail every test here, saying where the corpus was looked for, when it is absent."""
    if not TRAFFIC.is_dir():
        pytest.fail(
            f"recorded provider traffic not found at {TRAFFIC} (the corpus ships in "
            "tests/conformance/traffic/; TOOLREEL_TRAFFIC_DIR, when set, points elsewhere)",
            pytrace=False,
        )
