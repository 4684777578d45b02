//! The Lua scripts of the Redis store: each write is ONE script, so Redis runs it whole
//! and alone (no other command of any node runs in between), and the checks it makes
//! come before its first write, so a refused write changes nothing.
//!
//! The commit of a step ([`COMMIT`]) does, in order:
//! 1. checks the context's lease: a write under a token is refused (`A2AD_LEASE`) unless
//!    the lease holds that very token (so a node whose lease expired, or was taken since,
//!    cannot write), and a write without one while any node holds the lease;
//! 2. checks the task's generation (its last event seq): below the stored one, or events
//!    at or below it, is a conflict (`A2AD_CONFLICT <stored>`), never an overwrite; the
//!    very commit already stored (same generation, same record: the cluster client sends
//!    a command again after a dropped connection) is answered as done, and writes nothing,
//!    before any refusal (the first attempt may have given the lease back);
//! 3. writes the snapshot and its indexes;
//! 4. appends the events to the task's stream, entry id `<seq>-0`, and trims the stream
//!    to the last `retention` events;
//! 5. writes the session (the step that ends a turn); its message list is trimmed to the
//!    history limit once it is an eighth past it;
//! 6. adds the push jobs to the push stream: those made for one config, and one per
//!    config the task has now for each job made for every config (`store/jobs.rs`);
//! 7. gives the context's lease back, when the step ends the turn (one round trip less
//!    per turn than a release of its own).
//!
//! Key and argument layouts (the Rust side builds them in `writes.rs`):
//! * `TASK_KEYS`: task hash, event stream, owner index, owner filters, node index, context
//!   tasks, active tasks ([`crate::redis::keys::Keys::of_task`]);
//! * `SESSION_KEYS`: session metadata, session messages, sessions set
//!   ([`crate::redis::keys::Keys::of_session`]).

/// Helpers every write script starts with. `a` is ARGV, `i` the next argument to read;
/// each helper returns what it read up to.
const PRELUDE: &str = r#"
local function put_task(k, a, i, was_active)
  local id, record, gen, state = a[i], a[i+1], tonumber(a[i+2]), a[i+3]
  local millis, ometa, allv, okey, ckey = tonumber(a[i+4]), a[i+5], a[i+6], a[i+7], a[i+8]
  local retention, n = tonumber(a[i+9]), tonumber(a[i+10])
  i = i + 11
  local last = gen
  for e = 1, n do
    redis.call('XADD', KEYS[k+1], a[i] .. '-0', 'e', a[i+1])
    last = math.max(last, tonumber(a[i]))
    i = i + 2
  end
  if n > 0 then
    redis.call('HSET', KEYS[k], 'r', record, 'g', gen, 's', state, 'o', okey, 'c', ckey, 'l', last)
    if last > retention then
      redis.call('XTRIM', KEYS[k+1], 'MINID', (last - retention + 1) .. '-0')
    end
  else
    redis.call('HSET', KEYS[k], 'r', record, 'g', gen, 's', state, 'o', okey, 'c', ckey)
  end
  redis.call('ZADD', KEYS[k+2], millis, id)
  redis.call('HSET', KEYS[k+3], id, ometa)
  redis.call('HSET', KEYS[k+4], id, allv)
  redis.call('SADD', KEYS[k+5], id)
  if state == 'TASK_STATE_SUBMITTED' or state == 'TASK_STATE_WORKING' then
    redis.call('SADD', KEYS[k+6], id)
  elseif was_active ~= false then
    redis.call('SREM', KEYS[k+6], id)
  end
  return i
end

local function check_task(k, a, i)
  local gen, n = tonumber(a[i+2]), tonumber(a[i+10])
  local stored = redis.call('HMGET', KEYS[k], 'g', 's')
  local stored_gen = tonumber(stored[1])
  if stored_gen and (gen < stored_gen or (n > 0 and tonumber(a[i+11]) <= stored_gen)) then
    if gen == stored_gen and redis.call('HGET', KEYS[k], 'r') == a[i+1] then
      -- This very commit, sent again (a client retried after losing the reply): done.
      return stored[2], nil, true
    end
    return nil, redis.error_reply('A2AD_CONFLICT ' .. stored_gen)
  end
  return stored[2] or '', nil, false
