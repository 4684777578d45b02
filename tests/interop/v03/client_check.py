#!/usr/bin/env python3
"""Interop check: drives a running a2ad node with the official A2A Python SDK 0.3 (a2a-sdk 0.3.x).

Usage: python client_check.py [--transport jsonrpc|rest] [--token TOKEN] <base_url>

The node must run tests/interop/v03/a2ad.yml (agents echo and slow, push on). Prints
"ok <check>" or "FAIL <check>: <why>" per check and a summary line
"interop-v03[<transport>]: N passed, M failed" ("interop-v03[<transport>+bearer]" with
--token); exits 1 on any failure, 2 on bad usage.

With --token the node must also require that bearer token: the card must announce an HTTP
bearer scheme that the 0.3 model reads as one (HTTPAuthSecurityScheme, not its default
mutualTLS), the SDK's AuthInterceptor must pick the credential from the card, and a
client without it must be refused (401). Over JSON-RPC the interceptor adds the header to
every call; a2a-sdk 0.3.26's RestTransport does not run interceptors (a TODO in the SDK),
so over REST the headers the interceptor picked from the card are set on the httpx client.

SDK pieces used: A2ACardResolver (the well-known card, parsed by the 0.3 pydantic model),
ClientFactory + ClientConfig(supported_transports=[the one asked for]) -> BaseClient over
JsonRpcTransport or RestTransport (send, stream, get, cancel, resubscribe, push config
set/get, error paths). The 0.3 client has no list/delete push-config calls: those are sent
with httpx and the answers parsed with the SDK's own types (pydantic for JSON-RPC, the 0.3
protobuf messages for REST).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid

import httpx

from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.client.transports import JsonRpcTransport, RestTransport
from a2a.grpc import a2a_pb2
from a2a.types import (
    HTTPAuthSecurityScheme,
    DeleteTaskPushNotificationConfigRequest,
    DeleteTaskPushNotificationConfigResponse,
    DeleteTaskPushNotificationConfigParams,
    GetTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigResponse,
    Message,
    MessageSendConfiguration,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
    TransportProtocol,
)

CHECK_TIMEOUT = 30.0  # seconds per check, streams included
TRANSPORTS = {
    'jsonrpc': (TransportProtocol.jsonrpc, JsonRpcTransport),
    'rest': (TransportProtocol.http_json, RestTransport),
}
HOOK = 'http://127.0.0.1:9/hook'  # registered only: nothing is delivered during the check


BEARER_SCHEME = 'bearerAuth'  # the scheme name a2ad's card gives bearer tokens


class TokenFor(CredentialService):
    """The credential of one scheme name, for the SDK's AuthInterceptor."""

    def __init__(self, scheme: str, token: str):
        self.scheme = scheme
        self.token = token

    async def get_credentials(self, security_scheme_name, context):
        return self.token if security_scheme_name == self.scheme else None


class Ctx:
    def __init__(self, transport: str, base_url: str, http: httpx.AsyncClient, token: str | None):
        self.transport = transport
        self.base_url = base_url.rstrip('/')
        self.http = http
        self.bare_http = httpx.AsyncClient(timeout=CHECK_TIMEOUT)  # never carries credentials
        self.token = token
        self.card = None

    def client(self, *, streaming: bool = False, polling: bool = False, credentials: bool = True):
        config = ClientConfig(
            streaming=streaming,
            polling=polling,
            httpx_client=self.http if credentials else self.bare_http,
            supported_transports=[TRANSPORTS[self.transport][0]],
        )
        # The credential is picked by the SDK from the card's security schemes.
        interceptors = [AuthInterceptor(TokenFor(BEARER_SCHEME, self.token))] if self.token and credentials else []
        return ClientFactory(config).create(self.card, interceptors=interceptors)

    def headers(self) -> dict[str, str]:
        """Headers for the calls made with httpx directly (the SDK's interceptor is not there)."""
        return {'Authorization': f'Bearer {self.token}'} if self.token else {}


