"""`python -m toolreel`: the `toolreel` command, where its console script is not on PATH.

Installed, this folder is the top-level `toolreel` package (pyproject.toml maps
it); it holds only this module, so `toolreel` stays a namespace package.
"""

from __future__ import annotations

import sys

from toolreel.cli import main

if __name__ == "__main__":
    sys.exit(main())
