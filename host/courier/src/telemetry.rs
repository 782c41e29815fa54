//! Logging and metrics set-up.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

/// Logs to stderr (stdout is reserved for command output), filtered by `RUST_LOG`.
pub fn init_logging() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn metrics_handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let buckets = [
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ];
        let builder = PrometheusBuilder::new()
            .set_buckets(&buckets)
            .expect("bucket list is not empty");
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        // Several services in one process (tests) share the first recorder installed.
        let _ = metrics::set_global_recorder(recorder);
        handle
    })
}

/// Installs the metrics recorder; call once at start-up.
pub fn init_metrics() {
    metrics_handle();
}

/// Current metrics in Prometheus text format.
pub fn render_metrics() -> String {
    metrics_handle().render()
}
