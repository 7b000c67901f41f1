//! `llmsize serve`: a local web calculator over the same commands as the CLI.
//!
//! One page (HTML, JS and CSS compiled into the binary: it works offline and fetches nothing
//! from anywhere but this server) and a JSON API whose every answer is what the command line
//! prints with `--json` for the same question: a request becomes an argument list, parsed by
//! the CLI's own parser and run by the CLI's own command code ([`api`]).
//!
//! Bound to 127.0.0.1 only; the server reads no file a client names ([`api::check_model`]).
//!
//! # One client cannot take it down
//!
//! Every client is 127.0.0.1, so clients cannot be told apart: the server bounds what any
//! peer can hold instead of whom it serves. One runtime thread does all the I/O; the
//! commands run on a bounded pool of engine threads ([`pool`]). Each limit below is a named
//! constant with its reason:
//!
//! | what a client could hold                   | bound                                      |
//! |--------------------------------------------|--------------------------------------------|
//! | a request's headers, never finished        | [`HEADER_TIMEOUT`] (hyper's own timer)     |
//! | an idle keep-alive connection              | [`HEADER_TIMEOUT`], from the last answer   |
//! | a body, trickled or stalled                | [`BODY_TIMEOUT`] for the whole body        |
//! | an answer it never reads                   | [`WRITE_TIMEOUT`] without progress         |
//! | descriptors (connections)                  | [`MAX_CONNECTIONS`]; the longest-waiting one is closed for a newcomer ([`conn`]) |
//! | connections not yet accepted               | [`LISTEN_BACKLOG`], the kernel's queue     |
//! | memory in bodies                           | [`BODY_LIMIT`] each, [`BODY_BUDGET`] together |
//! | engine threads                             | [`ENGINE_THREADS`], a request waits [`ENGINE_WAIT`] at most for one |
//! | a computation that does not end            | answered 503 at [`REQUEST_TIMEOUT`]; its thread stays counted until it ends |
//!
//! A blocking computation cannot be killed, so the pool is sized for several to overrun at
//! once and still leave threads to normal requests; the engine bounds every computation to
//! about a second (issue 21), which is what gives each thread back: a computation that ran
//! longer than [`REQUEST_TIMEOUT`] would keep its thread after its answer, and a client that
//! sent such requests in a loop would fill the pool (every request 503, quickly) for as long
//! as it kept on. Per-client fairness is
//! left out: on loopback a client is a connection, and connections cost an attacker nothing.
//!
//! Worst-case memory outside the engine: hyper's read buffer (about 400 KiB) per connection
//! and [`BODY_BUDGET`] of bodies: 128 × 0.4 + 32 ≈ 83 MiB.

mod api;
mod conn;
mod pool;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::Failure;
use crate::cli::ServeArgs;

/// The largest request body: a config.json is a few KiB, a safetensors header of a large
/// model a few MiB at most; anything larger is refused with 413 before it is read whole.
pub(crate) const BODY_LIMIT: usize = 8 << 20;

/// The bytes of request bodies the server holds at once (received, or being answered): four
/// bodies of the largest size. Counted as bytes arrive, not as a `Content-Length` promises,
/// so a client that announces a large body and trickles it holds only what it sent.
const BODY_BUDGET: usize = 4 * BODY_LIMIT;

