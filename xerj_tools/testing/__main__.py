"""``python -m xerj_tools.testing``: run the XERJ stand-in until interrupted (see `_serve`)."""

from __future__ import annotations

import sys

from ._serve import main

if __name__ == "__main__":
    sys.exit(main())
