//! JSON-RPC over Redis Streams (the `redis-transport:` block).
//!
//! Nodes share the consumer group `group` on the stream `requests` (created, with the
//! stream, if missing; a new group starts at the stream's beginning). A request entry has
//! the fields `request` (the JSON-RPC text), `reply-to` (the stream the answer goes to)
//! and, with authentication on, `authorization` (an `Authorization` header value) or
//! `api-key` (an `X-Api-Key` value), checked by the node's authenticator.
//!
//! Every reply entry carries `id` (the request entry's id) and `final`:
//! * a plain answer is one entry `{id, response, final: "true"}`;
//! * a stream is one entry per frame `{id, response, final: "false"}` (`seq` = the task's
//!   event number, when the frame has one), then `{id, final: "true"}`.
//!
//! `response` is always one complete JSON-RPC response document. Reply streams are
//! trimmed to about `reply-maxlen` entries. The request is acknowledged (`XACK`) only
//! after its last reply entry is written: if writing fails, or the node dies first, it
//! stays pending and is claimed (`XAUTOCLAIM`) by a node after `claim-idle`, which answers
//! it again (at-least-once). A node keeps its running requests' entries fresh (`XCLAIM`
//! to itself) so that a long stream is not claimed away. A bad entry (no `request`, not
//! JSON, longer than `body-limit`, refused credentials) gets an error response when it names a `reply-to`, and is
//! acknowledged either way, so it is never retried forever; so is an entry whose
//! `reply-to` names a key that is not a stream (its answer cannot be written anywhere). A request refused only because
//! this node is stopping (SERVER_BUSY after the stop) is neither answered nor acknowledged:
//! another node takes it.

use crate::config::RedisTransportConfig;
use crate::core::Core;
use crate::metrics::Binding;
use crate::rpc::{self, RpcMeta, RpcOutcome};
use a2ad_protocol::jsonrpc::error_body;
use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::redact_url;
use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::streams::{StreamAutoClaimOptions, StreamAutoClaimReply, StreamId, StreamReadOptions, StreamReadReply};
use redis::{AsyncCommands, AsyncConnectionConfig, RedisResult};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Why the transport could not start. Shown to the operator; the URL's password is not.
#[derive(Debug, thiserror::Error)]
pub enum RedisTransportError {
    #[error("redis-transport.url: cannot connect to {url}: {source}")]
    Connect { url: String, source: redis::RedisError },
    #[error("redis-transport: cannot create the consumer group {group} on {stream}: {source}")]
    Group { group: String, stream: String, source: redis::RedisError },
}

/// A running transport; [`RedisTransport::stop`] ends it.
pub struct RedisTransport {
    stop: CancellationToken,
    done: tokio::task::JoinHandle<()>,
}

/// What the reading loop and the answering tasks share.
struct Shared {
    core: Arc<Core>,
    config: RedisTransportConfig,
    /// The longest `request` answered (`body-limit`, as on HTTP); longer is
    /// PAYLOAD_TOO_LARGE.
    body_limit: usize,
    /// For replies, acks and claims (the reader's connection sits in `XREADGROUP`); it
    /// reconnects by itself after Redis went away.
    writer: ConnectionManager,
    /// The entries being answered, kept fresh so that no other node claims them.
    running: Mutex<HashSet<String>>,
    /// Cancelled when the node stops reading (before its drain).
    stop: CancellationToken,
}

/// How long a command other than the blocking read may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a failed read waits before the next try.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

impl RedisTransport {
    /// Connects, creates the group if needed and starts reading.
    pub async fn start(
        core: Arc<Core>,
        config: RedisTransportConfig,
        body_limit: usize,
    ) -> Result<RedisTransport, RedisTransportError> {
        let connect_error = |source| RedisTransportError::Connect { url: redact_url(&config.url), source };
        let client = redis::Client::open(config.url.as_str()).map_err(connect_error)?;
        let block = Duration::from_millis(config.block_ms);
        let reader = connect(&client, block + COMMAND_TIMEOUT).await.map_err(connect_error)?;
        let writer_config = ConnectionManagerConfig::new()
            .set_connection_timeout(COMMAND_TIMEOUT)
            .set_response_timeout(COMMAND_TIMEOUT);
        let mut writer =
            ConnectionManager::new_with_config(client.clone(), writer_config).await.map_err(connect_error)?;
        let created: RedisResult<()> = writer.xgroup_create_mkstream(&config.requests, &config.group, "0").await;
        match created {
            Err(e) if e.code() != Some("BUSYGROUP") => {
                let (group, stream) = (config.group.clone(), config.requests.clone());
                return Err(RedisTransportError::Group { group, stream, source: e });
            }
            _ => {}
        }
        tracing::info!(stream = %config.requests, group = %config.group, consumer = %config.consumer, "redis transport reading");
        let stop = CancellationToken::new();
        let running = Mutex::new(HashSet::new());
        let shared = Arc::new(Shared { core, config, body_limit, writer, running, stop: stop.clone() });
        let done = actix_web::rt::spawn(read_loop(shared, client, reader, stop.clone()));
        Ok(RedisTransport { stop, done })
    }

