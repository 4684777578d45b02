#!/usr/bin/env python3
"""Asks a node's agent one question with the official A2A Python SDK (a2a-sdk 1.x) and
prints the answer the way the SDK's examples do: a blocking send, then the completed
task's status message and its artifacts' text.

Usage: python text_answer.py <base_url> <question>

Prints `state: <TaskState name>`, `answer: <status message text>` and one
`artifact <name>: <text>` line per artifact. Used by tests/node/interop.rs to show that a
text-mode command agent's answer reaches a client that reads only the final task.
"""

from __future__ import annotations

import asyncio
import sys
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState


async def main(base_url: str, question: str) -> int:
    async with httpx.AsyncClient(headers={'A2A-Version': '1.0'}, timeout=30) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=question)])
        async for event in client.send_message(SendMessageRequest(message=message)):
            task = event.task
            print(f'state: {TaskState.Name(task.status.state)}')
            print('answer: ' + ''.join(p.text for p in task.status.message.parts))
            for artifact in task.artifacts:
                print(f'artifact {artifact.name}: ' + ''.join(p.text for p in artifact.parts))
    return 0


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit('usage: text_answer.py <base_url> <question>')
    sys.exit(asyncio.run(main(sys.argv[1].rstrip('/'), sys.argv[2])))
