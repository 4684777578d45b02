#!/usr/bin/env node
// Interop check: drives a running a2ad node with the official A2A JavaScript SDK
// (@a2a-js/sdk, pinned in package.json; it speaks A2A 1.0 over JSON-RPC: PascalCase
// methods, `A2A-Version: 1.0`, ProtoJSON shapes).
//
// Usage: node client_check.mjs <base_url>      e.g. http://127.0.0.1:8080
//
// The node must run tests/interop/a2ad.yml (agents echo, slow, chat) on a fresh data dir:
// check list-tasks compares ListTasks with the tasks this script created. Prints
// "ok <check>" or "FAIL <check>: <why>" per check and a summary line; exits 1 on any
// failure, 2 on bad usage. It makes the same 8 checks as tests/interop/client_check.py.
//
// SDK pieces used: DefaultAgentCardResolver (card discovery), ClientFactory with a
// JsonRpcTransportFactory -> Client over JsonRpcTransport (every call, ListTasks included:
// the SDK has Client.listTasks), the request/response codecs and enums of the SDK.
// Besides the SDK's own (lenient) parsing, every request is checked to be 1.0 (PascalCase
// method, `A2A-Version: 1.0`) and every JSON-RPC result and SSE event is re-checked
// strictly (unknown fields such as a 0.3 `kind` rejected, required fields present, enums
// by name), so a field the SDK would silently drop or default fails the check that
// received it.

import { A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER, Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { A2AError } from '@a2a-js/sdk/errors';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

const CHECK_TIMEOUT_MS = 30_000; // per check (the whole check, streams included)
const EXPECTED_NAME = 'a2ad-interop'; // card.name in tests/interop/a2ad.yml
const EXPECTED_SKILLS = ['echo', 'slow', 'chat'];
const CARD_PATH = '/.well-known/agent-card.json';

const { TASK_STATE_COMPLETED: COMPLETED, TASK_STATE_CANCELED: CANCELED, TASK_STATE_INPUT_REQUIRED: INPUT_REQUIRED } =
  TaskState;
const TERMINAL_OR_INTERRUPTED = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

class CheckFailed extends Error {}

function expect(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}

const stateName = (s) => TaskState[s] ?? `TaskState(${s})`;
const roleName = (r) => Role[r] ?? `Role(${r})`;

// --------------------------------------------------------------------------------------
// Strict wire validation. The SDK's fromJSON codecs are lenient (unknown fields ignored,
// missing ones defaulted); this re-checks each raw body and records problems per check.

let strictProblems = [];
let pendingValidations = []; // SSE bodies still being read by the validator
let currentSignal; // the running check's AbortSignal, given to every fetch

const STATE_NAMES = Object.keys(TaskState).filter((k) => k.startsWith('TASK_STATE_') && k !== 'TASK_STATE_UNSPECIFIED');
const ROLE_NAMES = ['ROLE_USER', 'ROLE_AGENT'];
const isObj = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v) => typeof v === 'string';
const bool = (v) => typeof v === 'boolean';
const int = (v) => Number.isInteger(v);
const strList = (v) => Array.isArray(v) && v.every(str);
const any = () => true;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;

