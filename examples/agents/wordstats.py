#!/usr/bin/env python3
"""A jsonl-mode command agent (input: json): counts the words of the prompt.

It shows every kind of event the node reads: agent text, a tool call (started, then
completed), token usage, an artifact (a JSON report) and the final state. Each event is
one JSON object on one line of stdout.
"""
import collections
import json
import sys


def emit(**event):
    print(json.dumps(event), flush=True)


def main():
    request = json.load(sys.stdin)
    prompt = request.get("prompt", "")
    emit(type="text", text="Counting words...")
    emit(type="tool", status="started", toolUseId="count-1", name="count_words", input={"chars": len(prompt)})
    counts = collections.Counter(word.lower().strip(".,!?;:") for word in prompt.split())
    top = counts.most_common(3)
    emit(type="tool", status="completed", toolUseId="count-1", name="count_words", result=dict(top))
    words = sum(counts.values())
    emit(type="usage", inputTokens=words, outputTokens=len(top), totalTokens=words + len(top))
    report = {"words": words, "distinct": len(counts), "top": top, "taskId": request.get("taskId")}
    emit(type="artifact", artifactId="word-stats", name="Word statistics", data=report,
         mediaType="application/json", lastChunk=True)
    if words == 0:
        emit(type="final", state="input-required", text="Send me some words to count.")
    else:
        emit(type="final", state="completed", text=f"{words} words, {len(counts)} distinct.")


if __name__ == "__main__":
    main()
