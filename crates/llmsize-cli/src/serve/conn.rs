//! The connection loop: accepting within [`MAX_CONNECTIONS`], serving each connection with
//! hyper's HTTP/1 server under the header, body and write timeouts, and reading each body
//! whole (within [`BODY_LIMIT`], [`BODY_TIMEOUT`] and [`BODY_BUDGET`]) before the router sees
//! the request.
//!
//! At the limit, a new connection closes the one that has waited longest for its client (the
//! least recently heard from, among those not being answered: idle between requests, or
//! sending a request's headers or body slowly), not itself: every client
//! of this server is 127.0.0.1, so one that opens connections by the hundred cannot be told
//! from the page, and refusing newcomers would let it lock everyone out for as long as it
//! keeps them open. Only when every connection is being answered is a newcomer closed at once.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Sleep;
use tower::ServiceExt as _;

use super::{
    ACCEPT_BACKOFF, BODY_BUDGET, BODY_LIMIT, BODY_TIMEOUT, HEADER_TIMEOUT, MAX_CONNECTIONS,
    WRITE_TIMEOUT, plain,
};

/// Accept connections and serve each with `router`, for ever.
pub(crate) async fn serve(listener: TcpListener, router: Router) {
    let open = Arc::new(Connections::default());
    let budget = Arc::new(Budget::default());
    loop {
        // Out of descriptors (another program's, or the system's) or a connection reset
        // before it was accepted: wait a moment rather than spin on the error.
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            continue;
        };
        let Some(slot) = open.admit() else {
            drop(stream);
            continue;
        };
        // Answers are written whole; Nagle would only delay the last segment.
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            stream,
            slot,
            Arc::clone(&open),
            router.clone(),
            Arc::clone(&budget),
        ));
        // Let the new connection read what its client has sent before the next accept: a
        // burst of connections must not evict each other before any is heard from (tokio
        // would otherwise accept up to its budget of 128 at once).
        tokio::task::yield_now().await;
    }
}

/// One connection, until the client closes it, a timeout cuts it or a newcomer evicts it.
async fn connection(
    stream: TcpStream,
    slot: Arc<Slot>,
    open: Arc<Connections>,
    router: Router,
    budget: Arc<Budget>,
) {
    let service = {
        let slot = Arc::clone(&slot);
        hyper::service::service_fn(move |request: Request<Incoming>| {
            let (router, slot, budget) = (router.clone(), Arc::clone(&slot), Arc::clone(&budget));
            async move { Ok::<_, Infallible>(respond(request, router, &slot, &budget).await) }
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    // hyper starts the header timer when it waits for a request: on a new connection and
    // again once an answer is written, so it is the idle keep-alive timeout too.
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let served = http.serve_connection(
        TokioIo::new(Stalls::new(stream, Arc::clone(&slot))),
        service,
    );
    tokio::select! {
        // A timeout, a reset or a malformed request ends the connection: nothing to report.
        _ = served => {}
        () = slot.evicted.notified() => {}
    }
    open.release(slot.id);
}

/// A request's answer: its body read whole, then the router's response.
async fn respond(
    request: Request<Incoming>,
    router: Router,
    slot: &Arc<Slot>,
    budget: &Arc<Budget>,
) -> Response {
    let (parts, body) = request.into_parts();
    let (bytes, _held) = match receive(&parts.headers, body, budget).await {
        Ok(received) => received,
        Err(refusal) => return refusal,
    };
    let _busy = slot.busy();
    match router
        .oneshot(Request::from_parts(parts, Body::from(bytes)))
        .await
    {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// The whole body, within [`BODY_TIMEOUT`] of its headers (a deadline for the body, not for
/// each chunk: a body trickled a byte at a time is cut like a stalled one), [`BODY_LIMIT`]
/// and the server's [`BODY_BUDGET`]; or the refusal to answer.
async fn receive(
    headers: &HeaderMap,
    mut body: Incoming,
    budget: &Arc<Budget>,
) -> Result<(Bytes, Held), Response> {
    let mut held = Held::new(budget);
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        return Err(too_large());
    }
    let deadline = tokio::time::Instant::now() + BODY_TIMEOUT;
    let mut chunks = Vec::new();
    let mut len = 0_usize;
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return Err(slow_body()),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(closing(plain(
                    StatusCode::BAD_REQUEST,
                    format!("error: the request's body could not be read: {e}\n"),
                )));
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        len = len.saturating_add(data.len());
        if len > BODY_LIMIT {
            return Err(too_large());
        }
        if !held.take(data.len()) {
            return Err(over_budget());
        }
        chunks.push(data);
    }
    let bytes = match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.pop().unwrap_or_default(),
        _ => Bytes::from(chunks.concat()),
    };
    Ok((bytes, held))
}

/// 413, before the body is read whole.
fn too_large() -> Response {
    closing(plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "error: the request's body is larger than {} MiB\n\nhint: POST the text of a config.json, or a .safetensors file's header only\n",
            BODY_LIMIT >> 20
        ),
    ))
}

