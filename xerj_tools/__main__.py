"""`python -m xerj_tools` runs the `xerj-tools` command line."""

from __future__ import annotations

import sys

from ._cli._main import main

sys.exit(main())
