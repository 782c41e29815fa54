//! The HTTP server loop: axum's router on hyper connections, with a deadline for reading a
//! request's headers so slow clients (slowloris) cannot hold connections open, and graceful
//! shutdown that lets in-flight requests finish.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::extract::connect_info::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt;

/// How long in-flight requests may take to finish once shutdown begins.
const DRAIN_DEADLINE: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `shutdown` completes. A connection that has not sent
/// a request's complete headers within `header_read_timeout` is closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: pause rather than spin.
                        tracing::warn!(%error, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                // Handlers that need the client's address read it as `ConnectInfo`.
                let service = TowerToHyperService::new(router.clone().map_request(
                    move |mut request: axum::http::Request<hyper::body::Incoming>| {
                        request.extensions_mut().insert(ConnectInfo(peer));
                        request
                    },
                ));
                let connection = builder
                    .serve_connection_with_upgrades(TokioIo::new(stream), service)
                    .into_owned();
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_DEADLINE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still running at shutdown were cut off");
    }
}