// A schema is {field: [required, validator]}; a validator is a predicate or a schema name.
const SCHEMAS = {
  Part: {
    text: [false, str], raw: [false, str], url: [false, str], data: [false, any],
    metadata: [false, isObj], filename: [false, str], mediaType: [false, str],
  },
  Message: {
    messageId: [true, str], contextId: [false, str], taskId: [false, str],
    role: [true, (v) => ROLE_NAMES.includes(v)], parts: [true, ['Part']], metadata: [false, isObj],
    extensions: [false, strList], referenceTaskIds: [false, strList],
  },
  TaskStatus: {
    state: [true, (v) => STATE_NAMES.includes(v)], message: [false, 'Message'],
    timestamp: [false, (v) => str(v) && TIMESTAMP.test(v)],
  },
  Artifact: {
    artifactId: [true, str], name: [false, str], description: [false, str], parts: [true, ['Part']],
    metadata: [false, isObj], extensions: [false, strList],
  },
  Task: {
    id: [true, str], contextId: [true, str], status: [true, 'TaskStatus'], artifacts: [false, ['Artifact']],
    history: [false, ['Message']], metadata: [false, isObj],
  },
  TaskStatusUpdateEvent: {
    taskId: [true, str], contextId: [true, str], status: [true, 'TaskStatus'], metadata: [false, isObj],
  },
  TaskArtifactUpdateEvent: {
    taskId: [true, str], contextId: [true, str], artifact: [true, 'Artifact'], append: [false, bool],
    lastChunk: [false, bool], metadata: [false, isObj],
  },
  SendMessageResponse: { task: [false, 'Task'], message: [false, 'Message'] },
  StreamResponse: {
    task: [false, 'Task'], message: [false, 'Message'], statusUpdate: [false, 'TaskStatusUpdateEvent'],
    artifactUpdate: [false, 'TaskArtifactUpdateEvent'],
  },
  ListTasksResponse: {
    tasks: [true, ['Task']], nextPageToken: [true, str], pageSize: [true, int], totalSize: [true, int],
  },
  AgentInterface: { url: [true, str], protocolBinding: [true, str], tenant: [false, str], protocolVersion: [true, str] },
  AgentProvider: { url: [true, str], organization: [true, str] },
  AgentExtension: { uri: [true, str], description: [false, str], required: [false, bool], params: [false, isObj] },
  AgentCapabilities: {
    streaming: [false, bool], pushNotifications: [false, bool], extendedAgentCard: [false, bool],
    extensions: [false, ['AgentExtension']],
  },
  AgentSkill: {
    id: [true, str], name: [true, str], description: [true, str], tags: [true, strList], examples: [false, strList],
    inputModes: [false, strList], outputModes: [false, strList], securityRequirements: [false, Array.isArray],
  },
  AgentCard: {
    name: [true, str], description: [true, str], supportedInterfaces: [true, ['AgentInterface']],
    provider: [false, 'AgentProvider'], version: [true, str], documentationUrl: [false, str],
    capabilities: [true, 'AgentCapabilities'], securitySchemes: [false, isObj], securityRequirements: [false, Array.isArray],
    defaultInputModes: [true, strList], defaultOutputModes: [true, strList], skills: [true, ['AgentSkill']],
    signatures: [false, Array.isArray], iconUrl: [false, str],
  },
};
const ONE_OF = {
  Part: ['text', 'raw', 'url', 'data'],
  SendMessageResponse: ['task', 'message'],
  StreamResponse: ['task', 'message', 'statusUpdate', 'artifactUpdate'],
};

function validate(value, type, path, problems) {
  if (Array.isArray(type)) {
    if (!Array.isArray(value)) return void problems.push(`${path}: not an array`);
    value.forEach((v, i) => validate(v, type[0], `${path}[${i}]`, problems));
    return;
  }
  if (typeof type === 'function') {
    if (!type(value)) problems.push(`${path}: bad value ${JSON.stringify(value)}`);
    return;
  }
  const schema = SCHEMAS[type];
  if (!isObj(value)) return void problems.push(`${path}: ${type} is not an object`);
  for (const key of Object.keys(value)) {
    if (!(key in schema)) problems.push(`${path}: unknown ${type} field ${JSON.stringify(key)}`);
  }
  for (const [key, [required, sub]] of Object.entries(schema)) {
    if (value[key] === undefined || value[key] === null) {
      if (required) problems.push(`${path}: ${type} lacks required field ${JSON.stringify(key)}`);
      continue;
    }
    validate(value[key], sub, `${path}.${key}`, problems);
  }
  if (ONE_OF[type]) {
    const set = ONE_OF[type].filter((k) => value[k] !== undefined && value[k] !== null);
    if (set.length !== 1) problems.push(`${path}: ${type} has ${set.length} of ${ONE_OF[type].join('|')}, expected exactly one`);
  }
}

function strict(value, type, where) {
  const problems = [];
  validate(value, type, type, problems);
  for (const p of problems.slice(0, 5)) strictProblems.push(`${where}: ${p}`);
  if (problems.length > 5) strictProblems.push(`${where}: ... ${problems.length - 5} more`);
}

const RESULT_TYPES = {
  SendMessage: 'SendMessageResponse',
  GetTask: 'Task',
  CancelTask: 'Task',
  ListTasks: 'ListTasksResponse',
  SendStreamingMessage: 'StreamResponse',
  SubscribeToTask: 'StreamResponse',
};

