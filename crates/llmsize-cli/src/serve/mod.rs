//! `llmsize serve`: a local web calculator over the same commands as the CLI.
//!
//! One page (HTML, JS and CSS compiled into the binary: it works offline and fetches nothing
//! from anywhere but this server) and a JSON API whose every answer is what the command line
//! prints with `--json` for the same question: a request becomes an argument list, parsed by
//! the CLI's own parser and run by the CLI's own command code ([`api`]).
//!
//! Bound to 127.0.0.1 only; the server reads no file a client names ([`api::check_model`]).

mod api;

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

/// The longest a request may run before the client gets 503. Every command finishes in
/// milliseconds; a bound keeps a pathological sweep from holding a connection forever.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Engine calls running at once: the rest wait their turn, so the server never takes more
/// than two cores however many requests arrive.
const ENGINE_THREADS: usize = 2;

const PAGE: &str = include_str!("page.html");
const APP_JS: &str = include_str!("app.js");
const STYLE_CSS: &str = include_str!("style.css");

/// What every handler shares: the `Host` values that name this server (for the check
/// against DNS rebinding, written once at start-up) and the command environment.
struct Shared {
    port: u16,
    hosts: [String; 3],
    env: crate::commands::Env,
}

/// Serve the page and its API on 127.0.0.1 until interrupted.
pub(crate) fn run(args: &ServeArgs) -> Result<(), Failure> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let listener = std::net::TcpListener::bind(address).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            Failure::Engine(llmsize_engine::Error::BadInput {
                message: format!("cannot listen on {address}: {e}"),
                hint: Some("another program has the port: pick another with `--port`, or `--port 0` for a free one".into()),
            })
        } else {
            io_failure(format!("listen on {address}"))(e)
        }
    })?;
    listener
        .set_nonblocking(true)
        .map_err(io_failure(format!("listen on {address}")))?;
    let port = listener
        .local_addr()
        .map_err(io_failure(format!("listen on {address}")))?
        .port();
    let url = format!("http://127.0.0.1:{port}/");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(ENGINE_THREADS)
        .build()
        .map_err(io_failure("start the server's runtime".into()))?;
    let shared = Arc::new(Shared {
        port,
        hosts: [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ],
        env: api::server_env(),
    });
    announce(&url, args.open);
    runtime
        .block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            axum::serve(listener, router(shared)).await
        })
        .map_err(io_failure(format!("serve {url}")))?;
    Ok(())
}

/// An I/O error of the server (not of writing stdout), as the CLI prints an engine's:
/// `error: failed to listen on 127.0.0.1:8421` with the system's words under it.
fn io_failure(what: String) -> impl FnOnce(std::io::Error) -> Failure {
    move |source| Failure::Engine(llmsize_engine::Error::Io { what, source })
}

/// The URL on stderr (scripts and tests read the port from it), and the browser if asked.
#[expect(
    clippy::print_stderr,
    reason = "the address is the one line `serve` prints"
)]
fn announce(url: &str, open: bool) {
    eprintln!("llmsize serve: {url}");
    if open && let Err(e) = open_browser(url) {
        eprintln!("warning: cannot open a browser ({e}); open {url} yourself");
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