/// 408: the body did not arrive whole within its deadline.
fn slow_body() -> Response {
    closing(plain(
        StatusCode::REQUEST_TIMEOUT,
        format!(
            "error: the request's body did not arrive within {} s\n",
            BODY_TIMEOUT.as_secs()
        ),
    ))
}

/// 503: the bodies already received fill the server's budget.
fn over_budget() -> Response {
    let mut response = closing(plain(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "error: the server holds {} MiB of request bodies already\n\nhint: try again in a moment\n",
            BODY_BUDGET >> 20
        ),
    ));
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// `Connection: close`: the rest of a refused body is not read, so the connection cannot
/// carry another request.
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The bytes of request bodies the server holds (received, or being answered).
#[derive(Debug, Default)]
struct Budget(AtomicUsize);

/// One request's share of the [`Budget`], given back when the answer is done.
#[derive(Debug)]
struct Held {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Held {
    fn new(budget: &Arc<Budget>) -> Self {
        Held {
            budget: Arc::clone(budget),
            bytes: 0,
        }
    }

    /// Count `n` more bytes; false when the server's bodies then exceed [`BODY_BUDGET`].
    fn take(&mut self, n: usize) -> bool {
        let before = self.budget.0.fetch_add(n, Ordering::Relaxed);
        self.bytes = self.bytes.saturating_add(n);
        before.saturating_add(n) <= BODY_BUDGET
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.0.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// The open connections.
#[derive(Debug, Default)]
struct Connections(Mutex<Registry>);

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    open: HashMap<u64, Arc<Slot>>,
}

/// One open connection: whether it is being answered, and how to close it from outside.
#[derive(Debug)]
struct Slot {
    id: u64,
    /// When its client was last heard from (the connection opened, bytes arrived, an answer
    /// was made); `None` while a request is being answered.
    heard: Mutex<Option<Instant>>,
    /// Notified when a newcomer takes its place.
    evicted: Notify,
}

/// A lock, whoever panicked holding it (the data are a map and a time, never half-written).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connections {
    /// A slot for a new connection: a free one, or the one that has waited longest for its
    /// client, closed; `None` when all [`MAX_CONNECTIONS`] are being answered.
    fn admit(&self) -> Option<Arc<Slot>> {
        let mut registry = lock(&self.0);
        if registry.open.len() >= MAX_CONNECTIONS {
            let (_, oldest) = registry
                .open
                .values()
                .filter_map(|slot| slot.heard().map(|since| (since, slot.id)))
                .min()?;
            if let Some(slot) = registry.open.remove(&oldest) {
                slot.evicted.notify_one();
            }
        }
        registry.next = registry.next.wrapping_add(1);
        let slot = Arc::new(Slot {
            id: registry.next,
            heard: Mutex::new(Some(Instant::now())),
            evicted: Notify::new(),
        });
        registry.open.insert(slot.id, Arc::clone(&slot));
        Some(slot)
    }

    fn release(&self, id: u64) {
        lock(&self.0).open.remove(&id);
    }
}

impl Slot {
    fn heard(&self) -> Option<Instant> {
        *lock(&self.heard)
    }

    /// Bytes arrived: a client sending its request is not the one to close for a newcomer.
    fn hear(&self) {
        let mut heard = lock(&self.heard);
        if heard.is_some() {
            *heard = Some(Instant::now());
        }
    }

    /// Mark the connection as being answered until the guard is dropped.
    fn busy(self: &Arc<Self>) -> Busy {
        *lock(&self.heard) = None;
        Busy(Arc::clone(self))
    }
}

/// A connection being answered: it waits for its client again from the guard's drop.
#[derive(Debug)]
struct Busy(Arc<Slot>);

impl Drop for Busy {
    fn drop(&mut self) {
        *lock(&self.0.heard) = Some(Instant::now());
    }
}

/// A connection's socket: its writes fail once the client has taken no byte for
/// [`WRITE_TIMEOUT`] (hyper has no write timeout, and a client that never reads its answer
/// would otherwise hold the connection for ever), and its reads tell the [`Slot`] the client
/// was heard from.
#[derive(Debug)]
struct Stalls {
    stream: TcpStream,
    slot: Arc<Slot>,
    /// Running while a write waits for the client.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Stalls {
    fn new(stream: TcpStream, slot: Arc<Slot>) -> Self {
        Stalls {
            stream,
            slot,
            stalled: None,
        }
    }

