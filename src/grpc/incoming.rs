//! The gRPC listener's connections: at most `max-connections` at once, each with its
//! socket known to the streams it carries (to cap its send buffer and reset it when a
//! client stops reading, see [`crate::connection`]).

use crate::connection::{ConnHandle, ConnSocket};
use futures_util::stream::{self, Stream};
use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::transport::server::Connected;

/// What a gRPC request finds in its extensions about the connection it came on.
#[derive(Debug, Clone)]
pub struct GrpcConnInfo {
    pub socket: Arc<ConnSocket>,
    /// The client's address (tonic's `Request::remote_addr` reads only its own
    /// connection info, which a listener of our own does not give): failed
    /// authentications are throttled by it.
    pub peer: Option<std::net::SocketAddr>,
}

/// One accepted connection, holding its place under `max-connections`. Fields drop in
/// order: the handle marks the socket closed before the stream closes its descriptor.
pub struct GrpcConn {
    handle: ConnHandle,
    peer: Option<std::net::SocketAddr>,
    tcp: TcpStream,
    _place: OwnedSemaphorePermit,
}

/// The connections of `listener`, one place each out of `max_connections`: past it, the
/// next is not accepted (it waits in the listen backlog) until one closes.
pub fn incoming(listener: TcpListener, max_connections: usize) -> impl Stream<Item = io::Result<GrpcConn>> {
    let places = Arc::new(Semaphore::new(max_connections.max(1)));
    stream::unfold((listener, places), |(listener, places)| async move {
        let accepted = accept(&listener, &places).await;
        Some((accepted, (listener, places)))
    })
}

async fn accept(listener: &TcpListener, places: &Arc<Semaphore>) -> io::Result<GrpcConn> {
    let place = Arc::clone(places).acquire_owned().await.map_err(io::Error::other)?;
    let (tcp, peer) = match listener.accept().await {
        Ok((tcp, peer)) => (tcp, Some(peer)),
        Err(e) => {
            // Out of descriptors, say: tonic skips the error and asks again, so wait a
            // moment instead of spinning.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            return Err(e);
        }
    };
    // Every small stream message goes out at once (as HTTP's `tcp_nodelay`).
    tcp.set_nodelay(true)?;
    let handle = ConnHandle(ConnSocket::new(tcp.as_raw_fd()));
    Ok(GrpcConn { handle, peer, tcp, _place: place })
}

impl Connected for GrpcConn {
    type ConnectInfo = GrpcConnInfo;

    fn connect_info(&self) -> GrpcConnInfo {
        GrpcConnInfo { socket: Arc::clone(&self.handle.0), peer: self.peer }
    }
}

impl AsyncRead for GrpcConn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for GrpcConn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}
