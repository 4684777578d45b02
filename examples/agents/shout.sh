#!/bin/sh
# A text-mode command agent: reads the prompt on stdin and answers, one line per
# message. Each stdout line becomes agent text; exit 0 completes the task.
set -eu
prompt=$(cat)
if [ -z "$prompt" ]; then
    echo "nothing to shout about" >&2
    exit 2
fi
words=$(printf '%s\n' "$prompt" | wc -w | tr -d ' ')
echo "You said $words word(s)."
printf '%s\n' "$prompt" | tr '[:lower:]' '[:upper:]'