function validateEnvelope(body, method, reqId, where) {
  if (!isObj(body)) return void strictProblems.push(`${where}: response is not a JSON object`);
  if (body.jsonrpc !== '2.0') strictProblems.push(`${where}: jsonrpc is ${JSON.stringify(body.jsonrpc)}, not "2.0"`);
  if (body.id !== reqId) strictProblems.push(`${where}: response id ${JSON.stringify(body.id)} != request id ${reqId}`);
  if ('error' in body) return;
  if ('result' in body && RESULT_TYPES[method]) strict(body.result, RESULT_TYPES[method], where);
}

function parseSse(text) {
  const events = [];
  let name = 'message';
  let data = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length) events.push([name, data.join('\n')]);
      name = 'message';
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const key = i < 0 ? line : line.slice(0, i);
    let val = i < 0 ? '' : line.slice(i + 1);
    if (val.startsWith(' ')) val = val.slice(1);
    if (key === 'event') name = val;
    else if (key === 'data') data.push(val);
  }
  if (data.length) events.push([name, data.join('\n')]);
  return events;
}

// The fetch given to the SDK (card resolver and JSON-RPC transport): checks that each
// request is A2A 1.0, passes the response through unchanged and validates a copy of it.
// The 0.3 fields a card also carries so that 0.3 clients discover the node (spec-1.0.md
// §9: the well-known card merges the 1.0 card with them); 1.0 SDKs ignore them.
const V03_CARD_FIELDS = ['url', 'preferredTransport', 'protocolVersion', 'additionalInterfaces',
  'supportsAuthenticatedExtendedCard', 'security'];

function withoutV03CardFields(card) {
  if (!isObj(card)) return card;
  return Object.fromEntries(Object.entries(card).filter(([k]) => !V03_CARD_FIELDS.includes(k)));
}

