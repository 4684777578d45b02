#!/usr/bin/env python3
"""Interop check: drives a running a2ad node with the official A2A Python SDK (a2a-sdk 1.x).

Usage: python client_check.py [--transport jsonrpc|rest|grpc] <base_url>
       e.g. python client_check.py --transport rest http://127.0.0.1:8080

The node must run tests/interop/a2ad.yml (agents echo, slow, chat). It may be shared by
several runs (one per transport): check (e) walks the whole ListTasks listing and checks
that every task this run created is in it, and that a contextId filter finds exactly it.
Prints "ok <check>" or "FAIL <check>: <why>" per check and a summary line
"interop[<transport>]: N passed, M failed"; exits 1 on any failure, 2 on bad usage.

SDK pieces used: A2ACardResolver (card discovery over HTTP), ClientFactory + ClientConfig
(supported_protocol_bindings = [the one binding asked for]) -> BaseClient over
JsonRpcTransport, RestTransport or GrpcTransport (every call), the proto request/response
types from a2a.types. Besides the SDK's own (lenient) parsing, every JSON-RPC result, REST
body and SSE event is re-parsed strictly (unknown fields rejected) with protobuf's
json_format, so a field the SDK would silently drop fails the check that received it. gRPC
messages arrive as typed protobuf, so there is nothing to re-parse there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import uuid

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any

import grpc
import httpx

from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.transports import JsonRpcTransport, RestTransport
from a2a.client.transports.grpc import GrpcTransport
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.constants import (
    AGENT_CARD_WELL_KNOWN_PATH,
    PROTOCOL_VERSION_CURRENT,
    VERSION_HEADER,
    TransportProtocol,
)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError


CHECK_TIMEOUT = 30.0  # seconds, per check (the whole check, streams included)
HTTP_TIMEOUT = 30.0
MAX_PAGES = 500  # ListTasks pages (of 2) walked by check (e)
EXPECTED_NAME = 'a2ad-interop'  # card.name in tests/interop/a2ad.yml
EXPECTED_SKILLS = ['echo', 'slow', 'chat']
REST_PATH = '/a2a'  # the HTTP+JSON interface is <base>/a2a

# --transport value -> (card protocolBinding, the SDK transport class the factory must pick)
TRANSPORTS: dict[str, tuple[str, type]] = {
    'jsonrpc': (TransportProtocol.JSONRPC, JsonRpcTransport),
    'rest': (TransportProtocol.HTTP_JSON, RestTransport),
    'grpc': (TransportProtocol.GRPC, GrpcTransport),
}

COMPLETED = TaskState.TASK_STATE_COMPLETED
CANCELED = TaskState.TASK_STATE_CANCELED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
TERMINAL_OR_INTERRUPTED = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}


class CheckFailed(Exception):
    """A mismatch between what the node did and what the check expects."""


def expect(cond: Any, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)


def state_name(state: int) -> str:
    return TaskState.Name(state)


# --------------------------------------------------------------------------------------
# Strict wire validation. The SDK parses leniently (unknown fields ignored); this re-parses
# each raw result with ignore_unknown_fields=False and records problems per check.

STRICT_PROBLEMS: list[str] = []

RESULT_TYPES: dict[str, type[ProtoMessage]] = {
    'SendMessage': SendMessageResponse,
    'GetTask': Task,
    'CancelTask': Task,
    'ListTasks': ListTasksResponse,
    'SendStreamingMessage': StreamResponse,
    'SubscribeToTask': StreamResponse,
}


# The 0.3 fields a card also carries so that 0.3 clients discover the node (spec-1.0.md
# §9: the well-known card merges the 1.0 card with them); 1.0 SDKs ignore them.
V03_CARD_FIELDS = ('url', 'preferredTransport', 'protocolVersion', 'additionalInterfaces',
                   'supportsAuthenticatedExtendedCard', 'security')


def without_v03_card_fields(card: Any) -> Any:
    if not isinstance(card, dict):
        return card
    return {k: v for k, v in card.items() if k not in V03_CARD_FIELDS}


def strict_parse(data: Any, msg_type: type[ProtoMessage], where: str) -> None:
    try:
        json_format.ParseDict(data, msg_type(), ignore_unknown_fields=False)
    except Exception as e:  # noqa: BLE001 - any parse problem is reported
        STRICT_PROBLEMS.append(f'{where}: strict {msg_type.__name__} parse failed: {e}')


def validate_envelope(body: Any, method: str, req_id: Any, where: str) -> None:
    if not isinstance(body, dict):
        STRICT_PROBLEMS.append(f'{where}: response is not a JSON object')
        return
    if body.get('jsonrpc') != '2.0':
        STRICT_PROBLEMS.append(f'{where}: jsonrpc is {body.get("jsonrpc")!r}, not "2.0"')
    if body.get('id') != req_id:
        STRICT_PROBLEMS.append(f'{where}: response id {body.get("id")!r} != request id {req_id!r}')
    if 'result' in body and method in RESULT_TYPES:
        strict_parse(body['result'], RESULT_TYPES[method], where)


def parse_sse(raw: bytes) -> list[tuple[str, str]]:
    """(event name, data) for each SSE event in a complete stream body."""
    events: list[tuple[str, str]] = []
    name, data = 'message', []
    for line in raw.decode('utf-8').splitlines():
        if not line:
            if data:
                events.append((name, '\n'.join(data)))
            name, data = 'message', []
            continue
        if line.startswith(':'):
            continue
        key, _, val = line.partition(':')
        val = val[1:] if val.startswith(' ') else val
        if key == 'event':
            name = val
        elif key == 'data':
            data.append(val)
    if data:
        events.append((name, '\n'.join(data)))
    return events


class TeeStream(httpx.AsyncByteStream):
    """Passes an SSE body through unchanged and validates the whole of it on close."""

    def __init__(self, inner: httpx.AsyncByteStream, on_done: Callable[[bytes], None]):
        self._inner = inner
        self._on_done = on_done
        self._buf = bytearray()
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._buf.extend(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
        if not self._done:
            self._done = True
            self._on_done(bytes(self._buf))


REST_TASK_ROUTE = re.compile(r'^/tasks/([^/:]+)(:cancel|:subscribe)?$')


def rest_route(method: str, rel: str) -> tuple[str, type[ProtoMessage]] | None:
    """(A2A method, response body / SSE event type) of an HTTP+JSON request, by route."""
    if method == 'POST' and rel == '/message:send':
        return 'SendMessage', SendMessageResponse
    if method == 'POST' and rel == '/message:stream':
        return 'SendStreamingMessage', StreamResponse
    if method == 'GET' and rel == '/tasks':
        return 'ListTasks', ListTasksResponse
    m = REST_TASK_ROUTE.match(rel)
    if m and m.group(2) is None and method == 'GET':
        return 'GetTask', Task
    if m and m.group(2) == ':cancel' and method == 'POST':
        return 'CancelTask', Task
    if m and m.group(2) == ':subscribe':
        return 'SubscribeToTask', StreamResponse
    return None


def make_response_hook(ctx: Ctx) -> Callable[[httpx.Response], Awaitable[None]]:
    """httpx response hook: strict validation of the card and every answer of the binding
    under test (JSON-RPC envelopes and results, or bare HTTP+JSON bodies and SSE events)."""

    async def on_response(response: httpx.Response) -> None:
        request = response.request
        if request.method == 'GET' and request.url.path == AGENT_CARD_WELL_KNOWN_PATH:
            await response.aread()
            if response.status_code == 200:
                strict_parse(without_v03_card_fields(response.json()), AgentCard, 'agent card')
            return
        if ctx.transport == 'jsonrpc':
            await check_jsonrpc_response(response)
        elif ctx.transport == 'rest':
            await check_rest_response(ctx, response)

    return on_response


async def check_jsonrpc_response(response: httpx.Response) -> None:
    request = response.request
    ctype = response.headers.get('content-type', '')
    if request.method != 'POST':
        return
    try:
        rpc = json.loads(request.content)
    except Exception:  # noqa: BLE001
        return
    method, req_id = rpc.get('method', '?'), rpc.get('id')
    if 'text/event-stream' in ctype:
        check = lambda body, where: validate_envelope(body, method, req_id, where)  # noqa: E731
        response.stream = TeeStream(response.stream, sse_checker(method, check))  # type: ignore[arg-type]
        return
    await response.aread()
    try:
        body = response.json()
    except Exception:  # noqa: BLE001
        STRICT_PROBLEMS.append(f'{method}: HTTP {response.status_code} body is not JSON')
        return
    if isinstance(body, dict) and 'error' in body:
        return
    validate_envelope(body, method, req_id, method)


def sse_checker(where: str, check: Callable[[Any, str], None]) -> Callable[[bytes], None]:
    """A callback for a tee'd SSE body: each event's data must be JSON and, unless it is
    an error (which the SDK surfaces itself), pass `check(body, where_of_event)`."""
    def done(raw: bytes) -> None:
        for i, (name, data) in enumerate(parse_sse(raw)):
            ev_where = f'{where} SSE event {i}'
            try:
                body = json.loads(data)
            except json.JSONDecodeError as e:
                STRICT_PROBLEMS.append(f'{ev_where}: data is not JSON: {e}')
                continue
            if name == 'error' or (isinstance(body, dict) and 'error' in body):
                continue  # errors are surfaced by the SDK itself
            check(body, ev_where)
    return done


async def check_rest_response(ctx: Ctx, response: httpx.Response) -> None:
    """HTTP+JSON: the 2xx body (or each SSE event's data) is the bare proto message."""
    request = response.request
    path = request.url.path
    if not path.startswith(ctx.rest_prefix + '/'):
        return
    route = rest_route(request.method, path[len(ctx.rest_prefix):])
    if route is None:
        return
    method, msg_type = route
    where = f'{method} ({request.method} {path})'
    if 'text/event-stream' in response.headers.get('content-type', ''):
        check = lambda body, ev_where: strict_parse(body, msg_type, ev_where)  # noqa: E731
        response.stream = TeeStream(response.stream, sse_checker(where, check))  # type: ignore[arg-type]
        return
    await response.aread()
    if response.status_code >= 400:
        return  # errors (google.rpc.Status JSON) are surfaced by the SDK itself
    try:
        body = response.json()
    except Exception:  # noqa: BLE001
        STRICT_PROBLEMS.append(f'{where}: HTTP {response.status_code} body is not JSON')
        return
    strict_parse(body, msg_type, where)


# --------------------------------------------------------------------------------------
# Helpers over the SDK client.


class Ctx:
    transport: str  # jsonrpc | rest | grpc
    base_url: str
    rest_prefix: str  # URL path of the HTTP+JSON interface, e.g. /a2a
    http: httpx.AsyncClient | None = None
    card: AgentCard | None = None
    client: Any = None  # BaseClient, ClientConfig(streaming=False): SendMessage
    stream_client: Any = None  # BaseClient, ClientConfig(streaming=True)
    raw_transport: Any = None  # the SDK transport of the same binding, used directly
    created: list[str]  # task ids this run created, in order
    contexts: dict[str, str]  # task id -> its contextId
    channels: list[grpc.aio.Channel]

    def __init__(self, transport: str, base_url: str):
        self.transport = transport
        self.base_url = base_url
        self.rest_prefix = httpx.URL(base_url).path.rstrip('/') + REST_PATH
        self.created = []
        self.contexts = {}
        self.channels = []

    def grpc_channel(self, target: str) -> grpc.aio.Channel:
        """ClientConfig.grpc_channel_factory: an insecure channel to the card's host:port."""
        channel = grpc.aio.insecure_channel(target)
        self.channels.append(channel)
        return channel

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()

    def note(self, task: Task) -> None:
        if task.id and task.id not in self.created:
            self.created.append(task.id)
            self.contexts[task.id] = task.context_id


def user_message(text: str, skill: str | None = None, *, task_id: str = '', context_id: str = '') -> Message:
    msg = Message(
        message_id=f'interop-{uuid.uuid4()}',
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )
    if skill is not None:
        msg.metadata.update({'skill': skill})
    return msg


async def send(ctx: Ctx, msg: Message, *, return_immediately: bool = False) -> Task:
    """SendMessage through the SDK's non-streaming client; the reply must be a Task."""
    req = SendMessageRequest(
        message=msg,
        configuration=SendMessageConfiguration(return_immediately=return_immediately),
    )
    events = [ev async for ev in ctx.client.send_message(req)]
    expect(len(events) == 1, f'SendMessage gave {len(events)} responses, expected 1')
    ev = events[0]
    expect(ev.HasField('task'), f'SendMessage result is not a Task: {json_format.MessageToJson(ev)}')
    ctx.note(ev.task)
    return ev.task


def stream_source(ctx: Ctx, kind: str, request: Any) -> AsyncIterator[StreamResponse]:
    """The SDK stream for SendStreamingMessage / SubscribeToTask.

    BaseClient only streams when the card declares capabilities.streaming (otherwise it
    silently falls back to SendMessage, or refuses to subscribe); in that case the SDK's
    transport of the binding under test is used directly, so the node's real answer is
    what the check sees.
    """
    streaming = ctx.card is not None and ctx.card.capabilities.streaming
    if kind == 'send':
        if streaming:
            return ctx.stream_client.send_message(request)
        return ctx.raw_transport.send_message_streaming(request)
    if streaming:
        return ctx.stream_client.subscribe(request)
    return ctx.raw_transport.subscribe(request)


def describe(ev: StreamResponse) -> str:
    kind = ev.WhichOneof('payload') or '?'
    if kind == 'task':
        return f'task({state_name(ev.task.status.state)})'
    if kind == 'status_update':
        return f'statusUpdate({state_name(ev.status_update.status.state)})'
    if kind == 'artifact_update':
        a = ev.artifact_update
        return f'artifactUpdate(append={a.append})'
    return kind


def artifact_text_from_updates(events: list[StreamResponse]) -> str:
    """Rebuilds the artifacts from artifact updates (append = add parts) and joins the text."""
    artifacts: dict[str, list[str]] = {}
    for ev in events:
        if not ev.HasField('artifact_update'):
            continue
        upd = ev.artifact_update
        texts = [p.text for p in upd.artifact.parts if p.HasField('text')]
        if upd.append:
            expect(upd.artifact.artifact_id in artifacts,
                   f'artifact update appends to unknown artifact {upd.artifact.artifact_id!r}')
            artifacts[upd.artifact.artifact_id].extend(texts)
        else:
            artifacts[upd.artifact.artifact_id] = texts
    return ''.join(''.join(t) for t in artifacts.values())


def task_artifact_text(task: Task) -> str:
    return ''.join(p.text for a in task.artifacts for p in a.parts if p.HasField('text'))


def check_task_stream(events: list[StreamResponse], task_id: str | None, what: str) -> Task:
    """First event a Task, then status/artifact updates of that task, last a COMPLETED status update."""
    expect(events, f'{what}: the stream had no events')
    order = ', '.join(describe(e) for e in events)
    expect(events[0].HasField('task'), f'{what}: first event is {describe(events[0])}, expected a Task ({order})')
    first = events[0].task
    if task_id is not None:
        expect(first.id == task_id, f'{what}: first event is task {first.id!r}, expected {task_id!r}')
    for i, ev in enumerate(events[1:], start=1):
        kind = ev.WhichOneof('payload')
        expect(kind in ('status_update', 'artifact_update'),
               f'{what}: event {i} is {describe(ev)}, expected a status or artifact update ({order})')
        upd = getattr(ev, kind)
        expect(upd.task_id == first.id and upd.context_id == first.context_id,
               f'{what}: event {i} names task {upd.task_id!r} / context {upd.context_id!r}, '
               f'expected {first.id!r} / {first.context_id!r}')
        if kind == 'status_update' and i < len(events) - 1:
            expect(upd.status.state not in TERMINAL_OR_INTERRUPTED,
                   f'{what}: event {i} is {describe(ev)} but the stream went on ({order})')
    last = events[-1]
    expect(len(events) > 1 and last.HasField('status_update')
           and last.status_update.status.state == COMPLETED,
           f'{what}: last event is {describe(last)}, expected statusUpdate(TASK_STATE_COMPLETED) ({order})')
    return first


async def collect(stream: AsyncIterator[StreamResponse], limit: int = 1000) -> list[StreamResponse]:
    events: list[StreamResponse] = []
    async for ev in stream:
        events.append(ev)
        expect(len(events) <= limit, f'stream exceeded {limit} events')
    return events


# --------------------------------------------------------------------------------------
# The checks.


async def check_card(ctx: Ctx) -> None:
    resolver = A2ACardResolver(ctx.http, ctx.base_url)
    card = await resolver.get_agent_card()
    ctx.card = card
    expect(card.name == EXPECTED_NAME, f'card name is {card.name!r}, expected {EXPECTED_NAME!r}')
    binding, transport_cls = TRANSPORTS[ctx.transport]
    ifaces = [i for i in card.supported_interfaces if i.protocol_binding == binding]
    listed = [(i.protocol_binding, i.url) for i in card.supported_interfaces]
    expect(ifaces, f'card has no {binding} interface: {listed}')
    iface = ifaces[0]
    expect(iface.protocol_version == '1.0',
           f'{binding} interface protocolVersion is {iface.protocol_version!r}, expected "1.0"')
    if ctx.transport == 'jsonrpc':
        expect(iface.url.rstrip('/') == ctx.base_url.rstrip('/'),
               f'JSONRPC interface url is {iface.url!r}, expected {ctx.base_url!r}')
    elif ctx.transport == 'rest':
        want = ctx.base_url.rstrip('/') + REST_PATH
        expect(iface.url.rstrip('/') == want, f'HTTP+JSON interface url is {iface.url!r}, expected {want!r}')
        ctx.rest_prefix = httpx.URL(iface.url).path.rstrip('/')
    else:
        expect(re.fullmatch(r'[^/:]+:[0-9]{1,5}', iface.url),
               f'GRPC interface url is {iface.url!r}, expected host:port')
    skills = [s.id for s in card.skills]
    expect(skills == EXPECTED_SKILLS, f'card skills are {skills}, expected {EXPECTED_SKILLS}')

    # Clients for the other checks, made by the SDK's factory from the resolved card, told
    # to support only the binding under test (so the factory's interface selection is
    # exercised too). The httpx client is shared; gRPC gets channels from ctx.grpc_channel.
    def config(streaming: bool) -> ClientConfig:
        return ClientConfig(
            httpx_client=ctx.http,
            streaming=streaming,
            supported_protocol_bindings=[binding],
            grpc_channel_factory=ctx.grpc_channel,
        )

    ctx.client = ClientFactory(config(False)).create(card)
    ctx.stream_client = ClientFactory(config(True)).create(card)
    for c in (ctx.client, ctx.stream_client):
        used = getattr(c, '_transport', None)
        expect(type(used) is transport_cls,
               f'the SDK factory made a {type(used).__name__} client, expected {transport_cls.__name__}')
    if ctx.transport == 'jsonrpc':
        ctx.raw_transport = JsonRpcTransport(ctx.http, card, iface.url, is_shared_httpx=True)
    elif ctx.transport == 'rest':
        ctx.raw_transport = RestTransport(ctx.http, card, iface.url, is_shared_httpx=True)
    else:
        ctx.raw_transport = GrpcTransport(ctx.grpc_channel(iface.url), card)

    expect(card.capabilities.HasField('streaming') and card.capabilities.streaming,
           'card capabilities.streaming is not true')


async def check_blocking_send(ctx: Ctx) -> None:
    task = await send(ctx, user_message('hello'))
    expect(task.id and task.context_id, 'task id or contextId is empty')
    expect(task.status.state == COMPLETED, f'task state is {state_name(task.status.state)}, expected COMPLETED')
    text = task_artifact_text(task)
    expect(text == 'hello', f'artifact text is {text!r}, expected "hello"')


async def check_streaming_send(ctx: Ctx) -> None:
    req = SendMessageRequest(message=user_message('abc', 'slow'))
    events = await collect(stream_source(ctx, 'send', req))
    first = check_task_stream(events, None, 'SendStreamingMessage')
    ctx.note(first)
    expect(any(e.HasField('artifact_update') for e in events), 'no artifact update in the stream')
    text = artifact_text_from_updates(events)
    expect(text == 'abc', f'artifact text from the updates is {text!r}, expected "abc"')
    expect(ctx.card.capabilities.streaming, 'the stream worked but the card does not declare streaming')
    task = await ctx.client.get_task(GetTaskRequest(id=first.id))
    expect(task.status.state == COMPLETED, f'GetTask after the stream: {state_name(task.status.state)}')
    expect(task_artifact_text(task) == 'abc', f'GetTask artifact text is {task_artifact_text(task)!r}')


async def check_history_length(ctx: Ctx) -> None:
    task = await send(ctx, user_message('history please'))
    expect(task.status.state == COMPLETED, f'task state is {state_name(task.status.state)}')
    one = await ctx.client.get_task(GetTaskRequest(id=task.id, history_length=1))
    expect(len(one.history) == 1, f'GetTask historyLength=1 gave {len(one.history)} messages')
    expect(one.history[0].role == Role.ROLE_AGENT,
           f'the last history message has role {Role.Name(one.history[0].role)}, expected ROLE_AGENT')
    full = await ctx.client.get_task(GetTaskRequest(id=task.id))
    roles = [Role.Name(m.role) for m in full.history]
    expect(roles == ['ROLE_USER', 'ROLE_AGENT'], f'GetTask without historyLength gave history roles {roles}')
    expect(full.history[0].parts[0].text == 'history please', 'history[0] is not the user message')


async def check_list_tasks(ctx: Ctx) -> None:
    """Walks the whole listing (other runs against the same node may have added tasks),
    then checks that it holds every task this run created, and filters by each one's
    contextId (each of those contexts holds exactly that one task)."""
    expect(ctx.created, 'the earlier checks created no task')
    ids: list[str] = []
    stamps: list[str] = []
    totals: set[int] = set()
    token = ''
    for page in range(1, MAX_PAGES + 1):
        req = ListTasksRequest(page_size=2, page_token=token)
        resp = await ctx.client.list_tasks(req)
        expect(len(resp.tasks) <= 2, f'page {page} has {len(resp.tasks)} tasks with pageSize 2')
        totals.add(resp.total_size)
        ids.extend(t.id for t in resp.tasks)
        stamps.extend(t.status.timestamp.ToJsonString() for t in resp.tasks)
        for t in resp.tasks:
            expect(not t.artifacts, f'task {t.id} has artifacts without includeArtifacts')
        token = resp.next_page_token
        if not token:
            break
    else:
        raise CheckFailed(f'still a nextPageToken after {MAX_PAGES} pages')
    expect(len(totals) == 1, f'totalSize changed between pages: {sorted(totals)}')
    total = totals.pop()
    expect(len(ids) == len(set(ids)), f'duplicate task ids across pages: {ids}')
    expect(len(ids) == total, f'walked {len(ids)} tasks, totalSize is {total}')
    missing = [t for t in ctx.created if t not in set(ids)]
    expect(not missing,
           f'{len(ctx.created) - len(missing)} of the {len(ctx.created)} tasks this run created are listed; '
           f'missing {missing} from {len(ids)} listed tasks')
    # Compared as instants, not strings: a timestamp on a whole second is written without
    # its fraction (`...:46Z` sorts after `...:46.012Z` as text, though it is earlier).
    instants = [datetime.fromisoformat(s.replace('Z', '+00:00')) for s in stamps]
    expect(instants == sorted(instants, reverse=True), f'tasks are not newest-first by status timestamp: {stamps}')
    for task_id, context_id in ctx.contexts.items():
        resp = await ctx.client.list_tasks(ListTasksRequest(context_id=context_id))
        got = [t.id for t in resp.tasks]
        expect(got == [task_id] and resp.total_size == 1 and resp.next_page_token == '',
               f'ListTasks contextId={context_id!r} gave tasks {got} (totalSize {resp.total_size}, '
               f'nextPageToken {resp.next_page_token!r}), expected only {task_id!r}')


async def check_cancel(ctx: Ctx) -> None:
    text = ''.join(chr(ord('a') + i % 26) for i in range(100))
    task = await send(ctx, user_message(text, 'slow'), return_immediately=True)
    expect(task.status.state not in TERMINAL_OR_INTERRUPTED,
           f'non-blocking send returned state {state_name(task.status.state)}, expected SUBMITTED or WORKING')
    await asyncio.sleep(0.3)
    canceled = await ctx.client.cancel_task(CancelTaskRequest(id=task.id))
    expect(canceled.id == task.id, f'CancelTask returned task {canceled.id!r}, expected {task.id!r}')
    expect(canceled.status.state == CANCELED,
           f'CancelTask returned state {state_name(canceled.status.state)}, expected CANCELED')
    again = await ctx.client.get_task(GetTaskRequest(id=task.id))
    expect(again.status.state == CANCELED, f'GetTask after cancel: {state_name(again.status.state)}')


async def check_subscribe(ctx: Ctx) -> None:
    # 60 characters at 100 ms each: a 6 s turn, so that the subscription surely starts
    # while it runs, even on a loaded machine.
    text = 'subscribe-' + '0123456789' * 5
    task = await send(ctx, user_message(text, 'slow'), return_immediately=True)
    expect(task.status.state not in TERMINAL_OR_INTERRUPTED,
           f'non-blocking send returned state {state_name(task.status.state)}')
    events = await collect(stream_source(ctx, 'subscribe', SubscribeToTaskRequest(id=task.id)))
    first = check_task_stream(events, task.id, 'SubscribeToTask')
    expect(first.status.state not in TERMINAL_OR_INTERRUPTED,
           f'the snapshot is already {state_name(first.status.state)}')
    expect(ctx.card.capabilities.streaming, 'the stream worked but the card does not declare streaming')
    done = await ctx.client.get_task(GetTaskRequest(id=task.id))
    expect(done.status.state == COMPLETED, f'GetTask after the stream: {state_name(done.status.state)}')
    expect(task_artifact_text(done) == text, f'GetTask artifact text is {task_artifact_text(done)!r}')


async def check_follow_up(ctx: Ctx) -> None:
    t1 = await send(ctx, user_message('first turn', 'chat'))
    expect(t1.status.state == INPUT_REQUIRED, f'first turn: state {state_name(t1.status.state)}, expected INPUT_REQUIRED')
    t2 = await send(ctx, user_message('second turn', task_id=t1.id, context_id=t1.context_id))
    expect(t2.id == t1.id, f'follow-up made task {t2.id!r}, expected the same task {t1.id!r}')
    expect(t2.context_id == t1.context_id, f'follow-up contextId {t2.context_id!r} != {t1.context_id!r}')
    expect(t2.status.state == INPUT_REQUIRED, f'follow-up: state {state_name(t2.status.state)}, expected INPUT_REQUIRED')
    got = await ctx.client.get_task(GetTaskRequest(id=t1.id))
    texts = [(Role.Name(m.role), m.parts[0].text if m.parts else '') for m in got.history]
    expect(len(got.history) == 4, f'history has {len(got.history)} messages, expected 4: {texts}')
    expect([r for r, _ in texts] == ['ROLE_USER', 'ROLE_AGENT'] * 2, f'history order: {texts}')


CHECKS: list[tuple[str, Callable[[Ctx], Awaitable[None]]]] = [
    ('card', check_card),
    ('blocking-send', check_blocking_send),
    ('streaming-send', check_streaming_send),
    ('history-length', check_history_length),
    ('list-tasks', check_list_tasks),
    ('cancel', check_cancel),
    ('subscribe', check_subscribe),
    ('follow-up', check_follow_up),
]


def one_line(text: str) -> str:
    return ' '.join(text.split())


def explain(e: BaseException) -> str:
    if isinstance(e, A2AError):
        code = JSON_RPC_ERROR_CODE_MAP.get(type(e))
        data = f' data={e.data}' if e.data else ''
        return f'{type(e).__name__} ({code}): {e.message}{data}'
    if isinstance(e, CheckFailed):
        return str(e)
    return f'{type(e).__name__}: {e}'


async def main(transport: str, base_url: str) -> int:
    passed = failed = 0
    headers = {VERSION_HEADER: PROTOCOL_VERSION_CURRENT}  # A2A-Version: 1.0 on every HTTP request
    ctx = Ctx(transport, base_url)
    async with httpx.AsyncClient(
        headers=headers, timeout=HTTP_TIMEOUT, event_hooks={'response': [make_response_hook(ctx)]}
    ) as http:
        ctx.http = http
        try:
            for name, fn in CHECKS:
                STRICT_PROBLEMS.clear()
                if name != 'card' and ctx.client is None:
                    print(f'FAIL {name}: skipped, no client (the card check failed before creating one)')
                    failed += 1
                    continue
                try:
                    await asyncio.wait_for(fn(ctx), CHECK_TIMEOUT)
                    expect(not STRICT_PROBLEMS, '; '.join(STRICT_PROBLEMS))
                except asyncio.TimeoutError:
                    print(f'FAIL {name}: timed out after {CHECK_TIMEOUT:.0f} s')
                    failed += 1
                except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
                    also = '; '.join(STRICT_PROBLEMS)
                    extra = f' (also: {also})' if STRICT_PROBLEMS and not isinstance(e, CheckFailed) else ''
                    print(f'FAIL {name}: {one_line(explain(e) + extra)}')
                    failed += 1
                else:
                    print(f'ok {name}')
                    passed += 1
                sys.stdout.flush()
        finally:
            await ctx.close()
    print(f'interop[{transport}]: {passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='a2a-sdk interop check against a running a2ad node.')
    parser.add_argument('--transport', choices=sorted(TRANSPORTS), default='jsonrpc',
                        help='the binding the SDK client uses (default: jsonrpc)')
    parser.add_argument('base_url', help='the node base URL, e.g. http://127.0.0.1:8080')
    args = parser.parse_args()
    if not args.base_url.startswith(('http://', 'https://')):
        parser.error(f'base_url must be an http(s) URL, got {args.base_url!r}')
    sys.exit(asyncio.run(main(args.transport, args.base_url.rstrip('/'))))
