//! The engine threads: where a request's command runs, off the runtime's one thread.
//!
//! A blocking computation cannot be stopped from outside, so the pool bounds what it can
//! cost instead of pretending to cancel it:
//!
//! - at most [`ENGINE_THREADS`] computations exist at once: each holds a permit for its whole
//!   life, including any time it runs past its request's deadline, so the threads (and the
//!   cores they burn) are bounded whatever the requests ask;
//! - a request that cannot get a thread within [`ENGINE_WAIT`] is refused at once with 503 and
//!   `Retry-After`, never queued without end;
//! - a request whose computation outlives [`REQUEST_TIMEOUT`] is answered 503 at the deadline;
//!   the computation finishes on its own (the engine bounds every computation to about a
//!   second) and only then gives its thread back.
//!
//! So a few computations stuck past their deadline leave the rest of the pool to normal
//! requests; only [`ENGINE_THREADS`] of them at once make the server refuse (quickly, with a
//! message) until one ends.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::sync::Semaphore;

use super::{ENGINE_THREADS, ENGINE_WAIT, REQUEST_TIMEOUT, plain};

/// The permits of the engine threads.
#[derive(Debug)]
pub(crate) struct Pool {
    threads: Arc<Semaphore>,
}

impl Pool {
    pub(crate) fn new() -> Self {
        Pool {
            threads: Arc::new(Semaphore::new(ENGINE_THREADS)),
        }
    }

    /// `work`'s answer, or 503 when no thread is free within [`ENGINE_WAIT`] or the work
    /// outlives [`REQUEST_TIMEOUT`].
    pub(crate) async fn run<F>(&self, work: F) -> Response
    where
        F: FnOnce() -> Response + Send + 'static,
    {
        let waited =
            tokio::time::timeout(ENGINE_WAIT, Arc::clone(&self.threads).acquire_owned()).await;
        let Ok(Ok(thread)) = waited else {
            return busy();
        };
        // The permit goes with the computation, not with the request: a computation past its
        // deadline still holds its thread, and the pool counts it.
        let running = tokio::task::spawn_blocking(move || {
            let response = work();
            drop(thread);
            response
        });
        match tokio::time::timeout(REQUEST_TIMEOUT, running).await {
            Ok(Ok(response)) => response,
            Ok(Err(_)) => plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "error: the command failed unexpectedly\n".into(),
            ),
            Err(_) => plain(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "error: the request took longer than {} s and was abandoned\n\nhint: ask for less (fewer sweep points, fewer GPUs); the command line answers without a time limit\n",
                    REQUEST_TIMEOUT.as_secs()
                ),
            ),
        }
    }
}

/// 503: every engine thread is taken (by requests that may have run past their deadline).
fn busy() -> Response {
    let mut response = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "error: all {ENGINE_THREADS} engine threads are busy (requests that ran past {} s may still be running)\n\nhint: try again in a moment\n",
            REQUEST_TIMEOUT.as_secs()
        ),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// Computations that will not end: each request is answered 503 at its deadline, their
    /// threads stay counted, and once all [`ENGINE_THREADS`] are taken the next request is
    /// refused after [`ENGINE_WAIT`], with `Retry-After`; when one ends its thread serves again.
    #[test]
    fn stuck_computations_are_answered_and_counted() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(ENGINE_THREADS)
            .build()
            .unwrap();
        let pool = Pool::new();
        let (release, stuck) = mpsc::channel::<()>();
        let stuck = Arc::new(std::sync::Mutex::new(stuck));
        runtime.block_on(async {
            let started = Instant::now();
            let answers = all_stuck(&pool, ENGINE_THREADS, &stuck).await;
            let took = started.elapsed();
            assert!(
                took >= REQUEST_TIMEOUT && took < REQUEST_TIMEOUT + Duration::from_secs(1),
                "{took:?}"
            );
            for answer in answers {
                assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
            }
            let started = Instant::now();
            let refused = pool.run(|| plain(StatusCode::OK, String::new())).await;
            let took = started.elapsed();
            assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
            assert!(took >= ENGINE_WAIT && took < ENGINE_WAIT * 4, "{took:?}");
            // One stuck computation ends: its thread answers the next request.
            release.send(()).unwrap();
            let served = pool.run(|| plain(StatusCode::OK, String::new())).await;
            assert_eq!(served.status(), StatusCode::OK);
        });
        drop(release);
    }

    /// `n` requests at once whose computations wait on `stuck` (one message frees one).
    async fn all_stuck(
        pool: &Pool,
        n: usize,
        stuck: &Arc<std::sync::Mutex<mpsc::Receiver<()>>>,
    ) -> Vec<Response> {
        let mut set = tokio::task::JoinSet::new();
        let pool = Arc::new(Pool {
            threads: Arc::clone(&pool.threads),
        });
        for _ in 0..n {
            let (pool, stuck) = (Arc::clone(&pool), Arc::clone(stuck));
            set.spawn(async move {
                pool.run(move || {
                    let _ = stuck.lock().unwrap().recv();
                    plain(StatusCode::OK, String::new())
                })
                .await
            });
        }
        set.join_all().await
    }
}