async function checkingFetch(input, init = {}) {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const headers = new Headers(init.headers);
  const method = (init.method ?? 'GET').toUpperCase();
  if (headers.get(A2A_VERSION_HEADER) !== '1.0') {
    strictProblems.push(`${method} ${url.pathname}: the SDK sent ${A2A_VERSION_HEADER}: ${headers.get(A2A_VERSION_HEADER)}, not 1.0`);
  }
  const response = await fetch(input, { ...init, signal: init.signal ?? currentSignal });
  if (method === 'GET' && url.pathname === CARD_PATH) {
    if (response.ok) strict(withoutV03CardFields(await response.clone().json()), 'AgentCard', 'agent card');
    return response;
  }
  if (method !== 'POST') return response;
  let rpc;
  try {
    rpc = JSON.parse(init.body);
  } catch {
    return response;
  }
  const rpcMethod = String(rpc.method);
  if (!RESULT_TYPES[rpcMethod]) strictProblems.push(`the SDK sent method ${JSON.stringify(rpcMethod)}, not a 1.0 A2A method`);
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream') && response.body) {
    const [forSdk, forCheck] = response.body.tee();
    const where = strictProblems; // problems land in the check that opened the stream
    pendingValidations.push(
      new Response(forCheck).text().then(
        (text) => {
          parseSse(text).forEach(([name, data], i) => {
            const at = `${rpcMethod} SSE event ${i}`;
            let body;
            try {
              body = JSON.parse(data);
            } catch (e) {
              return void where.push(`${at}: data is not JSON: ${e.message}`);
            }
            if (name === 'error' || (isObj(body) && 'error' in body)) return; // the SDK surfaces these
            const saved = strictProblems;
            strictProblems = where;
            try {
              validateEnvelope(body, rpcMethod, rpc.id, at);
            } finally {
              strictProblems = saved;
            }
          });
        },
        () => {}, // an aborted stream: the SDK side reports it
      ),
    );
    return new Response(forSdk, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
  let body;
  try {
    body = await response.clone().json();
  } catch {
    strictProblems.push(`${rpcMethod}: HTTP ${response.status} body is not JSON`);
    return response;
  }
  validateEnvelope(body, rpcMethod, rpc.id, rpcMethod);
  return response;
}

// --------------------------------------------------------------------------------------
// Helpers over the SDK client.

class Ctx {
  constructor(baseUrl) {
    this.baseUrl = baseUrl;
    this.card = null;
    this.client = null; // Client over JsonRpcTransport
    this.created = [];
  }

  note(task) {
    if (task.id && !this.created.includes(task.id)) this.created.push(task.id);
  }
}

function textPart(text) {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

function userMessage(text, skill, { taskId = '', contextId = '' } = {}) {
  return {
    messageId: `interop-${randomUUID()}`,
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    metadata: skill === undefined ? undefined : { skill },
    extensions: [],
    referenceTaskIds: [],
  };
}

const isMessage = (result) => 'messageId' in result; // how the SDK itself tells them apart

// SendMessage through the SDK client (Client.sendMessage); the reply must be a Task.
async function send(ctx, message, { returnImmediately = false } = {}) {
  const result = await ctx.client.sendMessage({
    tenant: '',
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  });
  expect(result && !isMessage(result), `SendMessage result is not a Task: ${JSON.stringify(result)}`);
  ctx.note(result);
  return result;
}

// The SDK stream for SendStreamingMessage / SubscribeToTask. Client.sendMessageStream only
// streams when the card declares capabilities.streaming (otherwise it silently falls back
// to SendMessage); in that case the SDK's JsonRpcTransport is used directly, so the node's
// real answer is what the check sees.
function streamSource(ctx, kind, request) {
  const streaming = ctx.card?.capabilities?.streaming === true;
  if (kind === 'send') {
    return streaming ? ctx.client.sendMessageStream(request) : ctx.client.transport.sendMessageStream(request);
  }
  return streaming ? ctx.client.resubscribeTask(request) : ctx.client.transport.resubscribeTask(request);
}

function describe(ev) {
  const kind = ev.payload?.$case ?? '?';
  if (kind === 'task') return `task(${stateName(ev.payload.value.status?.state)})`;
  if (kind === 'statusUpdate') return `statusUpdate(${stateName(ev.payload.value.status?.state)})`;
  if (kind === 'artifactUpdate') return `artifactUpdate(append=${ev.payload.value.append})`;
  return kind;
}

const partTexts = (parts) => parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value);

// Rebuilds the artifacts from artifact updates (append = add parts) and joins the text.
function artifactTextFromUpdates(events) {
  const artifacts = new Map();
  for (const ev of events) {
    if (ev.payload?.$case !== 'artifactUpdate') continue;
    const upd = ev.payload.value;
    const texts = partTexts(upd.artifact?.parts ?? []);
    if (upd.append) {
      expect(artifacts.has(upd.artifact.artifactId), `artifact update appends to unknown artifact ${JSON.stringify(upd.artifact.artifactId)}`);
      artifacts.get(upd.artifact.artifactId).push(...texts);
    } else {
      artifacts.set(upd.artifact.artifactId, texts);
    }
  }
  return [...artifacts.values()].map((t) => t.join('')).join('');
}

const taskArtifactText = (task) => (task.artifacts ?? []).map((a) => partTexts(a.parts).join('')).join('');

// First event a Task, then status/artifact updates of that task, last a COMPLETED status update.
function checkTaskStream(events, taskId, what) {
  expect(events.length, `${what}: the stream had no events`);
  const order = events.map(describe).join(', ');
  expect(events[0].payload?.$case === 'task', `${what}: first event is ${describe(events[0])}, expected a Task (${order})`);
  const first = events[0].payload.value;
  if (taskId !== null) expect(first.id === taskId, `${what}: first event is task ${first.id}, expected ${taskId}`);
  events.slice(1).forEach((ev, j) => {
    const i = j + 1;
    const kind = ev.payload?.$case;
    expect(kind === 'statusUpdate' || kind === 'artifactUpdate',
      `${what}: event ${i} is ${describe(ev)}, expected a status or artifact update (${order})`);
    const upd = ev.payload.value;
    expect(upd.taskId === first.id && upd.contextId === first.contextId,
      `${what}: event ${i} names task ${upd.taskId} / context ${upd.contextId}, expected ${first.id} / ${first.contextId}`);
    if (kind === 'statusUpdate' && i < events.length - 1) {
      expect(!TERMINAL_OR_INTERRUPTED.has(upd.status?.state), `${what}: event ${i} is ${describe(ev)} but the stream went on (${order})`);
    }
  });
  const last = events[events.length - 1];
  expect(events.length > 1 && last.payload?.$case === 'statusUpdate' && last.payload.value.status?.state === COMPLETED,
    `${what}: last event is ${describe(last)}, expected statusUpdate(TASK_STATE_COMPLETED) (${order})`);
  return first;
}

async function collect(stream, limit = 1000) {
  const events = [];
  for await (const ev of stream) {
    events.push(ev);
    expect(events.length <= limit, `stream exceeded ${limit} events`);
  }
  return events;
}

const getTask = (ctx, id, historyLength) => ctx.client.getTask({ tenant: '', id, historyLength });

// --------------------------------------------------------------------------------------
// The checks.

async function checkCard(ctx) {
  const resolver = new DefaultAgentCardResolver({ fetchImpl: checkingFetch });
  const card = await resolver.resolve(ctx.baseUrl);
  ctx.card = card;
  expect(card.name === EXPECTED_NAME, `card name is ${JSON.stringify(card.name)}, expected ${JSON.stringify(EXPECTED_NAME)}`);
  const jsonrpc = (card.supportedInterfaces ?? []).filter((i) => i.protocolBinding?.toUpperCase() === 'JSONRPC');
  expect(jsonrpc.length, `card has no JSONRPC interface: ${JSON.stringify(card.supportedInterfaces)}`);
  const iface = jsonrpc[0];
  expect(iface.protocolVersion === '1.0', `JSONRPC interface protocolVersion is ${JSON.stringify(iface.protocolVersion)}, expected "1.0"`);
  expect(iface.url.replace(/\/+$/, '') === ctx.baseUrl, `JSONRPC interface url is ${iface.url}, expected ${ctx.baseUrl}`);
  const skills = (card.skills ?? []).map((s) => s.id);
  expect(JSON.stringify(skills) === JSON.stringify(EXPECTED_SKILLS), `card skills are ${JSON.stringify(skills)}, expected ${JSON.stringify(EXPECTED_SKILLS)}`);

  // The client for the other checks, made by the SDK's factory from the resolved card (so
  // the factory's interface selection is exercised too), JSON-RPC only.
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: checkingFetch })], cardResolver: resolver });
  const client = await factory.createFromAgentCard(card);
  expect(client.transport.protocolName === 'JSONRPC', `the factory picked ${client.transport.protocolName}, expected JSONRPC`);
  expect(client.protocolVersion === A2A_PROTOCOL_VERSION && A2A_PROTOCOL_VERSION === '1.0',
    `the SDK client speaks ${client.protocolVersion}, expected 1.0`);
  ctx.client = client;

  expect(card.capabilities?.streaming === true, 'card capabilities.streaming is not true');
}

