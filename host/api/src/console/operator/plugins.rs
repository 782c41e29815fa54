//! The components in use: each market's price book in force, each environment's payment
//! adapter, the payload shaper; with what they are (name, version, sha256, world) and the
//! limits their calls run under; and each one's recent calls on this instance: when, which
//! export, time and memory against the limits, how it ended, what an adapter logged.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::super::respond::page;
use super::{OperatorBar, signed_in, unavailable};
use crate::state::AppState;
use courier_core::components::{self, CallRecord, ComponentInUse};

struct Row {
    kind: &'static str,
    used_for: String,
    name: String,
    version: String,
    sha256: String,
    world: String,
    deadline: String,
    memory: String,
    hosts: String,
}

impl From<ComponentInUse> for Row {
    fn from(c: ComponentInUse) -> Self {
        Row {
            kind: c.kind,
            used_for: c.used_for,
            name: c.name,
            version: c.version,
            sha256: c.sha256,
            world: c.world,
            deadline: format!("{} ms", c.deadline.as_millis()),
            memory: format!("{} MiB", c.memory_bytes >> 20),
            hosts: if c.hosts.is_empty() {
                "none".to_owned()
            } else {
                c.hosts.join(", ")
            },
        }
    }
}

/// One recent call, as the page writes it.
struct Call {
    at: String,
    operation: &'static str,
    took: String,
    memory: String,
    fuel: String,
    failure: Option<String>,
    lines: Vec<(&'static str, String)>,
}

/// Milliseconds to a tenth, at least a tenth: "0.4 ms of 50 ms".
fn millis(d: std::time::Duration) -> String {
    format!("{:.1} ms", (d.as_secs_f64() * 1000.0).max(0.1))
}

/// A count with its thousands apart: "1,234,567".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / f64::from(1 << 20))
    } else {
        format!("{} KiB", n.div_ceil(1024))
    }
}

impl From<CallRecord> for Call {
    fn from(c: CallRecord) -> Self {
        Call {
            at: chrono::DateTime::<chrono::Utc>::from(c.at)
                .format("%Y-%m-%d %H:%M:%S%.3f UTC")
                .to_string(),
            operation: c.operation,
            took: format!("{} of {}", millis(c.took), millis(c.deadline)),
            memory: format!("{} of {}", bytes(c.memory_bytes), bytes(c.memory_limit)),
            fuel: grouped(c.fuel),
            failure: c.failure,
            lines: c
                .lines
                .into_iter()
                .map(|line| (line.level.as_str(), line.message))
                .collect(),
        }
    }
}

/// A component's recent calls.
struct Calls {
    id: String,
    title: String,
    failed: usize,
    calls: Vec<Call>,
}

#[derive(Template)]
#[template(path = "console/ops_plugins.html")]
struct PluginsPage {
    session: Option<OperatorBar>,
    components: Vec<Row>,
    kept: usize,
    recent: Vec<Calls>,
}

#[utoipa::path(
    get,
    path = "/ops/plugins",
    operation_id = "opsConsolePlugins",
    tag = "console",
    summary = "The WebAssembly components in use, what each is and the limits its calls run under",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn plugins_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let books = match state.price_books.in_use().await {
        Ok(books) => books,
        Err(error) => {
            tracing::error!(%error, "listing the price books in use failed");
            return unavailable(Some(&session));
        }
    };
    let in_use: Vec<ComponentInUse> = books
        .into_iter()
        .chain(state.payments.adapters_in_use())
        .chain([components::shaper(state.price_books.limits())])
        .collect();
    // One list per component, however many places use it.
    let mut recent: Vec<Calls> = Vec::new();
    for component in &in_use {
        if recent.iter().any(|r| r.id == component.sha256) {
            continue;
        }
        let calls: Vec<Call> = state
            .plugin_engine
            .recent_calls(&component.sha256)
            .into_iter()
            .map(Call::from)
            .collect();
        recent.push(Calls {
            id: component.sha256.clone(),
            title: format!(
                "{} {} ({})",
                component.name, component.version, component.kind
            ),
            failed: calls.iter().filter(|c| c.failure.is_some()).count(),
            calls,
        });
    }
    page(
        StatusCode::OK,
        PluginsPage {
            session: Some(OperatorBar::from(&session)),
            components: in_use.into_iter().map(Row::from).collect(),
            kept: components::KEPT_PER_COMPONENT,
            recent,
        }
        .render(),
    )
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }
}
