"""Gemini, the fourth wire shape: declarations, functionCall parts answered by functionResponse
parts (by id, or by name and order), offline validation of `contents`, and a round trip with the
real google-genai client against `ScriptedGemini` on 127.0.0.1 (nothing reaches Google).

google-genai is imported by the tests that use it, not when the module is collected."""

from __future__ import annotations

import importlib.util
import io
import json
from typing import Any

import pytest

from xerj_tools import Dispatcher, load_registry, parse_tool_call, turn_messages
from xerj_tools._cli._main import main
from xerj_tools._offline._lint import convert, lint_tools
from xerj_tools._shapes import GEMINI
from xerj_tools._shapes._gemini_schema import gemini_subset
from xerj_tools.testing import Fault, ScriptedGemini, Turn, XerjStandIn
from xerj_tools.testing._gemini import pairing_problem
from xerj_tools.tools import HANDLERS

pytestmark = pytest.mark.usefixtures("loopback_only")  # nothing may reach a vendor's servers

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
genai_missing = importlib.util.find_spec("google") is None or importlib.util.find_spec("google.genai") is None
needs_genai = pytest.mark.skipif(
    genai_missing, reason="google-genai is not installed: pip install 'xerj-tools[gemini]'"
)


def part(name: str, args: Any, call_id: str | None = None) -> dict[str, Any]:
    call = {"name": name, "args": args}
    return {"functionCall": {"id": call_id, **call} if call_id else call}


def test_a_call_with_an_id_is_answered_with_that_id() -> None:
    call = parse_tool_call(part("xerj_search", SEARCH, "fc-7"))
    assert (call.call_id, call.name, call.api, call.arguments) == (
        "fc-7",
        "xerj_search",
        "gemini",
        SEARCH,
    )
    answer = call.answer('{"ok":true,"hits":[]}')
    assert answer == {
        "functionResponse": {
            "id": "fc-7",
            "name": "xerj_search",
            "response": {"ok": True, "hits": []},
        }
    }


def test_calls_without_ids_are_matched_by_name_and_order(xerj: XerjStandIn) -> None:
    turn = [
        part("xerj_search", SEARCH),
        part("xerj_search", {"index": "docs"}),
        {"function_call": {"name": "xerj_get_document", "args": {"index": "docs", "id": "pm-101"}}},
    ]
    transcript: list[Any] = [{"role": "model", "parts": turn}]
    with Dispatcher(url=xerj.url) as dispatcher:
        answers = dispatcher.dispatch_many(turn, transcript=transcript)
    # one user content, one response per call, in call order, no invented ids
    assert transcript[1] == {"role": "user", "parts": answers}
    assert [a["functionResponse"]["name"] for a in answers] == [
        "xerj_search",
        "xerj_search",
        "xerj_get_document",
    ]
    assert all("id" not in a["functionResponse"] for a in answers)
    first, invalid, document = (a["functionResponse"]["response"] for a in answers)
    assert first["ok"] is True and first["hits"]
    assert invalid["ok"] is False and invalid["error"]["code"] == "invalid_arguments"
    assert document["ok"] is True
    assert pairing_problem(transcript) is None


def test_arguments_that_are_not_an_object_get_the_envelope(xerj: XerjStandIn) -> None:
    with Dispatcher(url=xerj.url) as dispatcher:
        (answer,) = dispatcher.dispatch_many([part("xerj_search", ["docs"], "x")])
    response = answer["functionResponse"]["response"]
    assert response["ok"] is False and "args must be a JSON object" in json.dumps(response)
    assert xerj.requests == []


def test_sdk_objects_are_read_too() -> None:
    types = pytest.importorskip("google.genai.types")
    sdk_part = types.Part(function_call=types.FunctionCall(name="xerj_search", args=SEARCH))
    assert parse_tool_call(sdk_part).arguments == SEARCH
    assert parse_tool_call(sdk_part.function_call).name == "xerj_search"
    # a legacy Chat Completions message with a function_call is not a Gemini part
    assert not GEMINI.claims(
        {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}
    )


def test_turn_messages_groups_gemini_answers_in_one_user_content() -> None:
    answers = [
        {"functionResponse": {"name": "a", "response": {}}},
        {"functionResponse": {"name": "b", "response": {}}},
    ]
    assert turn_messages(answers) == [{"role": "user", "parts": answers}]


def test_declarations_carry_the_whole_schema_and_the_subset_names_its_losses() -> None:
    registry = load_registry()
    declarations = convert(registry, "gemini")
    assert [d["name"] for d in declarations] == list(registry.names)
    assert declarations[0]["parametersJsonSchema"] == dict(registry["xerj_search"].parameters)
    assert registry.gemini_tools() == [{"functionDeclarations": declarations}]
    subset = convert(registry, "gemini-subset")[0]["parameters"]
    assert subset["type"] == "OBJECT" and subset["properties"]["query"]["type"] == "OBJECT"
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
            "c": {"type": "integer", "enum": [1, 2], "exclusiveMinimum": 0},
            "d": {"const": "x"},
        },
    }
    converted, notes = gemini_subset(schema)
    assert converted["properties"]["a"] == {"type": "STRING", "nullable": True}
    assert converted["properties"]["b"] == {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]}
    assert converted["properties"]["d"] == {"enum": ["x"]}
    assert notes == [
        "$: additionalProperties dropped (unknown keys are not refused by the declaration)",
        "$.b: oneOf became anyOf (exactly-one is lost)",
        "$.c: enum of non-string values dropped (Gemini's enum holds strings)",
        "$.c: exclusiveMinimum dropped (not in Gemini's Schema)",
    ]