async function checkBlockingSend(ctx) {
  const task = await send(ctx, userMessage('hello'));
  expect(task.id && task.contextId, 'task id or contextId is empty');
  expect(task.status?.state === COMPLETED, `task state is ${stateName(task.status?.state)}, expected COMPLETED`);
  const text = taskArtifactText(task);
  expect(text === 'hello', `artifact text is ${JSON.stringify(text)}, expected "hello"`);
}

async function checkStreamingSend(ctx) {
  const req = { tenant: '', message: userMessage('abc', 'slow'), configuration: undefined, metadata: undefined };
  const events = await collect(streamSource(ctx, 'send', req));
  const first = checkTaskStream(events, null, 'SendStreamingMessage');
  ctx.note(first);
  expect(events.some((e) => e.payload?.$case === 'artifactUpdate'), 'no artifact update in the stream');
  const text = artifactTextFromUpdates(events);
  expect(text === 'abc', `artifact text from the updates is ${JSON.stringify(text)}, expected "abc"`);
  expect(ctx.card.capabilities?.streaming, 'the stream worked but the card does not declare streaming');
  const task = await getTask(ctx, first.id);
  expect(task.status?.state === COMPLETED, `GetTask after the stream: ${stateName(task.status?.state)}`);
  expect(taskArtifactText(task) === 'abc', `GetTask artifact text is ${JSON.stringify(taskArtifactText(task))}`);
}

