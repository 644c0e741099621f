"""``python -m xerj_tools.testing``: run the XERJ stand-in until interrupted, as
``xerj-tools stand-in`` does (same options; see `_serve`)."""

from __future__ import annotations

import sys

from .._cli._main import main

if __name__ == "__main__":
    sys.exit(main(["stand-in", *sys.argv[1:]]))
