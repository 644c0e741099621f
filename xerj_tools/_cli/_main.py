"""The `xerj-tools` command line: validate, tools, lint, call, demo, mcp, stand-in.

`validate`, `tools` and `lint` work offline and import nothing of the network stack.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ._common import UsageError, _read_argument, _registry, ascii_only
from ._mcp import add_mcp_arguments, run_mcp

__all__ = ["main"]

EXAMPLES = {
    "validate": 'examples:\n  xerj-tools validate --tool xerj_search --args \'{"index": "docs", "query": {}}\'\n'
    "  xerj-tools validate recorded-calls.jsonl --format json\n  cat conversation.json | xerj-tools validate -",
    "tools": "example:\n  xerj-tools tools --target responses > responses-tools.json",
    "lint": "example:\n  xerj-tools lint my-tools.json --strict-report",
    "call": 'examples:\n  XERJ_URL=http://localhost:9200 xerj-tools call xerj_search \'{"index": "docs", "query": {}}\'\n'
    "  xerj-tools call xerj_memory_recall @args.json --dry-run",
    "demo": "example:\n  xerj-tools demo --index docs",
    "mcp": "examples:\n  XERJ_URL=http://localhost:9200 xerj-tools mcp --policy policy.toml\n"
    "  xerj-tools mcp --http 127.0.0.1:8765\n"
    "needs the `mcp` extra (docs/usage.md#install; without it, the command says how to add it);\n"
    "see docs/mcp.md",
    "stand-in": "examples:\n  xerj-tools stand-in --port 0\n  xerj-tools stand-in --api-key test-key\n"
    "  xerj-tools stand-in --catalog",
}


_RERANK_MODES = ("ok", "degraded", "unconfigured", "disabled", "provider_error", "unsupported")


def _port(text: str) -> int:
    """A TCP port number, 0 to 65535 (0: the system picks one); argparse says so on one line."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535 (0 picks a free one); got {port}")
    return port


def _parser() -> argparse.ArgumentParser:
    from .._offline._lint import TARGETS
    from .._version import __version__

    parser = argparse.ArgumentParser(
        prog="xerj-tools",
        description="Let an OpenAI-style model use a XERJ search engine through function calling.",
        epilog="Run 'xerj-tools COMMAND --help' for each command's options and an example.",
    )
    parser.add_argument("--version", action="version", version=f"xerj-tools {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help,
            description=help,
            epilog=EXAMPLES[name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    validate = add(
        "validate",
        "validate tool calls offline: one call, a JSONL file, or a recorded conversation",
    )
    validate.add_argument(
        "input", nargs="?", help="a JSONL file of calls or a recorded conversation ('-': stdin)"
    )
    validate.add_argument("--tool", help="validate one call of this tool (with --args)")
    validate.add_argument("--args", help="the call's arguments: JSON, @file or - (stdin)")
    validate.add_argument(
        "--tools-file", help="a tools file to validate against (default: the bundled tools.json)"
    )
    validate.add_argument(
        "--strict", action="store_true", help="report repairable mistakes as invalid"
    )
    validate.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default), or one JSON document of reports and counts",
    )
    validate.add_argument(
        "--summary",
        action="store_true",
        help="no report per call: the counts, then each kind of problem once (tool and "
        "argument, how many calls, where first seen)",
    )
    validate.add_argument(
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="validate a JSONL input in N processes (0: one per core); the report is the same",
    )
    validate.add_argument(
        "--column", help="a Parquet input's column of calls (default: the only or a usual name)"
    )

    tools = add("tools", "print the tool definitions in the form a target wants")
    tools.add_argument("--target", choices=TARGETS, default="chat")
    tools.add_argument("--tools-file", help="a tools file (default: the bundled tools.json)")

    lint = add(
        "lint", "check a tools file: schemas, names, duplicates, handlers, strict mode per target"
    )
    lint.add_argument(
        "file", nargs="?", help="the tools file ('-': stdin; default: the bundled tools.json)"
    )
    lint.add_argument(
        "--strict-report",
        action="store_true",
        help="also list what keeps each tool from strict mode",
    )

    call = add("call", "dispatch one call to the node in $XERJ_URL and print the tool message")
    call.add_argument("tool", nargs="?", help="the tool's name (or --tool NAME)")
    call.add_argument(
        "arguments", nargs="?", metavar="args", help="the arguments: JSON, @file or - (stdin)"
    )
    call.add_argument("--tool", dest="tool_option", metavar="NAME", help="as `validate` takes it")
    call.add_argument("--args", dest="args_option", metavar="ARGS", help="as `validate` takes it")
    call.add_argument(
        "--dry-run", action="store_true", help="print the HTTP request instead of sending it"
    )
    call.add_argument(
        "--url", help="XERJ base URL (default: $XERJ_URL, else http://localhost:9200)"
    )

    demo = add(
        "demo", "dispatch realistic model tool calls to $XERJ_URL, or to the built-in stand-in"
    )
    demo.add_argument("--url", help="XERJ base URL (default: $XERJ_URL, else the stand-in)")
    demo.add_argument("--index", default="docs", help="the index the searches use (default: docs)")

    stand_in = add("stand-in", "run the XERJ stand-in (a test double) on 127.0.0.1 until Ctrl-C")
    stand_in.add_argument(
        "--port", type=_port, default=9200, help="the port on 127.0.0.1 (default 9200; 0 picks one)"
    )
    stand_in.add_argument(
        "--api-key",
        help="require this key (Authorization: ApiKey ...), as a XERJ node with auth does",
    )
    stand_in.add_argument(
        "--rerank", choices=_RERANK_MODES, default="ok", help="how a rerank block is treated"
    )
    stand_in.add_argument(
        "--catalog",
        action="store_true",
        help="also hold the autoindex-catalog that `xerj autoindex` would write for the corpus",
    )

    add_mcp_arguments(
        add("mcp", "serve the tools to MCP clients (stdio, or streamable HTTP with --http)")
    )
    return parser


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of processes: {text!r}") from None
    if jobs < 0:
        raise argparse.ArgumentTypeError("give 1 or more processes, or 0 for one per core")
    return jobs or os.cpu_count() or 1