async function checkHistoryLength(ctx) {
  const task = await send(ctx, userMessage('history please'));
  expect(task.status?.state === COMPLETED, `task state is ${stateName(task.status?.state)}`);
  const one = await getTask(ctx, task.id, 1);
  expect(one.history.length === 1, `GetTask historyLength=1 gave ${one.history.length} messages`);
  expect(one.history[0].role === Role.ROLE_AGENT, `the last history message has role ${roleName(one.history[0].role)}, expected ROLE_AGENT`);
  const full = await getTask(ctx, task.id);
  const roles = full.history.map((m) => roleName(m.role));
  expect(JSON.stringify(roles) === '["ROLE_USER","ROLE_AGENT"]', `GetTask without historyLength gave history roles ${JSON.stringify(roles)}`);
  expect(partTexts(full.history[0].parts)[0] === 'history please', 'history[0] is not the user message');
}

async function checkListTasks(ctx) {
  const ids = [];
  const stamps = [];
  const totals = new Set();
  let token = '';
  let page = 1;
  for (; page <= 50; page++) {
    const resp = await ctx.client.listTasks({
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED, // no filter (the codec needs it set)
      pageSize: 2,
      pageToken: token,
      statusTimestampAfter: undefined,
    });
    expect(resp.tasks.length <= 2, `page ${page} has ${resp.tasks.length} tasks with pageSize 2`);
    totals.add(resp.totalSize);
    for (const t of resp.tasks) {
      ids.push(t.id);
      stamps.push(t.status?.timestamp ?? '');
      expect(!t.artifacts.length, `task ${t.id} has artifacts without includeArtifacts`);
    }
    token = resp.nextPageToken;
    if (!token) break;
  }
  expect(page <= 50, 'still a nextPageToken after 50 pages');
  expect(totals.size === 1, `totalSize changed between pages: ${JSON.stringify([...totals])}`);
  const [total] = totals;
  expect(new Set(ids).size === ids.length, `duplicate task ids across pages: ${JSON.stringify(ids)}`);
  expect(ids.length === total, `walked ${ids.length} tasks, totalSize is ${total}`);
  const sorted = (a) => [...a].sort();
  expect(JSON.stringify(sorted(ids)) === JSON.stringify(sorted(ctx.created)),
    `listed ${ids.length} tasks ${JSON.stringify(sorted(ids))}, this script created ${ctx.created.length} ${JSON.stringify(sorted(ctx.created))}`);
  const times = stamps.map((s) => Date.parse(s));
  expect(times.every((t, i) => !Number.isNaN(t) && (i === 0 || times[i - 1] >= t)),
    `tasks are not newest-first by status timestamp: ${JSON.stringify(stamps)}`);
}