end

local function put_session(k, a, i)
  local meta, ckey, limit, n, new = a[i], a[i+1], tonumber(a[i+2]), tonumber(a[i+3]), a[i+4]
  i = i + 5
  redis.call('SET', KEYS[k], meta)
  local length = 0
  if n > 0 then
    length = redis.call('RPUSH', KEYS[k+1], unpack(a, i, i + n - 1))
    i = i + n
  end
  if limit <= 0 then
    redis.call('DEL', KEYS[k+1])
  elseif length > limit + math.floor(limit / 8) then
    -- Trimmed once every eighth of the limit, not every turn (reads take the last
    -- `limit`): a command less on most turns, as sled's session prunes (`sessions.rs`).
    redis.call('LTRIM', KEYS[k+1], -limit, -1)
  end
  if new == '1' then
    redis.call('SADD', KEYS[k+2], ckey)
  end
  return i
end

local function delete_task(k, id)
  local record = redis.call('HGET', KEYS[k], 'r')
  if not record then
    return false
  end
  redis.call('DEL', KEYS[k], KEYS[k+1])
  redis.call('ZREM', KEYS[k+2], id)
  redis.call('HDEL', KEYS[k+3], id)
  redis.call('HDEL', KEYS[k+4], id)
  redis.call('SREM', KEYS[k+5], id)
  redis.call('SREM', KEYS[k+6], id)
  return record
end
"#;

/// A step: KEYS = TASK_KEYS, lease, SESSION_KEYS, push stream, and the task's push configs
/// when there are templates; ARGV = lease token ("" for a write without a lease), the task
/// part, a session flag (`1` + the session part, or `0`), the job count and the jobs, the
/// template count and the templates (each: the `ARGV` index of its event, then the job's
/// JSON before its config id, between that and its body, and after: one job per config
/// of the task, `store/jobs.rs`), and a release flag (`1`: the step ends the turn, and
/// gives the lease back with it). Returns the state before ("" for a new task). A replay
/// (the very commit already stored) writes the generation it holds again, so that a
/// `WAIT` behind it counts the replicas that have the first write.
const COMMIT_BODY: &str = r#"
local lease = redis.call('GET', KEYS[8])
-- A write under a token needs that very token in the lease: one that expired, or that
-- another node took (and maybe gave back) since, is refused. A write without a token
-- needs that no node holds the lease.
local fenced = (lease or ARGV[1] ~= '') and lease ~= ARGV[1]
local before, refused, replayed = check_task(1, ARGV, 2)
if replayed then
  -- This very commit, already stored (whatever the lease is now: a commit that ended its
  -- turn gave the lease back). A write all the same (the value it had): a WAIT behind
  -- this call on its connection then covers the first write too, which came before it
  -- in the replication stream.
  redis.call('HSET', KEYS[1], 'g', ARGV[4])
  return before
end
if fenced then
  return redis.error_reply('A2AD_LEASE not held under this token')
end
if refused then
  return refused
end
-- A new task ('' before) was in no active set: no SREM for it.
local i = put_task(1, ARGV, 2, before ~= '' and (before == 'TASK_STATE_SUBMITTED' or before == 'TASK_STATE_WORKING'))
if ARGV[i] == '1' then
  i = put_session(9, ARGV, i + 1)
else
  i = i + 1
end
local jobs = tonumber(ARGV[i])
for j = 1, jobs do
  redis.call('XADD', KEYS[12], '*', 'job', ARGV[i + j])
end
i = i + jobs + 1
local templates = tonumber(ARGV[i])
if templates > 0 then
  local configs = redis.call('HKEYS', KEYS[13])
  table.sort(configs)
  for t = 0, templates - 1 do
    local at = i + 4 * t
    local body = cjson.encode(ARGV[tonumber(ARGV[at + 1])])
    for _, config in ipairs(configs) do
      redis.call('XADD', KEYS[12], '*', 'job', ARGV[at + 2] .. cjson.encode(config) .. ARGV[at + 3] .. body .. ARGV[at + 4])
    end
  end