def test_lint_reports_gemini_and_what_the_subset_loses() -> None:
    data = json.loads(json.dumps([spec.definition for spec in load_registry()]))
    found = [str(f) for f in lint_tools(data, HANDLERS) if "gemini" in f.message]
    assert (
        "strict: xerj_search: [gemini] Gemini has no strict mode; the schema is sent whole as parametersJsonSchema"
        in found
    )
    assert any(
        f.startswith("strict: xerj_search: [gemini-subset] $.query: an object with no declared")
        for f in found
    )
    assert not any("[gemini] $" in f for f in found)  # OpenAI's strict blockers are not Gemini's


def test_cli_tools_and_validate_read_gemini(tmp_path: Any) -> None:
    out = io.StringIO()
    assert main(["tools", "--target", "gemini"], stdout=out) == 0
    assert json.loads(out.getvalue())[0]["parametersJsonSchema"]["required"] == ["index", "query"]
    path = tmp_path / "contents.json"
    path.write_text(
        json.dumps(
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "why"}]},
                    {
                        "role": "model",
                        "parts": [
                            part("xerj_search", SEARCH),
                            part("xerj_search", {"index": "docs"}, "c2"),
                        ],
                    },
                ]
            }
        )
    )
    out = io.StringIO()
    assert main(["validate", str(path)], stdout=out) == 1
    assert "id c2 xerj_search: invalid" in out.getvalue() and "2 calls: 1 valid" in out.getvalue()


def test_pairing_problem_is_what_gemini_refuses() -> None:
    calls = {"role": "model", "parts": [part("a", {}), part("b", {})]}
    one = {"role": "user", "parts": [{"functionResponse": {"name": "a", "response": {}}}]}
    assert "number of function response parts" in str(pairing_problem([calls, one]))
    swapped = {
        "role": "user",
        "parts": [{"functionResponse": {"name": n, "response": {}}} for n in "ba"],
    }
    assert "is not 'a'" in str(pairing_problem([calls, swapped]))


