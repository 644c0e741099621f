"""Start-up: what `import xerj_tools` leaves unimported, and why the bundled schemas need no check.

How long start-up takes is measured by benchmarks/startup.py, not here.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from xerj_tools import ToolDefinitionError, load_registry
from xerj_tools._http._transport import Endpoint, TransportSettings
from xerj_tools._schema._registry import _validator_class

# Each is imported where it is first needed: jsonschema when a call fails its fast check or a
# tools file of your own is loaded, email.utils for a Retry-After date, orjson (the `fast` extra)
# for the first answer, openai by no path here.
LAZY = ("jsonschema", "email.utils", "openai", "httpx2", "uuid", "tenacity", "orjson",
        # the framework adapters' SDKs: only their own modules import them
        "google.genai", "google.adk", "pydantic_ai", "langchain", "langchain_core", "agents", "mcp")


def test_import_leaves_the_heavy_modules_unimported() -> None:
    code = f"import sys, xerj_tools; print(json.dumps([m for m in {LAZY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == []


def test_a_valid_call_needs_no_jsonschema() -> None:
    code = ("import sys, json; from xerj_tools import load_registry; "
            "r = load_registry().validate('xerj_search', json.dumps({'index': 'docs', 'query': {'match_all': {}}})); "
            "assert r.ok, r; print('jsonschema' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("spec", list(load_registry()), ids=lambda spec: spec.name)
def test_every_bundled_schema_is_valid_json_schema(spec: object) -> None:
    """The bundled tools.json is not re-checked in each process (that cost 50-100 ms per
    process): this test is what holds its schemas valid."""
    schema = spec.schema  # type: ignore[attr-defined]
    _validator_class(schema).check_schema(schema)
    assert spec.validator.schema is schema  # type: ignore[attr-defined]
    assert isinstance(spec.validator, jsonschema.Draft202012Validator)  # type: ignore[attr-defined]


def test_a_tools_file_of_your_own_is_still_checked_on_load(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"type": "function", "function": {"name": "t", "parameters": {"type": "objekt"}}}]))
    with pytest.raises(ToolDefinitionError, match="invalid JSON Schema"):
        load_registry(path)


def test_an_http_only_client_loads_no_ca_bundle_and_could_not_pass_tls_unchecked() -> None:
    plain = TransportSettings().httpx_options(tls=Endpoint.create("http://a:9200,http://b:9200").tls)
    context = plain["verify"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0
    assert Endpoint.create("http://a:9200,HTTPS://b:9200").tls
    secure = TransportSettings().httpx_options(tls=True)["verify"]
    assert isinstance(secure, ssl.SSLContext) and secure is not context
    assert secure.cert_store_stats()["x509_ca"] > 0
