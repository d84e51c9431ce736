"""The test-only ``conformance`` feature: the fixtures the MCP conformance suite calls by name.

Served beside the discovered features by ``python -m tests.conformance_server`` (never by
``serve``, never in a wheel or the image). Its tools go through the registry, so every call
passes the same admission, lane, middleware (output guard, budgets, call log) and schemes as a
real feature's; the multi-round-trip ones answer with the SDK's own ``InputRequiredResult`` and
read the client's answers from the SDK's ``Context`` (``input_responses``, ``request_state``),
whose state the server seals (APP_REQUEST_STATE_KEYS). Prompts, plain resources and the
completion handler are declared on the SDK's server with its own decorators (``Feature.mcp``).

Names, texts and data are the suite's (the scenarios compare them); the server under test is ours.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.shared.exceptions import MCPError
from mcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    InputRequest,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from pydantic import Field

from app.auth.schemes import NOAUTH
from app.feature import Deps, Feature
from app.mcp.registry import McpAdditions, ToolRegistry

# A 1x1 PNG and a minimal WAV: the suite checks the type and the mime type, not the picture.
IMAGE = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
    "z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _ask(
    message: str = "What is your name?", schema: dict[str, Any] = NAME_SCHEMA
) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _sample(text: str, max_tokens: int = 100) -> CreateMessageRequest:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequest(
        params=CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


def _embedded(uri: str, mime_type: str, text: str) -> EmbeddedResource:
    return EmbeddedResource(type="resource",
                            resource=TextResourceContents(uri=uri, mime_type=mime_type, text=text))


def _answered(responses: Any, key: str, field: str) -> Any:
    answer = (responses or {}).get(key)
    return (
        answer.content.get(field) if isinstance(answer, ElicitResult) and answer.content else None
    )


def _tools(registry: ToolRegistry, deps: Deps) -> None:
    def tool(name: str, description: str):
        return registry.tool(
            name=name,
            title=name,
            description=description,
            read_only=True,
            destructive=False,
            open_world=False,
            security=[NOAUTH],
        )

    @tool("test_simple_text", "Tests simple text content response")
    def test_simple_text() -> str:
        return "This is a simple text response for testing."

    @tool("test_image_content", "Tests image content response")
    def test_image_content() -> list[ImageContent]:
        return [ImageContent(type="image", data=IMAGE, mime_type="image/png")]

    @tool("test_audio_content", "Tests audio content response")
    def test_audio_content() -> list[AudioContent]:
        return [AudioContent(type="audio", data=AUDIO, mime_type="audio/wav")]

    @tool("test_embedded_resource", "Tests embedded resource content response")
    def test_embedded_resource() -> list[EmbeddedResource]:
        return [_embedded("test://embedded-resource", "text/plain",
                          "This is an embedded resource content.")]

    @tool("test_multiple_content_types", "Tests response with multiple content types")
    def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        return [
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=IMAGE, mime_type="image/png"),
            _embedded("test://mixed-content-resource", "application/json",
                      '{"test": "data", "value": 123}'),
        ]

    @tool("test_error_handling", "Tests error response handling")
    def test_error_handling() -> str:
        raise RuntimeError("This tool intentionally returns an error for testing")

    @tool("test_tool_with_progress", "Tests tool that reports progress notifications")
    async def test_tool_with_progress(ctx: Context) -> str:
        for step in (0, 50, 100):
            await ctx.report_progress(
                progress=step, total=100, message=f"Completed step {step} of 100"
            )
            if step < 100:
                await anyio.sleep(0.05)
        meta = ctx.request_context.meta if ctx.request_context else None
        return str(meta.get("progress_token") if meta else 0)

    @tool("test_tool_with_logging", "Tests tool that emits log messages during execution")
    async def test_tool_with_logging(ctx: Context) -> str:
        for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            # The suite's 2025-11-25 scenario: logging is deprecated as of 2026-07-28.
            await ctx.info(line)  # pyright: ignore[reportDeprecated]
        return "Tool with logging executed successfully"

    @tool("test_x_mcp_header", "Tests Mcp-Param-* server-side validation")
    def test_x_mcp_header(
        region: Annotated[
            str,
            Field(
                description="Mirrored into the Mcp-Param-Region header",
                json_schema_extra={"x-mcp-header": "Region"},
            ),
        ] = "<none>",
    ) -> str:
        return f"region={region}"

    @tool("test_missing_capability", "Tests a call that needs the client's sampling capability")
    async def test_missing_capability(ctx: Context) -> str:
        capabilities = ctx.client_capabilities
        if capabilities is None or capabilities.sampling is None:
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="This tool requires the client 'sampling' capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "Client declared sampling capability; proceeding."

    # Multi-round-trip requests (SEP-2322): the first round asks, the retry carries the answers.

    @tool("test_input_required_result_elicitation", "Tests input_required with one elicitation")
    async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
        if ctx.input_responses and "user_name" in ctx.input_responses:
            return f"Hello, {_answered(ctx.input_responses, 'user_name', 'name') or '?'}!"
        return InputRequiredResult(input_requests={"user_name": _ask()})

    @tool("test_input_required_result_sampling", "Tests input_required with one sampling request")
    async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("capital_question")
        if answer is not None:
            text = (
                answer.content.text
                if isinstance(answer, CreateMessageResult) and answer.content.type == "text"
                else "?"
            )
            return f"Model said: {text}"
        return InputRequiredResult(
            input_requests={"capital_question": _sample("What is the capital of France?")}
        )

    @tool(
        "test_input_required_result_list_roots", "Tests input_required with one roots/list request"
    )
    async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("client_roots")
        if answer is not None:
            count = len(answer.roots) if isinstance(answer, ListRootsResult) else 0
            return f"Client exposed {count} root(s)."
        return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})

    @tool("test_input_required_result_request_state", "Tests requestState round-tripping")
    async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
        if (
            ctx.input_responses
            and "confirm" in ctx.input_responses
            and ctx.request_state == "request-state-nonce"
        ):
            return "state-ok: confirmation received"
        return InputRequiredResult(
            input_requests={"confirm": _ask("Please confirm", OK_SCHEMA)},
            request_state="request-state-nonce",
        )

    @tool("test_input_required_result_multiple_inputs", "Tests several input requests at once")
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
        if (
            ctx.input_responses
            and {"user_name", "greeting", "client_roots"} <= ctx.input_responses.keys()
        ):
            return "All inputs received."
        return InputRequiredResult(
            input_requests={
                "user_name": _ask(),
                "greeting": _sample("Generate a greeting", 50),
                "client_roots": ListRootsRequest(),
            },
            request_state="multiple-inputs",
        )

    @tool("test_input_required_result_multi_round", "Tests three rounds with evolving requestState")
    async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
        state = json.loads(ctx.request_state) if ctx.request_state else {"round": 0}
        responses = ctx.input_responses or {}
        if state["round"] == 1 and "step1" in responses:
            color = {
                "type": "object",
                "properties": {"color": {"type": "string"}},
                "required": ["color"],
            }
            return InputRequiredResult(
                input_requests={"step2": _ask("Step 2: What is your favorite color?", color)},
                request_state=json.dumps(
                    {"round": 2, "name": _answered(responses, "step1", "name")}
                ),
            )
        if state["round"] == 2 and "step2" in responses:
            return f"{state.get('name')} likes {_answered(responses, 'step2', 'color')}."
        # The first round, or an answer missing or out of order: ask again from the start.
        return InputRequiredResult(
            input_requests={"step1": _ask("Step 1: What is your name?")},
            request_state=json.dumps({"round": 1}),
        )

    @tool(
        "test_input_required_result_tampered_state", "Tests that a tampered requestState is refused"
    )
    async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
        if ctx.request_state is None:
            return InputRequiredResult(
                input_requests={"confirm": _ask("Please confirm", OK_SCHEMA)},
                request_state="round-1",
            )
        return f"state-ok: {ctx.request_state}"

    @tool(
        "test_input_required_result_capabilities", "Tests that input requests follow capabilities"
    )
    async def test_input_required_result_capabilities(ctx: Context) -> InputRequiredResult:
        caps = ctx.client_capabilities
        requests: dict[str, InputRequest] = {}
        if caps is None or caps.sampling is not None:
            requests["sample"] = _sample("Say hello", 50)
        if caps is None or caps.elicitation is not None:
            requests["ask"] = _ask()
        return InputRequiredResult(input_requests=requests, request_state="capability-gated")


def _mcp(server: McpAdditions, deps: Deps) -> None:
    @server.resource("test://static-text")
    def static_text() -> str:
        """A static text resource for testing"""
        return "This is the content of the static text resource."

    @server.resource("test://static-binary")
    def static_binary() -> bytes:
        """A static binary resource (image) for testing"""
        return base64.b64decode(IMAGE)

    @server.resource("test://template/{id}/data")
    def template(id: str) -> str:
        """A resource template with parameter substitution"""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource("test://watched-resource")
    def watched() -> str:
        """A resource that can be subscribed to for updates"""
        return "Watched resource content"

    @server.prompt()
    def test_simple_prompt() -> list[UserMessage]:
        """A simple prompt without arguments"""
        return [
            UserMessage(
                role="user",
                content=TextContent(type="text", text="This is a simple prompt for testing."),
            )
        ]

    @server.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        """A prompt with required arguments"""
        return [
            UserMessage(
                role="user",
                content=TextContent(
                    type="text", text=f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                ),
            )
        ]

    @server.prompt()
    # The argument's name is the suite's.
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:  # noqa: N803
        """A prompt that includes an embedded resource"""
        return [
            UserMessage(
                role="user",
                content=_embedded(resourceUri, "text/plain",
                                  "Embedded resource content for testing."),
            ),
            UserMessage(
                role="user",
                content=TextContent(
                    type="text", text="Please process the embedded resource above."
                ),
            ),
        ]

    @server.prompt()
    def test_prompt_with_image() -> list[UserMessage]:
        """A prompt that includes image content"""
        return [
            UserMessage(
                role="user", content=ImageContent(type="image", data=IMAGE, mime_type="image/png")
            ),
            UserMessage(
                role="user",
                content=TextContent(type="text", text="Please analyze the image above."),
            ),
        ]

    @server.prompt()
    async def test_input_required_result_prompt(
        ctx: Context,
    ) -> list[UserMessage] | InputRequiredResult:
        """Tests input_required from prompts/get (a request other than a tool call)"""
        context = _answered(ctx.input_responses, "user_context", "context")
        if ctx.input_responses and "user_context" in ctx.input_responses:
            return [
                UserMessage(
                    role="user",
                    content=TextContent(
                        type="text", text=f"Use the following context: {context or '?'}"
                    ),
                )
            ]
        schema = {
            "type": "object",
            "properties": {"context": {"type": "string"}},
            "required": ["context"],
        }
        return InputRequiredResult(
            input_requests={"user_context": _ask("What context should the prompt use?", schema)}
        )

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        return Completion(values=[], total=0, has_more=False)


CONFORMANCE = Feature(
    name="conformance",
    instructions="Test-only: the conformance suite's fixtures.",
    tools=_tools,
    mcp=_mcp,
)