def _tools(args: argparse.Namespace, out: TextIO) -> int:
    from .._offline._lint import convert

    tools = convert(_registry(args.tools_file), args.target)
    out.write(json.dumps(tools, indent=2, ensure_ascii=ascii_only(out)) + "\n")
    return 0


def _lint(args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    """Exit 1 when the tools file has errors (not JSON included), 2 when it cannot be read (no
    such file, not UTF-8). Findings about the whole file name it: its path, or ``<stdin>`` for
    ``-``, as Python names its standard input."""
    from importlib import resources

    from .._offline._lint import Finding, lint_tools
    from .._offline._report import printable
    from ..tools import HANDLERS

    name = "<stdin>" if args.file == "-" else printable(args.file or "the bundled tools.json")
    try:
        if args.file == "-":
            buffer = getattr(stdin, "buffer", None)  # strict UTF-8 whatever the locale's codec
            text = stdin.read() if buffer is None else buffer.read().decode("utf-8")
        elif args.file:
            text = Path(args.file).read_bytes().decode("utf-8")
        else:
            text = resources.files("xerj_tools").joinpath("tools.json").read_text("utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"cannot read {name}: the file is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        findings = [Finding("error", name, f"the file is not JSON: {exc}")]
    except RecursionError:
        findings = [Finding("error", name, "the file is nested too deep to read")]
    else:
        try:
            findings = lint_tools(data, HANDLERS, source=name)
        except RecursionError:  # a schema nested hundreds of levels deep
            findings = [Finding("error", name, "a schema is nested too deep to check")]
    errors = [f for f in findings if f.level == "error"]
    for finding in findings:
        if finding.level != "strict" or args.strict_report:
            out.write(f"{finding}\n")
    warnings = sum(f.level == "warning" for f in findings)
    out.write(f"{len(errors)} errors, {warnings} warnings\n")
    return 1 if errors else 0


def _call_parts(args: argparse.Namespace) -> tuple[str, str]:
    """The tool and its arguments, given as `call TOOL ARGS` or as `validate` takes them
    (`--tool NAME --args ARGS`), in any mix; one of each."""
    tools = [t for t in (args.tool, args.tool_option) if t is not None]
    given = [a for a in (args.arguments, args.args_option) if a is not None]
    if args.tool is not None and args.tool_option is not None and args.arguments is None:
        given.insert(0, args.tool)  # `call --tool X ARGS`: the positional is the arguments
        tools = [args.tool_option]
    if len(tools) != 1 or len(given) != 1:
        raise UsageError(
            "give the tool and its arguments once each: call TOOL ARGS, or call --tool TOOL "
            "--args ARGS (ARGS: JSON, @file or - for stdin)"
        )
    return tools[0], given[0]


def _call(args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    from .._shapes import ToolCall

    tool, arguments = _call_parts(args)
    call = ToolCall("cli", tool, _read_argument(arguments, stdin))
    if args.dry_run:
        from .._dispatch._core import DispatchCore, Prepared
        from .._http._transport import Endpoint

        core = DispatchCore(_registry(None), None, rerank_fallback=True, rerank_memory_seconds=0)
        prepared = core.prepare(call)
        if not isinstance(prepared, Prepared):
            from .._message._format import dumps, error_payload

            out.write(dumps(error_payload(prepared)) + "\n")
            return 1
        endpoint = Endpoint.create(args.url)
        headers = endpoint.headers()
        if "Authorization" in headers:
            headers["Authorization"] = "<redacted>"
        request = prepared.request
        shown: dict[str, Any] = {
            "method": request.method,
            "url": endpoint.url(request.path),
            "headers": headers,
            "body": request.body,
        }
        if prepared.repairs:
            shown["repairs"] = list(prepared.repairs)
        out.write(json.dumps(shown, indent=2, ensure_ascii=ascii_only(out)) + "\n")
        return 0
    from .._dispatch._sync import Dispatcher

    with Dispatcher(url=args.url) as dispatcher:
        result = dispatcher.run(call)
    out.write(json.dumps(result.payload, indent=2, ensure_ascii=ascii_only(out)) + "\n")
    return 0 if result.ok else 1


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the command line; returns the exit status (0 ok, 1 invalid or failed, 2 usage, 130
    interrupted, 141 the reader of the output went away: `validate … | head`)."""
    out, err, inp = stdout or _tolerant(sys.stdout), stderr or sys.stderr, stdin or sys.stdin
    try:
        status = _main(argv, out, err, inp)
        out.flush()  # here, not at exit: a reader gone is then seen, and answered quietly
        return status
    except BrokenPipeError:
        # The reader closed the pipe (`| head`): nothing more can be written and nothing went
        # wrong. Later writes (the interpreter flushes stdout at exit) go nowhere, quietly.
        _discard(out, err)
        return 141  # 128 + SIGPIPE, as a shell reports a writer the pipe ended


def _tolerant(stream: TextIO) -> TextIO:
    """`stream` (sys.stdout) writing a character its encoding lacks (an ASCII locale, or
    PYTHONIOENCODING=ascii) as a backslash escape, rather than raising."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    return stream


def _discard(*streams: TextIO) -> None:
    for stream in streams:
        try:
            fileno = stream.fileno()
        except (OSError, ValueError, AttributeError):
            continue  # not a file (a test's StringIO)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fileno)
        os.close(devnull)


def _main(argv: Sequence[str] | None, out: TextIO, err: TextIO, inp: TextIO) -> int:
    from .._exceptions import ConfigurationError

    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if (unknown := _unknown_command(parser, argv)) is not None:
        err.write(f"xerj-tools: {unknown}\n")
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help/--version
        return int(exc.code or 0)
    try:
        if args.command == "validate":
            from ._validate import validate

            return validate(args, out, err, inp)
        if args.command == "tools":
            return _tools(args, out)
        if args.command == "lint":
            return _lint(args, out, inp)
        if args.command == "call":
            return _call(args, out, inp)
        if args.command == "demo":
            from ._demo import run_demo

            return run_demo(args.url, index=args.index, out=out)
        if args.command == "mcp":
            return run_mcp(args, out, err)
        if args.command == "stand-in":
            from ..testing._serve import serve

            return serve(args, out)
    except (UsageError, ConfigurationError) as exc:
        err.write(f"xerj-tools: {exc}\n")
        return 2
    except KeyboardInterrupt:
        err.write("xerj-tools: interrupted\n")
        return 130  # 128 + SIGINT, as a shell reports it
    parser.print_help(err)
    return 2


def _unknown_command(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """A one-line complaint, with a suggestion, when the first word is not a command."""
    if not argv or argv[0].startswith("-"):
        return None
    commands = [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]
    if argv[0] in commands:
        return None
    from .._offline._report import printable

    close = difflib.get_close_matches(argv[0], commands, n=1)
    suggestion = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown command {printable(argv[0])!r}{suggestion} (commands: {', '.join(commands)})"
