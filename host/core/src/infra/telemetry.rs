//! Logging and metrics set-up.

use std::convert::Infallible;
use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use super::log_lines::{LogLines, LogLinesWriter};
use super::workers::{Pass, Workers};

const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,tower_http=warn";

/// `RUST_LOG`.
#[derive(Clone, Debug, clap::Args)]
pub struct LogSettings {
    /// Log filter (`tracing` syntax). Logs go to stderr, written by a thread of their own.
    #[arg(id = "log-filter", long = "log-filter", env = "RUST_LOG",
          default_value = DEFAULT_LOG_FILTER)]
    pub filter: String,
}

/// The thread that writes the logs.
pub const LOG_WRITER_THREAD: &str = "courier-log";

/// What writes the logs; dropping it writes out the lines still gathered. Keep it for the life
/// of the process.
#[must_use = "dropping it stops the logs"]
pub struct LogWriter {
    _lines: Option<LogLinesWriter>,
}

/// Log lines not yet written, at most: past that, a request waits for the writer.
const MOST_PENDING_LOG_BYTES: usize = 16 << 20;

/// Logs to stderr (stdout is reserved for command output), filtered by `RUST_LOG`, with colours
/// only on a terminal.
///
/// Every request logs a line. A thread of its own writes them, a few milliseconds' worth at a
/// time: written by the request's own thread, each line was a system call, and a request's
/// logging was an eighth of its CPU (BENCHMARKS.md, "A request's log line"). Nothing is
/// dropped: 16 MiB behind, requests wait for the writer.
pub fn init_logging() -> LogWriter {
    let settings: Option<LogSettings> = crate::infra::settings::from_env().ok();
    let filter = settings
        .and_then(|settings| EnvFilter::try_new(settings.filter).ok())
        .unwrap_or_else(|| EnvFilter::new(DEFAULT_LOG_FILTER));
    let (lines, writer) =
        LogLines::start(LOG_WRITER_THREAD, std::io::stderr(), MOST_PENDING_LOG_BYTES)
            .expect("the log writer's thread starts");
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(lines)
        .try_init();
    LogWriter {
        _lines: installed.is_ok().then_some(writer),
    }
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

/// How often the recorder folds the histogram samples taken since into their buckets: without
/// it, samples pile up in memory until the next scrape, or for ever when nobody scrapes.
const METRICS_UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Runs the recorder's upkeep on a timer, under the workers' lifecycle.
pub fn run_metrics_upkeep(workers: &Workers) {
    workers.run("metrics upkeep", METRICS_UPKEEP_EVERY, || async {
        metrics_handle().run_upkeep();
        Ok::<_, Infallible>(Pass::Partial)
    });
}

/// The `method` label of a request: one of the standard methods, or `other`, so made-up
/// methods cannot mint new series.
pub fn method_label(method: &http::Method) -> &'static str {
    use http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Current metrics in Prometheus text format.
pub fn render_metrics() -> String {
    metrics_handle().render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_methods_share_one_label() {
        assert_eq!(method_label(&http::Method::GET), "GET");
        assert_eq!(method_label(&http::Method::PATCH), "PATCH");
        for made_up in ["FOO1", "FOO2", "get", "PROPFIND"] {
            let method = http::Method::from_bytes(made_up.as_bytes()).unwrap();
            assert_eq!(method_label(&method), "other", "{made_up}");
        }
    }
}