async function checkCancel(ctx) {
  const text = Array.from({ length: 100 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
  const task = await send(ctx, userMessage(text, 'slow'), { returnImmediately: true });
  expect(!TERMINAL_OR_INTERRUPTED.has(task.status?.state),
    `non-blocking send returned state ${stateName(task.status?.state)}, expected SUBMITTED or WORKING`);
  await sleep(300);
  const canceled = await ctx.client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  expect(canceled.id === task.id, `CancelTask returned task ${canceled.id}, expected ${task.id}`);
  expect(canceled.status?.state === CANCELED, `CancelTask returned state ${stateName(canceled.status?.state)}, expected CANCELED`);
  const again = await getTask(ctx, task.id);
  expect(again.status?.state === CANCELED, `GetTask after cancel: ${stateName(again.status?.state)}`);
}

async function checkSubscribe(ctx) {
  // 60 characters at 100 ms each: a 6 s turn, so that the subscription surely starts
  // while it runs, even on a loaded machine.
  const text = 'subscribe-' + '0123456789'.repeat(5);
  const task = await send(ctx, userMessage(text, 'slow'), { returnImmediately: true });
  expect(!TERMINAL_OR_INTERRUPTED.has(task.status?.state), `non-blocking send returned state ${stateName(task.status?.state)}`);
  const events = await collect(streamSource(ctx, 'subscribe', { tenant: '', id: task.id }));
  const first = checkTaskStream(events, task.id, 'SubscribeToTask');
  expect(!TERMINAL_OR_INTERRUPTED.has(first.status?.state), `the snapshot is already ${stateName(first.status?.state)}`);
  expect(ctx.card.capabilities?.streaming, 'the stream worked but the card does not declare streaming');
  const done = await getTask(ctx, task.id);
  expect(done.status?.state === COMPLETED, `GetTask after the stream: ${stateName(done.status?.state)}`);
  expect(taskArtifactText(done) === text, `GetTask artifact text is ${JSON.stringify(taskArtifactText(done))}`);
}

async function checkFollowUp(ctx) {
  const t1 = await send(ctx, userMessage('first turn', 'chat'));
  expect(t1.status?.state === INPUT_REQUIRED, `first turn: state ${stateName(t1.status?.state)}, expected INPUT_REQUIRED`);
  const t2 = await send(ctx, userMessage('second turn', undefined, { taskId: t1.id, contextId: t1.contextId }));
  expect(t2.id === t1.id, `follow-up made task ${t2.id}, expected the same task ${t1.id}`);
  expect(t2.contextId === t1.contextId, `follow-up contextId ${t2.contextId} != ${t1.contextId}`);
  expect(t2.status?.state === INPUT_REQUIRED, `follow-up: state ${stateName(t2.status?.state)}, expected INPUT_REQUIRED`);
  const got = await getTask(ctx, t1.id);
  const texts = got.history.map((m) => [roleName(m.role), partTexts(m.parts)[0] ?? '']);
  expect(got.history.length === 4, `history has ${got.history.length} messages, expected 4: ${JSON.stringify(texts)}`);
  expect(JSON.stringify(texts.map(([r]) => r)) === JSON.stringify(['ROLE_USER', 'ROLE_AGENT', 'ROLE_USER', 'ROLE_AGENT']),
    `history order: ${JSON.stringify(texts)}`);
}

const CHECKS = [
  ['card', checkCard],
  ['blocking-send', checkBlockingSend],
  ['streaming-send', checkStreamingSend],
  ['history-length', checkHistoryLength],
  ['list-tasks', checkListTasks],
  ['cancel', checkCancel],
  ['subscribe', checkSubscribe],
  ['follow-up', checkFollowUp],
];

const oneLine = (text) => String(text).split(/\s+/).filter(Boolean).join(' ');

function explain(e) {
  if (e instanceof CheckFailed) return e.message;
  if (e instanceof A2AError) {
    const code = e.envelopeCode !== undefined ? ` (${e.envelopeCode})` : '';
    const data = e.data !== undefined ? ` data=${JSON.stringify(e.data)}` : '';
    return `${e.name}${code}: ${e.message}${data}`;
  }
  if (e instanceof Error) {
    const cause = e.cause instanceof Error ? ` (cause: ${explain(e.cause)})` : '';
    return `${e.name}: ${e.message}${cause}`;
  }
  return String(e);
}

async function runCheck(fn, ctx) {
  const controller = new AbortController();
  currentSignal = controller.signal;
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new CheckFailed(`timed out after ${CHECK_TIMEOUT_MS / 1000} s`));
    }, CHECK_TIMEOUT_MS);
  });
  const run = fn(ctx);
  run.catch(() => {}); // a late rejection after a timeout is not unhandled
  try {
    await Promise.race([run, timeout]);
    // SSE bodies are validated as they are read; wait for the last of them.
    await Promise.race([Promise.allSettled(pendingValidations), timeout]);
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

async function main(baseUrl) {
  let passed = 0;
  let failed = 0;
  const ctx = new Ctx(baseUrl);
  for (const [name, fn] of CHECKS) {
    strictProblems = [];
    pendingValidations = [];
    if (name !== 'card' && ctx.client === null) {
      console.log(`FAIL ${name}: skipped, no client (the card check failed before creating one)`);
      failed++;
      continue;
    }
    try {
      await runCheck(fn, ctx);
      expect(!strictProblems.length, strictProblems.join('; '));
      console.log(`ok ${name}`);
      passed++;
    } catch (e) {
      const extra = strictProblems.length && !(e instanceof CheckFailed) ? ` (also: ${strictProblems.join('; ')})` : '';
      console.log(`FAIL ${name}: ${oneLine(explain(e) + extra)}`);
      failed++;
    }
  }
  console.log(`interop-js: ${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

const args = process.argv.slice(2);
if (args.length !== 1 || !/^https?:\/\//.test(args[0])) {
  console.error('usage: node client_check.mjs <base_url>   (e.g. http://127.0.0.1:8080)');
  process.exit(2);
}
const code = await main(args[0].replace(/\/+$/, ''));
// Exit explicitly: idle keep-alive sockets must not hold the process open.
process.stdout.write('', () => process.exit(code));