end
if ARGV[i + 4 * templates + 1] == '1' and lease == ARGV[1] then
  redis.call('DEL', KEYS[8])
end
return before
"#;

/// A removal and/or a session write: KEYS = TASK_KEYS, SESSION_KEYS; ARGV = the task id
/// ("" for none), a session flag (`1` + the session part, or `0`). Returns the removed
/// record, or false.
const SETTLE_BODY: &str = r#"
if ARGV[2] == '1' then
  put_session(8, ARGV, 3)
end
if ARGV[1] == '' then
  return false
end
return delete_task(1, ARGV[1])
"#;

/// Forgets a session whose context has no task left: KEYS = context tasks, SESSION_KEYS;
/// ARGV = the context key. Returns 1 if it did.
pub(super) const FORGET_SESSION: &str = r#"
if redis.call('SCARD', KEYS[1]) > 0 then
  return 0
end
local removed = redis.call('DEL', KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[1])
if removed > 0 then
  return 1
end
return 0
"#;

/// The store's shard count in KEYS[1]: set to ARGV[1] if absent. Returns the one stored.
pub(super) const RECORD_LAYOUT: &str = r"
local stored = redis.call('GET', KEYS[1])
if not stored then
  redis.call('SET', KEYS[1], ARGV[1])
  return tonumber(ARGV[1])
end
return tonumber(stored)
";

/// One page of an owner's tasks: KEYS = owner index, owner filters; ARGV = lowest status
/// ms ("-inf" for none), context filter, state filter ("" for none: each filter value is
/// prefixed with `=`), cursor ms and id ("" for none), page size. Returns the total, then
/// the page's ids (one more than the page size if there is a next page).
///
/// Without a context or state filter the total is one ZCOUNT and the page one range; with
/// one, every task of the owner in the time window is looked at (one HGET each, all inside
/// Redis).
pub(super) const LIST: &str = r#"
local min, ctx, state = ARGV[1], ARGV[2], ARGV[3]
local cursor_ms, cursor_id, size = ARGV[4], ARGV[5], tonumber(ARGV[6])
local function after_cursor(ms, id)
  if cursor_id == '' then return true end
  local c = tonumber(cursor_ms)
  return ms < c or (ms == c and id < cursor_id)
end
local out = {0}
local top = '+inf'
if cursor_id ~= '' then top = cursor_ms end
if ctx == '' and state == '' then
  out[1] = redis.call('ZCOUNT', KEYS[1], min, '+inf')
  local batch = redis.call('ZREVRANGEBYSCORE', KEYS[1], top, min, 'WITHSCORES', 'LIMIT', 0, size + 1 + 64)
  local offset = 0
  while true do
    for j = 1, #batch, 2 do
      local id, ms = batch[j], tonumber(batch[j + 1])
      if #out <= size + 1 and after_cursor(ms, id) then
        out[#out + 1] = id
      end
    end
    if #out > size + 1 or #batch < 2 * (size + 1 + 64) then
      return out
    end
    offset = offset + size + 1 + 64
    batch = redis.call('ZREVRANGEBYSCORE', KEYS[1], top, min, 'WITHSCORES', 'LIMIT', offset, size + 1 + 64)
  end
end
local all = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', min, 'WITHSCORES')
for j = 1, #all, 2 do
  local id, ms = all[j], tonumber(all[j + 1])
  local meta = redis.call('HGET', KEYS[2], id) or ''
  local colon = string.find(meta, ':', 1, true) or 0
  local task_state, task_ctx = string.sub(meta, 1, colon - 1), string.sub(meta, colon + 1)
  if (ctx == '' or '=' .. task_ctx == ctx) and (state == '' or '=' .. task_state == state) then
    out[1] = out[1] + 1
    if #out <= size + 1 and after_cursor(ms, id) then
      out[#out + 1] = id
    end
  end
end
return out
"#;

/// The commit script's source.
pub(super) fn commit() -> String {
    format!("{PRELUDE}{COMMIT_BODY}")
}

/// The settle script's source.
pub(super) fn settle() -> String {
    format!("{PRELUDE}{SETTLE_BODY}")
}
