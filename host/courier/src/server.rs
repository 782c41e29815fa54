//! The HTTP server loop: axum's router on hyper connections (HTTP/1 and HTTP/2), with limits
//! that keep connections from piling up: a cap on how many are served at once, a deadline
//! for reading a request's headers (slow clients), an idle timeout for connections with no
//! request in flight (HTTP/1 keep-alive and HTTP/2 alike), and HTTP/2 pings that find dead
//! peers. On shutdown it stops accepting, asks every connection to finish (HTTP/2: GOAWAY) and
//! lets in-flight requests complete.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use axum::Router;
use axum::extract::connect_info::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long in-flight requests may take to finish once shutdown begins.
const DRAIN_DEADLINE: Duration = Duration::from_secs(30);
/// How often an HTTP/2 connection is pinged, and how long the answer may take before the
/// connection is closed as dead.
const HTTP2_PING_EVERY: Duration = Duration::from_secs(20);
const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(20);
/// How long an idle connection told to close may take to close by itself before it is cut:
/// an HTTP/2 client that never answers the GOAWAY's ping would otherwise hold it.
const IDLE_CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What one connection may take.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// A connection that has not sent a request's complete headers within this is closed.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(HTTP2_PING_EVERY)
        .keep_alive_timeout(HTTP2_PING_TIMEOUT);
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let stopping = CancellationToken::new();
    let connections = TaskTracker::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A place first: at the cap, connections wait in the kernel's queue, unaccepted.
        let place = tokio::select! {
            place = Arc::clone(&places).acquire_owned() => place.expect("the places are never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: pause rather than spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let service = {
            let (router, activity) = (router.clone(), Arc::clone(&activity));
            tower::service_fn(
                move |mut request: axum::http::Request<hyper::body::Incoming>| {
                    // Handlers that need the client's address read it as `ConnectInfo`.
                    request.extensions_mut().insert(ConnectInfo(peer));
                    let in_flight = activity.begin();
                    let router = router.clone();
                    async move {
                        let response = router.oneshot(request).await;
                        drop(in_flight);
                        response
                    }
                },
            )
        };
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service))
            .into_owned();
        let stopping = stopping.clone();
        let idle_timeout = limits.idle_timeout;
        connections.spawn(async move {
            let _place = place;
            let mut connection = std::pin::pin!(connection);
            let mut closing = false;
            let mut idle_closing = false;
            loop {
                tokio::select! {
                    ended = connection.as_mut() => {
                        if let Err(error) = ended {
                            tracing::debug!(%error, "connection ended with an error");
                        }
                        break;
                    }
                    () = stopping.cancelled(), if !closing => {
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    () = activity.idle_for(idle_timeout), if !closing => {
                        connection.as_mut().graceful_shutdown();
                        (closing, idle_closing) = (true, true);
                    }
                    // Nothing in flight on it: dropping it closes the socket.
                    () = tokio::time::sleep(IDLE_CLOSE_GRACE), if idle_closing => break,
                }
            }
        });
    }
    drop(listener);
    stopping.cancel();
    connections.close();
    if tokio::time::timeout(DRAIN_DEADLINE, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("requests still running at shutdown were cut off");
    }
}

/// Requests in flight on one connection, and when the last one ended.
struct Activity {
    opened: Instant,
    in_flight: AtomicUsize,
    last_ended_ms: AtomicU64,
}

/// One request in flight; dropped when its answer is ready (or the request is abandoned).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        activity
            .last_ended_ms
            .store(activity.elapsed_ms(), Ordering::Relaxed);
        activity.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_ended_ms: AtomicU64::new(0),
        }
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(self))
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Completes once the connection has had no request in flight for `timeout`.
    async fn idle_for(&self, timeout: Duration) {
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        loop {
            let wait = if self.in_flight.load(Ordering::Acquire) > 0 {
                timeout_ms
            } else {
                let idle = self
                    .elapsed_ms()
                    .saturating_sub(self.last_ended_ms.load(Ordering::Relaxed));
                if idle >= timeout_ms {
                    return;
                }
                timeout_ms - idle
            };
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_idle_once_no_request_was_in_flight_for_the_timeout() {
        let activity = Arc::new(Activity::new());
        let timeout = Duration::from_secs(60);
        let request = activity.begin();
        // A request in flight holds the connection open however long it takes.
        let held = tokio::time::timeout(Duration::from_secs(600), activity.idle_for(timeout));
        assert!(held.await.is_err());
        drop(request);
        let started = tokio::time::Instant::now();
        activity.idle_for(timeout).await;
        assert!(started.elapsed() >= timeout);
        assert!(started.elapsed() < timeout + Duration::from_secs(1));
    }
}
