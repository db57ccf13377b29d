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
//!
//! It also keeps HTTP/2 out. The server speaks HTTP/1.1 (TLS's ALPN offers
//! nothing else, and the clients it serves speak it), but axum-server
//! serves HTTP/2 to a client that opens with its preface, and an HTTP/2
//! connection has none of HTTP/1's read timeouts: one that sent the preface
//! and then nothing stayed open for ever. So the deadline holds until the
//! first bytes are known not to be the preface (a request line starting
//! `PRI` is the only one that can be), and a connection that sends the
//! preface is refused.

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
pub(crate) struct FirstBytes<A> {
    inner: A,
    limit: Duration,
}

impl<A> FirstBytes<A> {
    pub(crate) fn new(inner: A, limit: Duration) -> Self {
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
            Ok((Deadline { inner: stream, first: Some(Box::pin(tokio::time::sleep(limit))), preface: 0 }, service))
        })
    }
}

/// The bytes an HTTP/2 connection opens with (RFC 9113 §3.4), up to where
/// no HTTP/1 request line can match them.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n";

/// A stream whose first bytes must come before `first` fires, and must not
/// be HTTP/2's preface.
#[derive(Debug)]
pub(crate) struct Deadline<S> {
    inner: S,
    /// Armed until the first bytes are known not to be HTTP/2's preface.
    first: Option<Pin<Box<Sleep>>>,
    /// How many of the preface's bytes the connection has sent so far.
    preface: usize,
}

impl<S> Deadline<S> {
    /// Follows `new` bytes through the preface: `Err` when the whole of it
    /// came; the deadline goes once a byte differs from it.
    fn follow(&mut self, new: &[u8]) -> io::Result<()> {
        for b in new {
            if H2_PREFACE.get(self.preface) != Some(b) {
                self.first = None;
                return Ok(());
            }
            self.preface += 1;
            if self.preface == H2_PREFACE.len() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "HTTP/2 is not served"));
            }
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Deadline<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match polled {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                if self.first.is_some() {
                    let new = buf.filled().get(before..).unwrap_or_default().to_vec();
                    if let Err(e) = self.follow(&new) {
                        return Poll::Ready(Err(e));
                    }
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn deadline() -> Deadline<()> {
        Deadline { inner: (), first: Some(Box::pin(tokio::time::sleep(Duration::from_secs(10)))), preface: 0 }
    }

    #[tokio::test]
    async fn http1_request_lines_decide_at_once_and_the_preface_is_refused_however_split() {
        for line in [&b"POST /vedauth/authorize/token HTTP/1.1\r\n"[..], b"GET / HTTP/1.1\r\n", b"PRINT / HTTP/1.1\r\n", b"\r\n"] {
            let mut d = deadline();
            d.follow(line).unwrap();
            assert!(d.first.is_none(), "{:?}: decided, the deadline gone", String::from_utf8_lossy(line));
        }
        let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        for split in 1..H2_PREFACE.len() {
            let mut d = deadline();
            d.follow(&preface[..split]).unwrap();
            assert!(d.first.is_some(), "{split} bytes of the preface: not decided, the deadline holds");
            assert_eq!(d.follow(&preface[split..]).unwrap_err().kind(), io::ErrorKind::InvalidData);
        }
        assert!(deadline().follow(preface).is_err());
    }
}
