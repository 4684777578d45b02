//! An accepted connection's socket, and how a stream whose client does not read is
//! dropped.
//!
//! A client that opens a stream and never reads it is held up by nothing of ours: the
//! kernel keeps taking our writes (send buffers grow to megabytes per socket) until it
//! cannot, and then the server simply stops writing, for ever. So every streaming
//! response is bounded twice:
//!
//! * in bytes: its socket's send buffer is capped (`stream-send-buffer`, `SO_SNDBUF`), so
//!   what a stream may have queued is that, the server's own write buffer and the node's
//!   subscriber buffer (`stream-buffer` events);
//! * in time: each event must be taken by the socket within `stream-write-timeout`
//!   ([`Watched`] sees when the server asks for the next one). A stream that misses it
//!   ends as a slow subscriber does, with SubscriberTooSlow naming the last event
//!   delivered (the resume id), as soon as the socket lets that through; a socket that
//!   does not within one more `stream-write-timeout`, or that still holds unsent bytes that
//!   long after its stream ended, is reset ([`ConnSocket::abort`]).

use futures_util::task::ArcWake;
use futures_util::Stream;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How streams whose client does not read are bounded (`stream-write-timeout`,
/// `stream-send-buffer`).
#[derive(Debug, Clone, Copy)]
pub struct StreamBounds {
    /// How long one event may wait for the socket to take it.
    pub write_timeout: Duration,
    /// The `SO_SNDBUF` of a connection that carries a stream, in bytes.
    pub send_buffer: usize,
}

/// The socket of one accepted connection (TCP or Unix), by descriptor, for capping its
/// send buffer and resetting it. The descriptor is only touched while the connection is
/// known to be open: whoever owns the connection calls [`ConnSocket::closed`] (through
/// [`ConnHandle`]'s drop) before the descriptor is closed, under the same lock.
#[derive(Debug)]
pub struct ConnSocket {
    fd: RawFd,
    open: Mutex<bool>,
}

impl ConnSocket {
    pub fn new(fd: RawFd) -> Arc<ConnSocket> {
        Arc::new(ConnSocket { fd, open: Mutex::new(true) })
    }

    /// Runs `f` on the descriptor if the connection is still open.
    fn with_fd<T>(&self, f: impl FnOnce(RawFd) -> T) -> Option<T> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.then(|| f(self.fd))
    }

    /// Caps the kernel's send buffer (the kernel doubles the value for its bookkeeping).
    pub fn limit_send_buffer(&self, bytes: usize) {
        let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        self.with_fd(|fd| set_int_option(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, value));
    }

    /// Bytes written to the socket and not yet taken by the peer.
    pub fn unsent(&self) -> usize {
        self.with_fd(|fd| {
            let mut queued: libc::c_int = 0;
            // SAFETY: `fd` is an open socket (checked under the lock); TIOCOUTQ writes one int.
            let done = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut queued) };
            if done == 0 {
                usize::try_from(queued).unwrap_or(0)
            } else {
                0
            }
        })
        .unwrap_or(0)
    }

    /// Resets the connection: what it still holds is discarded (no lingering close), and
    /// the server that owns it sees an error on its next read or write and drops it.
    pub fn abort(&self) {
        self.with_fd(|fd| {
            let linger = libc::linger { l_onoff: 1, l_linger: 0 };
            // SAFETY: `fd` is an open socket (checked under the lock); the option is a `linger`.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
                libc::shutdown(fd, libc::SHUT_RDWR);
            }
        });
    }

    /// The connection is gone: the descriptor may be reused from now on.
    pub fn closed(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = false;
    }
}

fn set_int_option(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) {
    // SAFETY: `fd` is an open socket (the caller holds the lock); the option is one int.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Owned by the connection (actix's connection data, the gRPC connection): dropping it
/// marks the socket closed, before the connection's descriptor is closed.
#[derive(Debug)]
pub struct ConnHandle(pub Arc<ConnSocket>);

impl Drop for ConnHandle {
    fn drop(&mut self) {
        self.0.closed();
    }
}

/// actix's `on_connect`: gives every HTTP connection (TCP or Unix socket) its
/// [`ConnHandle`], which handlers find with `req.conn_data::<ConnHandle>()`.
pub fn on_http_connect(connection: &dyn std::any::Any, data: &mut actix_web::dev::Extensions) {
    use std::os::fd::AsRawFd;
    let fd = if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
        if let Ok(local) = tcp.local_addr() {
            data.insert(LocalAddr(local));
        }
        tcp.as_raw_fd()
    } else if let Some(unix) = connection.downcast_ref::<actix_web::rt::net::UnixStream>() {
        unix.as_raw_fd()
    } else {
        return;
    };
    data.insert(ConnHandle(ConnSocket::new(fd)));
}

/// The local address a TCP connection came to (the node's own address the client
/// reached, which on a wildcard listener is one interface's): what a card advertises
/// when no `public-url` names one ([`crate::http::card`]).
#[derive(Debug, Clone, Copy)]
pub struct LocalAddr(pub std::net::SocketAddr);