    /// A token that stops the reading when cancelled (before a drain: new requests then
    /// stay in the stream for the other nodes).
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Stops reading and waits for the requests being answered.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.done.await;
    }
}

async fn connect(client: &redis::Client, response_timeout: Duration) -> RedisResult<MultiplexedConnection> {
    let config =
        AsyncConnectionConfig::new().set_connection_timeout(COMMAND_TIMEOUT).set_response_timeout(response_timeout);
    client.get_multiplexed_async_connection_with_config(&config).await
}

/// Reads (and claims) entries until stopped, then waits for the answers in flight.
async fn read_loop(
    shared: Arc<Shared>,
    client: redis::Client,
    mut reader: MultiplexedConnection,
    stop: CancellationToken,
) {
    let config = &shared.config;
    let max_in_flight = config.max_in_flight;
    let in_flight = Arc::new(Semaphore::new(max_in_flight));
    let mut last_claim: Option<Instant> = None;
    let mut claim_cursor = "0-0".to_owned();
    while !stop.is_cancelled() {
        if last_claim.is_none_or(|at| at.elapsed() >= config.claim_idle / 3) {
            last_claim = Some(Instant::now());
            refresh_running(&shared).await;
            let free = in_flight.available_permits();
            if free > 0 {
                match claim_stale(&shared, &claim_cursor, free).await {
                    Ok((next, entries)) => {
                        claim_cursor = next;
                        dispatch(&shared, &in_flight, entries);
                    }
                    Err(e) => tracing::warn!(error = %e, "redis transport: XAUTOCLAIM failed"),
                }
            }
        }
        let free = in_flight.available_permits();
        if free == 0 {
            // Woken to refresh the running entries too, while every slot stays busy.
            tokio::select! {
                _ = stop.cancelled() => break,
                permit = Arc::clone(&in_flight).acquire_owned() => drop(permit),
                _ = tokio::time::sleep(config.claim_idle / 3) => {}
            }
            continue;
        }
        let options = StreamReadOptions::default()
            .group(&config.group, &config.consumer)
            .count(free)
            .block(config.block_ms as usize);
        let read: RedisResult<Option<StreamReadReply>> =
            reader.xread_options(&[&config.requests], &[">"], &options).await;
        match read {
            // Entries read after the stop stay pending, to be claimed by a running node.
            Ok(_) if stop.is_cancelled() => break,
            Ok(reply) => {
                let entries = reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids).collect();
                dispatch(&shared, &in_flight, entries);
            }
            Err(e) => recover(&shared, &client, &mut reader, &e).await,
        }
    }
    // Every permit back: no answer is being written any more.
    let all = u32::try_from(max_in_flight).unwrap_or(u32::MAX);
    let _ = in_flight.acquire_many(all).await;
}

/// After a failed read: creates the group again if it is gone, else reconnects the reader.
async fn recover(
    shared: &Shared,
    client: &redis::Client,
    reader: &mut MultiplexedConnection,
    error: &redis::RedisError,
) {
    let config = &shared.config;
    tokio::time::sleep(RETRY_PAUSE).await;
    if error.code() == Some("NOGROUP") {
        tracing::warn!("redis transport: the stream or group is gone; creating it again");
        let created: RedisResult<()> =
            shared.writer.clone().xgroup_create_mkstream(&config.requests, &config.group, "0").await;
        match created {
            Err(e) if e.code() != Some("BUSYGROUP") => {
                tracing::warn!(error = %e, "redis transport: cannot create the group");
            }
            _ => {}
        }
        return;
    }
    tracing::warn!(error = %error, "redis transport: XREADGROUP failed; reconnecting");
    let block = Duration::from_millis(config.block_ms);
    if let Ok(fresh) = connect(client, block + COMMAND_TIMEOUT).await {
        *reader = fresh;
    }
}