@needs_genai
@pytest.mark.parametrize("ids", [False, True], ids=["no-ids", "ids"])
def test_generate_content_round_trip_with_google_genai(ids: bool, xerj: XerjStandIn) -> None:
    from google import genai
    from google.genai import types

    script = [
        Turn(
            tool_calls=[
                ("xerj_search", SEARCH),
                ("xerj_search", {"index": "docs"}),
                ("xerj_search", SEARCH),
            ]
        ),
        Turn(text="A bad index template broke checkout."),
    ]
    with ScriptedGemini(script, ids=ids) as gemini, Dispatcher(url=xerj.url) as dispatcher:
        client = genai.Client(
            api_key="fake-key", http_options=types.HttpOptions(base_url=gemini.base_url)
        )
        config = types.GenerateContentConfig(
            tools=dispatcher.registry.gemini_tools(),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        contents: list[Any] = [
            types.Content(role="user", parts=[types.Part(text="Why did checkout break?")])
        ]
        response = client.models.generate_content(
            model="gemini-scripted", contents=contents, config=config
        )
        assert len(response.function_calls or []) == 3
        contents.append(response.candidates[0].content)
        answers = dispatcher.dispatch_many(response.function_calls)
        contents += turn_messages(answers)
        final = client.models.generate_content(
            model="gemini-scripted", contents=contents, config=config
        )
    assert final.text == "A bad index template broke checkout."
    assert gemini.refused == []
    # the declarations went out whole, and google-genai's own types accept them
    sent = gemini.requests[0]["tools"]
    tool = types.Tool.model_validate(sent[0])
    assert [d.name for d in tool.function_declarations or []] == list(dispatcher.registry.names)
    search = (tool.function_declarations or [])[0]
    assert search.parameters_json_schema == dict(dispatcher.registry["xerj_search"].parameters)
    assert search.parameters is None  # not narrowed to the OpenAPI subset
    # one response per call, in order; the invalid one answered by the envelope; the pair sent once
    responses = [p["functionResponse"] for p in gemini.requests[1]["contents"][-1]["parts"]]
    assert [r.get("id") for r in responses] == (
        ["call_1", "call_2", "call_3"] if ids else [None] * 3
    )
    assert responses[0]["response"]["ok"] is True and responses[0]["response"]["hits"]
    assert responses[1]["response"]["error"]["code"] == "invalid_arguments"
    assert "identical to call" in responses[2]["response"]["notes"][-1]
    assert [r.path for r in xerj.requests] == ["/docs/_search"]


@needs_genai
def test_an_unanswered_call_is_refused_like_gemini_does() -> None:
    from google import genai
    from google.genai import errors, types

    with ScriptedGemini([Turn(text="never")]) as gemini:
        client = genai.Client(
            api_key="fake-key", http_options=types.HttpOptions(base_url=gemini.base_url)
        )
        contents = [
            {"role": "model", "parts": [part("xerj_search", SEARCH)]},
            {"role": "user", "parts": [{"text": "and?"}]},
        ]
        with pytest.raises(errors.ClientError, match="number of function response parts"):
            client.models.generate_content(model="gemini-scripted", contents=contents)


def test_a_turns_calls_without_ids_are_numbered_by_their_order() -> None:
    from xerj_tools._shapes import parse_turn

    calls = parse_turn([part("xerj_search", SEARCH), part("xerj_search", SEARCH, "fc-7"),
                        part("xerj_get_document", {}), {"type": "tool_use", "id": "t", "name": "x", "input": {}}])
    assert [c.call_id for c in calls] == ["gemini-order-1", "fc-7", "gemini-order-2", "t"]


async def _gemini_loop(gemini: ScriptedGemini, dispatcher: Any, **turn: Any) -> Any:
    """The docs' loop on google-genai's async client: each turn's calls to `dispatch_many` with
    `turn` (``policy=``, ``max_calls=``); returns the last response."""
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="fake-key", http_options=types.HttpOptions(base_url=gemini.base_url))
    config = types.GenerateContentConfig(
        tools=dispatcher.registry.gemini_tools(),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Why?")])]
    response = await client.aio.models.generate_content(model="gemini-scripted", contents=contents, config=config)
    while response.function_calls:
        contents.append(response.candidates[0].content)
        contents += turn_messages(await dispatcher.dispatch_many(response.function_calls, **turn))
        response = await client.aio.models.generate_content(
            model="gemini-scripted", contents=contents, config=config
        )
    return response


def _responses(gemini: ScriptedGemini, request: int = 1) -> list[dict[str, Any]]:
    return [p["functionResponse"]["response"] for p in gemini.requests[request]["contents"][-1]["parts"]]


@needs_genai
def test_two_tenants_each_with_its_policy_on_one_dispatcher_interleaved(xerj: XerjStandIn) -> None:
    """Two tenants' Gemini loops at once on one `AsyncDispatcher`, each turn dispatched with its
    tenant's ``policy=``: neither sees the other's index."""
    import asyncio

    from xerj_tools import AsyncDispatcher, Policy

    tenants = {"a": ("docs", "tickets"), "b": ("tickets", "docs")}

    def script(own: str, other: str) -> list[Turn]:
        return [Turn(tool_calls=[("xerj_search", {"index": own, "query": {"match_all": {}}, "size": 1}),
                                 ("xerj_search", {"index": other, "query": {"match_all": {}}}),
                                 ("xerj_get_document", {"index": other, "id": "1"}),
                                 ("xerj_list_indices", {})]),
                Turn(text="Done.")]

    # tenant a's own search is held at XERJ, so that b's whole turn runs while a's calls run
    xerj.fail_next(Fault(delay=0.3, match="/docs/_search"))
    with ScriptedGemini(script(*tenants["a"])) as gemini_a, ScriptedGemini(script(*tenants["b"])) as gemini_b:
        geminis = {"a": gemini_a, "b": gemini_b}

        async def go() -> None:
            async with AsyncDispatcher(url=xerj.url) as dispatcher:
                await asyncio.gather(*(
                    _gemini_loop(geminis[t], dispatcher, policy=Policy(allow_indices=(own,)), max_calls=16)
                    for t, (own, _) in tenants.items()))

        asyncio.run(go())
    for tenant, (own, _) in tenants.items():
        assert geminis[tenant].refused == []
        mine, theirs, get, listing = _responses(geminis[tenant])
        assert mine["ok"] is True and {h["_index"] for h in mine["hits"]} == {own}, tenant
        assert theirs["error"]["code"] == get["error"]["code"] == "policy_denied", tenant
        assert [i["name"] for i in listing["indices"]] == [own], tenant
    assert sorted(r.path for r in xerj.requests if r.path.endswith("_search")) == ["/docs/_search", "/tickets/_search"]


@needs_genai
def test_calls_past_max_calls_are_answered_not_run_with_or_without_ids(xerj: XerjStandIn) -> None:
    import asyncio

    from xerj_tools import AsyncDispatcher

    searches = [("xerj_search", {**SEARCH, "size": n}) for n in (1, 2, 3)]
    for ids in (False, True):
        xerj.clear()
        with ScriptedGemini([Turn(tool_calls=searches), Turn(text="Done.")], ids=ids) as gemini:
            async def go() -> Any:
                async with AsyncDispatcher(url=xerj.url) as dispatcher:
                    return await _gemini_loop(gemini, dispatcher, max_calls=2)

            assert asyncio.run(go()).text == "Done."
        assert gemini.refused == []  # one response per call, the refused one included
        codes = [r.get("error", {}).get("code") for r in _responses(gemini)]
        assert codes == [None, None, "too_many_calls"]
        assert len(xerj.requests) == 2
