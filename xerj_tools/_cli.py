"""The `xerj-tools` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="xerj-tools",
        description="Let an OpenAI-style model use a XERJ search engine through function calling.",
    )
    parser.add_argument("--version", action="version", version=f"xerj-tools {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="dispatch realistic model tool calls to $XERJ_URL, or to the built-in stand-in",
        description="Dispatch realistic model tool calls, mistakes included, and print the tool "
        "messages. Uses $XERJ_URL (key: $XERJ_API_KEY) when set, else a local stand-in.",
        epilog="example: xerj-tools demo --index docs",
    )
    demo.add_argument("--url", help="XERJ base URL (default: $XERJ_URL, else the stand-in)")
    demo.add_argument("--index", default="docs", help="index the searches use (default: docs)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import run_demo

        return run_demo(args.url, index=args.index)
    parser.print_help(sys.stderr)
    return 2