/// How long a connection may take to send a request's headers, counted from the moment the
/// server waits for them: when the connection opens, and again once the previous answer is
/// written, so this is also the idle keep-alive timeout. A browser sends its headers in one
/// packet and reopens a closed keep-alive connection by itself; a client that sends half a
/// header (slow-loris) or sits idle gives its descriptor back after this.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a request's body may take to arrive whole, from the end of its headers: a deadline
/// for the body, not for each chunk, so a byte every 2 s is cut as surely as silence. 8 MiB
/// over loopback takes milliseconds.
const BODY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a write may wait for a client that takes no byte of its answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections open at once, so descriptors are bounded (far below a default limit of
/// 1,024): a page opens six. A newcomer beyond it closes the connection that has waited
/// longest for its client ([`conn`]); it is closed itself only when every one is being
/// answered.
const MAX_CONNECTIONS: usize = 128;

/// Connections the kernel queues before the server accepts them. When a client opens them
/// faster than the server accepts (hundreds at once), a full queue drops a newcomer's first
/// packet, and its client waits a second to send it again; 1,024 absorbs such a burst (the
/// kernel caps it at `net.core.somaxconn`, 4,096 on current Linux).
const LISTEN_BACKLOG: u32 = 1024;

/// The pause after a failed `accept` (no descriptor left, say), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Engine computations at once, each on its own thread, including those still running past
/// their [`REQUEST_TIMEOUT`]: enough that a few such computations leave threads to normal
/// requests, few enough to bound the cores a flood of requests can take.
const ENGINE_THREADS: usize = 8;

/// How long a request waits for an engine thread before it is refused with 503: a normal
/// command takes milliseconds, so a pool that stays full this long is full of slow ones.
const ENGINE_WAIT: Duration = Duration::from_millis(250);

/// How long a computation may run before its request is answered 503. The engine bounds
/// every computation to about a second; this leaves a debug build and a loaded machine a
/// margin, and answers the client even if a bound were missed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

const PAGE: &str = include_str!("page.html");
const APP_JS: &str = include_str!("app.js");
const STYLE_CSS: &str = include_str!("style.css");

/// What every handler shares: the `Host` values that name this server (for the check
/// against DNS rebinding, written once at start-up) and the command environment.
struct Shared {
    port: u16,
    hosts: [String; 3],
    env: crate::commands::Env,
    /// The engine threads the commands run on.
    pool: pool::Pool,
}

/// Serve the page and its API on 127.0.0.1 until interrupted.
pub(crate) fn run(args: &ServeArgs) -> Result<(), Failure> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(ENGINE_THREADS)
        .build()
        .map_err(io_failure("start the server's runtime".into()))?;
    let listener = {
        let _entered = runtime.enter();
        listen(address).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                Failure::Engine(llmsize_engine::Error::BadInput {
                    message: format!("cannot listen on {address}: {e}"),
                    hint: Some("another program has the port: pick another with `--port`, or `--port 0` for a free one".into()),
                })
            } else {
                io_failure(format!("listen on {address}"))(e)
            }
        })?
    };
    let port = listener
        .local_addr()
        .map_err(io_failure(format!("listen on {address}")))?
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let shared = Arc::new(Shared {
        port,
        hosts: [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ],
        env: api::server_env(),
        pool: pool::Pool::new(),
    });
    announce(&url, args.open);
    runtime.block_on(conn::serve(listener, router(shared)));
    Ok(())
}

/// The listening socket, with a queue of [`LISTEN_BACKLOG`] connections (the standard
/// library's `bind` allows 128).
fn listen(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    // As the standard library's `bind` does on Unix: a restarted server gets its port back
    // while the last one's connections linger in `TIME_WAIT`. (On Windows the option would
    // let another program take the port.)
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

/// An I/O error of the server (not of writing stdout), as the CLI prints an engine's:
/// `error: failed to listen on 127.0.0.1:8421` with the system's words under it.
fn io_failure(what: String) -> impl FnOnce(std::io::Error) -> Failure {
    move |source| Failure::Engine(llmsize_engine::Error::Io { what, source })
}

/// The URL on stderr (scripts and tests read the port from it), and the browser if asked; a
/// stderr that cannot be written (`2>/dev/full`) does not stop the server.
fn announce(url: &str, open: bool) {
    crate::output::to_stderr(&format!("llmsize serve: {url}\n"));
    if open && let Err(e) = open_browser(url) {
        crate::output::warn_all(&[format!("cannot open a browser ({e}); open {url} yourself")]);
    }
}

/// The desktop's own opener: `xdg-open`, macOS `open`, Windows `start`.
fn open_browser(url: &str) -> std::io::Result<()> {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(drop)
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset(PAGE, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/style.css",
            get(|| async { asset(STYLE_CSS, "text/css; charset=utf-8") }),
        )
        .route(
            "/api/inspect",
            post(api::inspect).layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .route(
            "/api/{command}",
            get(api::handle)
                .post(api::handle)
                .layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .fallback(|| async { plain(StatusCode::NOT_FOUND, "error: no such page\n".into()) })
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// Refuse a request whose `Host` is not this server's own address: a web page elsewhere
/// cannot reach the API through a name rebound to 127.0.0.1 (DNS rebinding). Every answer
/// also forbids the page to load anything from another origin.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !shared.hosts.iter().any(|o| o.eq_ignore_ascii_case(host)) {
        return plain(
            StatusCode::FORBIDDEN,
            format!(
                "error: `Host: {host}` is not this server (127.0.0.1:{})\n",
                shared.port
            ),
        );
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data: blob:; connect-src 'self'; \
             frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A plain-text answer: the errors, as the CLI prints them.
pub(crate) fn plain(status: StatusCode, text: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}
