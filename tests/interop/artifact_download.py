#!/usr/bin/env python3
"""Downloads a stored artifact file with the official A2A Python SDK (a2a-sdk 1.x) and
the credentials it already has: the SDK's httpx client carries the bearer token for every
call, so the same client GETs the part's `url` (the node's artifact route).

Usage: python artifact_download.py <base_url> <token> <other_token>

Sends one message (blocking), takes the first artifact part with a `url`, downloads it
and checks it against the part: `Content-Type` is its `mediaType`, the bytes match
`metadata.a2ad.byteSize` and `sha256`, and the `ETag` is the hash; then asks for its
first 10 bytes (`Range`, 206). With the other tenant's token the same URL is 404. Prints
`url: <url>`, `downloaded <filename>: <n> bytes, sha256 ok`, `range: 206 <n> bytes`,
`other tenant: <status>` and `artifact-download: N passed, 0 failed`.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import uuid

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest


async def file_part(http: httpx.AsyncClient, base_url: str) -> dict:
    card = await A2ACardResolver(http, base_url).get_agent_card()
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text='make a report')])
    async for event in client.send_message(SendMessageRequest(message=message)):
        for artifact in event.task.artifacts:
            for part in artifact.parts:
                if part.url:
                    return MessageToDict(part)
    raise SystemExit('no artifact part with a url')


async def main(base_url: str, token: str, other_token: str) -> int:
    passed = 0
    headers = {'A2A-Version': '1.0', 'Authorization': f'Bearer {token}'}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        part = await file_part(http, base_url)
        url, about = part['url'], part['metadata']['a2ad']
        print(f'url: {url}')
        response = await http.get(url)
        body = response.content
        digest = hashlib.sha256(body).hexdigest()
        checks = [
            response.status_code == 200,
            response.headers['content-type'] == part['mediaType'],
            len(body) == int(about['byteSize']),
            digest == about['sha256'],
            response.headers['etag'] == f'"{digest}"',
        ]
        if not all(checks):
            raise SystemExit(f'download does not match its part: {checks} {response.headers}')
        passed += 1
        print(f"downloaded {part.get('filename', '?')}: {len(body)} bytes, sha256 ok")
        ranged = await http.get(url, headers={'Range': 'bytes=0-9'})
        if ranged.status_code != 206 or ranged.content != body[:10]:
            raise SystemExit(f'range: {ranged.status_code} {ranged.content!r}')
        passed += 1
        print(f'range: {ranged.status_code} {len(ranged.content)} bytes')
    other = {'A2A-Version': '1.0', 'Authorization': f'Bearer {other_token}'}
    async with httpx.AsyncClient(headers=other, timeout=30) as http:
        refused = await http.get(url)
        if refused.status_code != 404:
            raise SystemExit(f'the other tenant got {refused.status_code}')
        passed += 1
        print(f'other tenant: {refused.status_code}')
    print(f'artifact-download: {passed} passed, 0 failed')
    return 0


if __name__ == '__main__':
    if len(sys.argv) != 4:
        sys.exit('usage: artifact_download.py <base_url> <token> <other_token>')
    sys.exit(asyncio.run(main(sys.argv[1].rstrip('/'), sys.argv[2], sys.argv[3])))