    /// A write's result, or `TimedOut` once writes have been pending for [`WRITE_TIMEOUT`].
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if result.is_ready() {
            self.stalled = None;
            return result;
        }
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_TIMEOUT)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took no byte of the answer",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Stalls {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.slot.hear();
        }
        result
    }
}

impl AsyncWrite for Stalls {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.watch(cx, result)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.watch(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_flush(cx);
        this.watch(cx, result)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_shutdown(cx);
        this.watch(cx, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// At the limit a newcomer takes the place of the connection that has waited longest for
    /// its client; a connection being answered is never closed; when all are, the newcomer is
    /// refused.
    #[test]
    fn a_newcomer_closes_the_longest_waiting_connection() {
        let open = Connections::default();
        let slots: Vec<_> = (0..MAX_CONNECTIONS)
            .map(|_| open.admit().unwrap())
            .collect();
        // The first is being answered and the second has just sent bytes, so the third is
        // the one that has waited longest.
        let answering = slots[0].busy();
        slots[1].hear();
        let newcomer = open.admit().unwrap();
        assert_eq!(lock(&open.0).open.len(), MAX_CONNECTIONS);
        assert!(!lock(&open.0).open.contains_key(&slots[2].id));
        assert!(lock(&open.0).open.contains_key(&slots[0].id));
        assert!(lock(&open.0).open.contains_key(&slots[1].id));
        // Evicted: its task is woken (a stored permit, so even before it waits).
        runtime().block_on(async {
            tokio::time::timeout(Duration::from_secs(1), slots[2].evicted.notified())
                .await
                .unwrap();
        });
        // Every connection being answered: a newcomer is refused, none is closed.
        let guards: Vec<_> = lock(&open.0).open.values().map(Slot::busy).collect();
        assert!(open.admit().is_none());
        assert_eq!(lock(&open.0).open.len(), MAX_CONNECTIONS);
        drop((answering, guards, newcomer));
        // Answered, they wait for their clients again, and the oldest of them makes room.
        assert!(open.admit().is_some());
    }

    /// The budget counts what arrived, and gives it back with the answer.
    #[test]
    fn bodies_count_against_the_budget_until_answered() {
        let budget = Arc::new(Budget::default());
        let mut first = Held::new(&budget);
        assert!(first.take(BODY_BUDGET - 10));
        let mut second = Held::new(&budget);
        assert!(second.take(10));
        assert!(!second.take(1));
        drop(second);
        assert_eq!(budget.0.load(Ordering::Relaxed), BODY_BUDGET - 10);
        drop(first);
        assert_eq!(budget.0.load(Ordering::Relaxed), 0);
    }

    /// A client that reads nothing: once the kernel's buffers are full, writes wait, and fail
    /// after [`WRITE_TIMEOUT`] (not before, not never).
    #[test]
    fn a_client_that_stops_reading_is_cut() {
        runtime().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let client = TcpStream::connect(listener.local_addr().unwrap())
                .await
                .unwrap();
            let (server, _) = listener.accept().await.unwrap();
            let slot = Connections::default().admit().unwrap();
            let mut stalls = Stalls::new(server, slot);
            let chunk = vec![0_u8; 1 << 16];
            let mut stalled_at = None;
            let error = loop {
                let wrote = std::future::poll_fn(|cx| {
                    let result = Pin::new(&mut stalls).poll_write(cx, &chunk);
                    if result.is_pending() && stalled_at.is_none() {
                        stalled_at = Some(Instant::now());
                    }
                    result
                })
                .await;
                match wrote {
                    Ok(_) => stalled_at = None,
                    Err(e) => break e,
                }
            };
            assert_eq!(error.kind(), io::ErrorKind::TimedOut);
            let waited = stalled_at.unwrap().elapsed();
            assert!(
                waited
                    >= WRITE_TIMEOUT
                        .checked_sub(Duration::from_millis(50))
                        .unwrap()
                    && waited < WRITE_TIMEOUT + Duration::from_secs(2),
                "{waited:?}"
            );
            drop(client);
        });
    }
}
