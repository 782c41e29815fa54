//! The components in use: each market's price book in force, each environment's payment
//! adapter, the payload shaper; with what they are (name, version, sha256, world) and the
//! limits their calls run under.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::super::respond::page;
use super::{OperatorBar, message, signed_in};
use crate::state::AppState;
use courier_core::components::{self, ComponentInUse};

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

#[derive(Template)]
#[template(path = "console/ops_plugins.html")]
struct PluginsPage {
    session: Option<OperatorBar>,
    components: Vec<Row>,
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
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&session),
                "Try again shortly",
                "The console cannot reach its database just now.",
            );
        }
    };
    let components = books
        .into_iter()
        .chain(state.payments.adapters_in_use())
        .chain([components::shaper(state.price_books.limits())])
        .map(Row::from)
        .collect();
    page(
        StatusCode::OK,
        PluginsPage {
            session: Some(OperatorBar::from(&session)),
            components,
        }
        .render(),
    )
}