/// Claims entries idle for `claim-idle` on any consumer (one that died, most likely).
async fn claim_stale(shared: &Shared, cursor: &str, count: usize) -> RedisResult<(String, Vec<StreamId>)> {
    let config = &shared.config;
    let idle = u64::try_from(config.claim_idle.as_millis()).unwrap_or(u64::MAX);
    let options = StreamAutoClaimOptions::default().count(count);
    let mut writer = shared.writer.clone();
    let reply: StreamAutoClaimReply =
        writer.xautoclaim_options(&config.requests, &config.group, &config.consumer, idle, cursor, options).await?;
    if !reply.claimed.is_empty() {
        tracing::info!(entries = reply.claimed.len(), "redis transport: claimed entries idle on another consumer");
    }
    Ok((reply.next_stream_id, reply.claimed))
}

/// Resets the idle time of the entries being answered (`XCLAIM ... JUSTID` to ourselves).
async fn refresh_running(shared: &Shared) {
    let ids: Vec<String> = shared.running.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
    if ids.is_empty() {
        return;
    }
    let config = &shared.config;
    let mut claim = redis::cmd("XCLAIM");
    claim.arg(&config.requests).arg(&config.group).arg(&config.consumer).arg(0).arg(&ids).arg("JUSTID");
    let refreshed: RedisResult<redis::Value> = claim.query_async(&mut shared.writer.clone()).await;
    if let Err(e) = refreshed {
        tracing::warn!(error = %e, "redis transport: cannot refresh running entries");
    }
}

/// Starts one answering task per entry; each holds a permit (the read asked for no more).
fn dispatch(shared: &Arc<Shared>, in_flight: &Arc<Semaphore>, entries: Vec<StreamId>) {
    for entry in entries {
        let Ok(permit) = Arc::clone(in_flight).try_acquire_owned() else {
            // Cannot happen (reads ask for the free permits only); left pending if it does.
            tracing::warn!("redis transport: no free slot for an entry; it stays pending");
            continue;
        };
        shared.running.lock().unwrap_or_else(|p| p.into_inner()).insert(entry.id.clone());
        actix_web::rt::spawn(answer(Arc::clone(shared), entry, permit));
    }
}

/// Answers one entry, then acknowledges it (unless the answer could not be written).
async fn answer(shared: Arc<Shared>, entry: StreamId, _permit: OwnedSemaphorePermit) {
    let field = |name: &str| entry.map.get(name).and_then(|v| redis::from_redis_value::<String>(v).ok());
    let written = match field("reply-to").filter(|r| !r.is_empty()) {
        Some(reply_to) => {
            let credentials = crate::auth::RequestCredentials {
                authorization: field("authorization"),
                api_key: field("api-key"),
                platform_user_id: field("platform-user-id"),
            };
            let request = Request { entry_id: &entry.id, reply_to: &reply_to, text: field("request") };
            respond(&shared, request, &credentials).await
        }
        None => {
            tracing::warn!(entry = %entry.id, "redis transport: an entry without reply-to is acknowledged unanswered");
            Ok(Handled::Answered)
        }
    };
    shared.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&entry.id);
    let config = &shared.config;
    match written {
        Ok(Handled::LeftPending) => {
            tracing::info!(entry = %entry.id, "redis transport: the node is stopping; the entry stays pending for another node");
        }
        Ok(Handled::Answered) => {
            let acked: RedisResult<i64> =
                shared.writer.clone().xack(&config.requests, &config.group, &[&entry.id]).await;
            if let Err(e) = acked {
                tracing::warn!(error = %e, entry = %entry.id, "redis transport: XACK failed; the entry will be answered again");
            }
        }
        Err(e) if fails_for_this_entry(&e) => {
            tracing::warn!(error = %e, entry = %entry.id, "redis transport: the entry's reply-to is not a stream; acknowledged unanswered");
            let acked: RedisResult<i64> =
                shared.writer.clone().xack(&config.requests, &config.group, &[&entry.id]).await;
            if let Err(e) = acked {
                tracing::warn!(error = %e, entry = %entry.id, "redis transport: XACK failed");
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, entry = %entry.id, "redis transport: cannot write the answer; the entry stays pending");
        }
    }
}