def expect(cond, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


def user_message(text: str, skill: str) -> Message:
    return Message(
        role=Role.user,
        message_id=str(uuid.uuid4()),
        parts=[Part(root=TextPart(text=text))],
        metadata={'skill': skill},
    )


def artifact_text(task: Task) -> str:
    return ''.join(p.root.text for a in task.artifacts or [] for p in a.parts if hasattr(p.root, 'text'))


async def send_blocking(ctx: Ctx, text: str, skill: str = 'echo', *, polling: bool = False) -> Task:
    results = [r async for r in ctx.client(polling=polling).send_message(user_message(text, skill))]
    expect(len(results) == 1, f'one result expected, got {len(results)}')
    result = results[0]
    expect(isinstance(result, tuple) and isinstance(result[0], Task), f'a Task expected, got {result!r}')
    return result[0]


async def check_card(ctx: Ctx) -> None:
    card = await A2ACardResolver(ctx.http, ctx.base_url).get_agent_card()
    expect(card.protocol_version == '0.3.0', f'protocolVersion {card.protocol_version!r}')
    expect(card.url == ctx.base_url + '/', f'url {card.url!r}')
    expect(card.preferred_transport == 'JSONRPC', f'preferredTransport {card.preferred_transport!r}')
    transports = {i.transport: i.url for i in card.additional_interfaces or []}
    expect(transports.get('HTTP+JSON') == ctx.base_url, f'additionalInterfaces {transports!r}')
    expect([s.id for s in card.skills] == ['echo', 'slow'], f'skills {[s.id for s in card.skills]}')
    if ctx.token:
        schemes = card.security_schemes or {}
        scheme = schemes.get(BEARER_SCHEME)
        expect(scheme is not None, f'no {BEARER_SCHEME} in securitySchemes {list(schemes)}')
        expect(isinstance(scheme.root, HTTPAuthSecurityScheme), f'{BEARER_SCHEME} read as {scheme.root!r}')
        expect(scheme.root.type == 'http' and scheme.root.scheme.lower() == 'bearer', f'{BEARER_SCHEME}: {scheme.root!r}')
        expect({BEARER_SCHEME: []} in (card.security or []), f'security {card.security!r}')
        interceptor = AuthInterceptor(TokenFor(BEARER_SCHEME, ctx.token))
        _, picked = await interceptor.intercept('message/send', {}, {}, card, None)
        expect(picked.get('headers') == ctx.headers(), f'the SDK picked {picked!r} from the card')
        if ctx.transport == 'rest':
            ctx.http.headers.update(picked['headers'])
    ctx.card = card
    client = ctx.client()
    expected = TRANSPORTS[ctx.transport][1]
    expect(isinstance(client._transport, expected), f'factory picked {type(client._transport).__name__}')


async def check_send(ctx: Ctx) -> None:
    task = await send_blocking(ctx, 'hello 0.3')
    expect(task.status.state == TaskState.completed, f'state {task.status.state}')
    expect(artifact_text(task) == 'hello 0.3', f'artifact {artifact_text(task)!r}')
    expect(task.kind == 'task' and task.context_id, 'kind/contextId')


async def check_stream(ctx: Ctx) -> None:
    events = [e async for e in ctx.client(streaming=True).send_message(user_message('abc', 'slow'))]
    expect(events, 'no events')
    task, _ = events[-1]
    updates = [u for _, u in events if isinstance(u, TaskStatusUpdateEvent)]
    expect(updates and updates[-1].final, f'last status update not final: {updates[-1:]!r}')
    expect(task.status.state == TaskState.completed, f'state {task.status.state}')
    expect(artifact_text(task) == 'abc', f'artifact {artifact_text(task)!r}')


async def check_get(ctx: Ctx) -> None:
    task = await send_blocking(ctx, 'get me')
    got = await ctx.client().get_task(TaskQueryParams(id=task.id, history_length=1))
    expect(got.id == task.id and got.status.state == TaskState.completed, f'got {got.status.state}')
    expect(len(got.history or []) <= 1, f'historyLength 1 gave {len(got.history or [])}')


async def check_cancel(ctx: Ctx) -> None:
    task = await send_blocking(ctx, 'x' * 200, 'slow', polling=True)
    expect(task.status.state in (TaskState.submitted, TaskState.working), f'state {task.status.state}')
    canceled = await ctx.client().cancel_task(TaskIdParams(id=task.id))
    expect(canceled.status.state == TaskState.canceled, f'state {canceled.status.state}')


async def check_resubscribe(ctx: Ctx) -> None:
    task = await send_blocking(ctx, 'resub', 'slow', polling=True)
    client = ctx.client(streaming=True)
    events = [e async for e in client.resubscribe(TaskIdParams(id=task.id))]
    expect(events, 'no events')
    last, _ = events[-1]
    expect(last.status.state == TaskState.completed, f'state {last.status.state}')
    expect(artifact_text(last) == 'resub', f'artifact {artifact_text(last)!r}')


async def list_configs(ctx: Ctx, task_id: str) -> list[str]:
    if ctx.transport == 'jsonrpc':
        req = ListTaskPushNotificationConfigRequest(id=1, params=ListTaskPushNotificationConfigParams(id=task_id))
        r = await ctx.http.post(
            ctx.base_url + '/', json=req.model_dump(mode='json', exclude_none=True), headers=ctx.headers()
        )
        resp = ListTaskPushNotificationConfigResponse.model_validate(r.json()).root
        expect(hasattr(resp, 'result'), f'list failed: {r.text}')
        return [c.push_notification_config.id for c in resp.result]
    r = await ctx.http.get(f'{ctx.base_url}/v1/tasks/{task_id}/pushNotificationConfigs', headers=ctx.headers())
    r.raise_for_status()
    resp = json_format.ParseDict(r.json(), a2a_pb2.ListTaskPushNotificationConfigResponse())
    return [c.push_notification_config.id for c in resp.configs]


async def delete_config(ctx: Ctx, task_id: str, config_id: str) -> None:
    if ctx.transport == 'jsonrpc':
        params = DeleteTaskPushNotificationConfigParams(id=task_id, push_notification_config_id=config_id)
        req = DeleteTaskPushNotificationConfigRequest(id=2, params=params)
        r = await ctx.http.post(
            ctx.base_url + '/', json=req.model_dump(mode='json', exclude_none=True), headers=ctx.headers()
        )
        resp = DeleteTaskPushNotificationConfigResponse.model_validate(r.json()).root
        expect(hasattr(resp, 'result'), f'delete failed: {r.text}')
        return
    r = await ctx.http.delete(
        f'{ctx.base_url}/v1/tasks/{task_id}/pushNotificationConfigs/{config_id}', headers=ctx.headers()
    )
    r.raise_for_status()


async def check_push_config_crud(ctx: Ctx) -> None:
    task = await send_blocking(ctx, 'push')
    client = ctx.client()
    config = PushNotificationConfig(id='hook1', url=HOOK, token='tok-1')
    saved = await client.set_task_callback(TaskPushNotificationConfig(task_id=task.id, push_notification_config=config))
    expect(saved.task_id == task.id and saved.push_notification_config.url == HOOK, f'set {saved!r}')
    expect(saved.push_notification_config.id == 'hook1', f'id {saved.push_notification_config.id!r}')
    got = await client.get_task_callback(GetTaskPushNotificationConfigParams(id=task.id, push_notification_config_id='hook1'))
    expect(got.push_notification_config.token == 'tok-1', f'get {got!r}')
    expect(await list_configs(ctx, task.id) == ['hook1'], 'list before delete')
    await delete_config(ctx, task.id, 'hook1')
    expect(await list_configs(ctx, task.id) == [], 'list after delete')


async def check_errors(ctx: Ctx) -> None:
    client = ctx.client()
    try:
        await client.get_task(TaskQueryParams(id='no-such-task'))
        raise AssertionError('get of an unknown task succeeded')
    except A2AClientJSONRPCError as e:
        expect(ctx.transport == 'jsonrpc' and e.error.code == -32001, f'code {e.error.code}')
    except A2AClientHTTPError as e:
        expect(ctx.transport == 'rest' and e.status_code == 404, f'status {e.status_code}')
    done = await send_blocking(ctx, 'done')
    try:
        await client.cancel_task(TaskIdParams(id=done.id))
        raise AssertionError('cancel of a completed task succeeded')
    except A2AClientJSONRPCError as e:
        expect(ctx.transport == 'jsonrpc' and e.error.code == -32002, f'code {e.error.code}')
    except A2AClientHTTPError as e:
        expect(ctx.transport == 'rest' and e.status_code == 400, f'status {e.status_code}')


async def check_credentials_required(ctx: Ctx) -> None:
    try:
        await send_blocking_with(ctx.client(credentials=False), 'no token')
        raise AssertionError('a send without the token succeeded')
    except A2AClientHTTPError as e:
        expect(e.status_code == 401, f'status {e.status_code}')


async def send_blocking_with(client, text: str) -> None:
    _ = [r async for r in client.send_message(user_message(text, 'echo'))]


CHECKS = [
    ('card', check_card),
    ('send', check_send),
    ('stream', check_stream),
    ('get', check_get),
    ('cancel', check_cancel),
    ('resubscribe', check_resubscribe),
    ('push-config-crud', check_push_config_crud),
    ('errors', check_errors),
]


AUTH_CHECKS = [('credentials-required', check_credentials_required)]


async def main(transport: str, base_url: str, token: str | None) -> int:
    passed = failed = 0
    async with httpx.AsyncClient(timeout=CHECK_TIMEOUT) as http:
        ctx = Ctx(transport, base_url, http, token)
        for name, check in CHECKS + (AUTH_CHECKS if token else []):
            try:
                await asyncio.wait_for(check(ctx), CHECK_TIMEOUT)
                print(f'ok {name}')
                passed += 1
            except Exception as e:  # noqa: BLE001 - every failure is reported
                print(f'FAIL {name}: {type(e).__name__}: {" ".join(str(e).split())[:400]}')
                failed += 1
            if name == 'card' and ctx.card is None:
                break
        await ctx.bare_http.aclose()
    label = f'{transport}+bearer' if token else transport
    print(f'interop-v03[{label}]: {passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--transport', choices=sorted(TRANSPORTS), default='jsonrpc')
    parser.add_argument('--token', help='the bearer token the node requires (its card must announce it)')
    parser.add_argument('base_url')
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.transport, args.base_url, args.token)))
