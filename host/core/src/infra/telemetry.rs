//! Logging and metrics set-up.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,tower_http=warn";

/// `RUST_LOG`.
#[derive(Clone, Debug, clap::Args)]
pub struct LogSettings {
    /// Log filter (`tracing` syntax). Logs go to stderr.
    #[arg(id = "log-filter", long = "log-filter", env = "RUST_LOG",
          default_value = DEFAULT_LOG_FILTER)]
    pub filter: String,
}

/// Logs to stderr (stdout is reserved for command output), filtered by `RUST_LOG`.
pub fn init_logging() {
    let settings: Option<LogSettings> = crate::infra::settings::from_env().ok();
    let filter = settings
        .and_then(|settings| EnvFilter::try_new(settings.filter).ok())
        .unwrap_or_else(|| EnvFilter::new(DEFAULT_LOG_FILTER));
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