/// The local address the connection `req` came on arrived at; `None` on a Unix socket.
pub fn local_addr_of(req: &actix_web::HttpRequest) -> Option<std::net::SocketAddr> {
    req.conn_data::<LocalAddr>().map(|local| local.0)
}

/// `http://<address>` of the local address `req` came to (canonical: an IPv4 address
/// mapped into IPv6 reads as IPv4), which the cards of a wildcard listener name.
pub fn base_url_of(req: &actix_web::HttpRequest) -> Option<String> {
    let local = local_addr_of(req)?;
    Some(format!("http://{}", std::net::SocketAddr::new(local.ip().to_canonical(), local.port())))
}

/// The socket of the connection `req` came on.
pub fn socket_of(req: &actix_web::HttpRequest) -> Option<Arc<ConnSocket>> {
    req.conn_data::<ConnHandle>().map(|handle| Arc::clone(&handle.0))
}

/// After a stream's last write: its bytes get `timeout` to leave the socket, else the
/// socket is reset (a client that never reads would otherwise hold it for ever).
pub async fn drain_or_abort(socket: &ConnSocket, timeout: Duration) {
    tokio::time::sleep(timeout).await;
    if socket.unsent() > 0 {
        socket.abort();
    }
}

/// Whether an event waits for the server to take it.
#[derive(Debug, Default)]
struct Progress {
    /// Since when an event has waited: the stream yielded one the server has not asked
    /// past yet, or woke the server for one it has not come for.
    waiting_since: Option<Instant>,
    /// The stream was dropped (ended, or its connection went).
    dropped: bool,
    /// The server's waker, woken on the stream's behalf.
    waker: Option<Waker>,
}

/// The waker the stream gets: it notes when the stream has something for the server.
struct WakeRecorder(Arc<Mutex<Progress>>);

impl ArcWake for WakeRecorder {
    fn wake_by_ref(recorder: &Arc<Self>) {
        let waker = {
            let mut progress = recorder.0.lock().unwrap_or_else(|p| p.into_inner());
            progress.waiting_since.get_or_insert_with(Instant::now);
            progress.waker.clone()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// A stream as the server writes it, watched for a socket that stops taking events: the
/// server coming back for the next item means the last one was taken; a server that does
/// not come although the stream has something (it woke the server) is held up by its
/// socket.
pub struct Watched<S> {
    inner: S,
    progress: Arc<Mutex<Progress>>,
    recorder: Waker,
}

impl<S: Stream + Unpin> Stream for Watched<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        {
            let mut progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
            progress.waiting_since = None;
            if !progress.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                progress.waker = Some(cx.waker().clone());
            }
        }
        let recorder = self.recorder.clone();
        let polled = Pin::new(&mut self.inner).poll_next(&mut Context::from_waker(&recorder));
        if let Poll::Ready(Some(_)) = polled {
            self.progress.lock().unwrap_or_else(|p| p.into_inner()).waiting_since = Some(Instant::now());
        }
        polled
    }
}

impl<S> Drop for Watched<S> {
    fn drop(&mut self) {
        self.progress.lock().unwrap_or_else(|p| p.into_inner()).dropped = true;
    }
}

/// Watches `stream` on `socket` (when the connection has one): caps the socket's send
/// buffer now, cancels `stalled` when an event waited `write_timeout` for the socket (the
/// stream should then end with its resume id), and resets the socket when even that does
/// not get out in time. Must be called inside a tokio runtime.
pub fn watch<S: Stream + Unpin>(
    stream: S,
    socket: Option<Arc<ConnSocket>>,
    bounds: StreamBounds,
    stalled: CancellationToken,
) -> Watched<S> {
    let progress = Arc::new(Mutex::new(Progress::default()));
    if let Some(socket) = socket {
        socket.limit_send_buffer(bounds.send_buffer);
        tokio::spawn(watchdog(Arc::clone(&progress), socket, bounds.write_timeout, stalled));
    }
    let recorder = futures_util::task::waker(Arc::new(WakeRecorder(Arc::clone(&progress))));
    Watched { inner: stream, progress, recorder }
}

/// The watchdog of one stream: see [`watch`].
async fn watchdog(
    progress: Arc<Mutex<Progress>>,
    socket: Arc<ConnSocket>,
    timeout: Duration,
    stalled: CancellationToken,
) {
    let tick = (timeout / 4).max(Duration::from_millis(5));
    loop {
        tokio::time::sleep(tick).await;
        let (waiting, dropped) = {
            let progress = progress.lock().unwrap_or_else(|p| p.into_inner());
            (progress.waiting_since.map(|t| t.elapsed()), progress.dropped)
        };
        if dropped {
            return drain_or_abort(&socket, timeout).await;
        }
        match waiting {
            Some(waited) if waited >= timeout.saturating_mul(2) => return socket.abort(),
            Some(waited) if waited >= timeout => stalled.cancel(),
            _ => {}
        }
    }
}
