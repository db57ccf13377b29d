//! A deadline for a connection's first bytes.
//!
//! hyper's `header_read_timeout` closes a connection that is slow to send a
//! request's head once hyper is reading one, and between keep-alive
//! requests. But axum-server first reads the connection to tell HTTP/1 from
//! HTTP/2, with no deadline, so a client that connects (or completes the TLS
//! handshake) and then sends nothing held its connection, and a file
//! descriptor, for ever: the security suite (K1) found 150 of 150 such
//! connections still open after 30 s. [`FirstBytes`] wraps the acceptor so
//! that a connection whose first read has not returned data within the
//! deadline fails with `TimedOut` and is closed.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum_server::accept::Accept;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Wraps an acceptor: its streams must deliver their first bytes within
/// `limit` of being accepted (after the TLS handshake, for TLS).
#[derive(Clone, Debug)]
pub struct FirstBytes<A> {
    inner: A,
    limit: Duration,
}

impl<A> FirstBytes<A> {
    pub fn new(inner: A, limit: Duration) -> Self {
        FirstBytes { inner, limit }
    }
}

type Accepted<S, V> = Pin<Box<dyn Future<Output = io::Result<(Deadline<S>, V)>> + Send>>;

impl<A, I, S> Accept<I, S> for FirstBytes<A>
where
    A: Accept<I, S>,
    A::Future: Send + 'static,
    A::Stream: Send + 'static,
    A::Service: Send + 'static,
{
    type Stream = Deadline<A::Stream>;
    type Service = A::Service;
    type Future = Accepted<A::Stream, A::Service>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let accepted = self.inner.accept(stream, service);
        let limit = self.limit;
        Box::pin(async move {
            let (stream, service) = accepted.await?;
            Ok((Deadline { inner: stream, first: Some(Box::pin(tokio::time::sleep(limit))) }, service))
        })
    }
}

/// A stream whose first read must return data before `first` fires.
#[derive(Debug)]
pub struct Deadline<S> {
    inner: S,
    first: Option<Pin<Box<Sleep>>>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Deadline<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match polled {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                self.first = None;
                Poll::Ready(Ok(()))
            }
            Poll::Pending => match self.first.as_mut().map(|sleep| sleep.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "no request within the read timeout"))),
                _ => Poll::Pending,
            },
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deadline<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