/// Whether writing a reply failed because of the entry itself (its `reply-to` names a key
/// that holds no stream): answering it again would fail the same way, after running the
/// request once more, so it is acknowledged rather than left to be claimed forever.
fn fails_for_this_entry(error: &redis::RedisError) -> bool {
    error.code() == Some("WRONGTYPE")
}

/// What became of an entry.
enum Handled {
    /// Its reply entries are written: acknowledge it.
    Answered,
    /// Refused only because this node is stopping: leave it for another node.
    LeftPending,
}

/// A request entry's parts.
struct Request<'a> {
    entry_id: &'a str,
    reply_to: &'a str,
    text: Option<String>,
}

/// Authenticates, answers and writes the reply entries.
async fn respond(
    shared: &Shared,
    request: Request<'_>,
    credentials: &crate::auth::RequestCredentials,
) -> RedisResult<Handled> {
    let started = Instant::now();
    let core = &shared.core;
    // Entries carry no client address: every Redis client shares one failure bucket.
    let owner = match core.authenticate(credentials, crate::auth::ClientAddr::Local).await {
        Ok(owner) => owner,
        Err(e) => {
            if let Some(limited) = e.rate_limited() {
                super::record(core, Binding::Redis, None, limited.code.info().reason, started);
                return write_single(shared, &request, &error_body(&serde_json::Value::Null, &limited)).await;
            }
            tracing::info!(reason = %e, "redis transport: request refused: not authenticated");
            let refused = rpc::unauthenticated(request.text.as_deref().unwrap_or_default().as_bytes(), None);
            super::record_answer(core, Binding::Redis, &refused, started);
            // A refusal is always one response.
            let RpcOutcome::Single(body) = &refused.outcome else { return Ok(Handled::Answered) };
            return write_single(shared, &request, body).await;
        }
    };
    let Some(text) = request.text.as_deref() else {
        let missing = A2aError::new(ErrorCode::InvalidRequest, "The entry has no `request` field");
        super::record(core, Binding::Redis, None, missing.code.info().reason, started);
        return write_single(shared, &request, &error_body(&serde_json::Value::Null, &missing)).await;
    };
    if text.len() > shared.body_limit {
        let too_large = A2aError::of(ErrorCode::PayloadTooLarge);
        crate::core::report(&too_large);
        super::record(core, Binding::Redis, None, too_large.code.info().reason, started);
        return write_single(shared, &request, &error_body(&serde_json::Value::Null, &too_large)).await;
    }
    let answer = rpc::handle_bytes(core, &owner, text.as_bytes(), &RpcMeta::default()).await;
    if shared.stop.is_cancelled() && answer.error.as_ref().is_some_and(|e| e.code == ErrorCode::ServerBusy) {
        return Ok(Handled::LeftPending);
    }
    super::record_answer(core, Binding::Redis, &answer, started);
    match answer.outcome {
        RpcOutcome::Single(body) => write_single(shared, &request, &body).await,
        // A notification: acknowledged, never answered.
        RpcOutcome::Silent => Ok(Handled::Answered),
        RpcOutcome::Stream(stream) => {
            let _open = core.metrics().open_stream();
            let mut frames = stream.frames();
            while let Some(frame) = frames.next().await {
                let seq = frame.seq.map(|s| s.to_string());
                let mut fields = vec![("response", frame.data.as_str()), ("final", "false")];
                if let Some(seq) = &seq {
                    fields.push(("seq", seq));
                }
                write_entry(shared, &request, &fields).await?;
            }
            write_entry(shared, &request, &[("final", "true")]).await?;
            Ok(Handled::Answered)
        }
    }
}

async fn write_single(shared: &Shared, request: &Request<'_>, body: &[u8]) -> RedisResult<Handled> {
    let body = String::from_utf8_lossy(body);
    write_entry(shared, request, &[("response", &body), ("final", "true")]).await?;
    Ok(Handled::Answered)
}

/// `XADD reply-to MAXLEN ~ reply-maxlen * id <entry id> <fields>`.
async fn write_entry(shared: &Shared, request: &Request<'_>, fields: &[(&str, &str)]) -> RedisResult<()> {
    let mut add = redis::cmd("XADD");
    add.arg(request.reply_to).arg("MAXLEN").arg("~").arg(shared.config.reply_maxlen).arg("*");
    add.arg("id").arg(request.entry_id);
    for (name, value) in fields {
        add.arg(*name).arg(*value);
    }
    let _: String = add.query_async(&mut shared.writer.clone()).await?;
    Ok(())
}
