//! HTTP routing: one module per resource, plus the shared error model and extractors.

mod admin;
mod charges;
mod console;
mod courier;
mod error;
mod extract;
mod jobs;
mod lookups;
mod middleware;
pub(crate) mod openapi;
mod ops;
mod payment_methods;
mod provider_events;
mod quotes;
mod sandbox;
mod state;
mod tracking;
mod webhooks;

use std::sync::OnceLock;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderName, Request, Response};
use axum::response::IntoResponse;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tracing::Span;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::router::UtoipaMethodRouterExt;
use utoipa_axum::routes;

pub use admin::{Operator, OperatorTokens};
pub use error::{ApiError, RequestError};
pub use extract::{ApiJson, ApiQuery};
pub use state::{AppServices, AppState, Draining};

pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The merchant API under /v1 (credentials checked by the caller's layers).
fn merchant_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(quotes::create))
        .routes(routes!(jobs::create, jobs::list))
        .routes(routes!(jobs::get))
        .routes(routes!(jobs::courier_position))
        .routes(routes!(jobs::cancel))
        .routes(routes!(jobs::proof_file))
        .routes(routes!(lookups::route))
        .routes(routes!(lookups::search_places))
        .routes(routes!(lookups::reverse_place))
        .routes(routes!(payment_methods::setup))
        .routes(routes!(payment_methods::attach, payment_methods::list))
        .routes(routes!(payment_methods::remove))
        .routes(routes!(payment_methods::make_default))
        .routes(routes!(charges::list))
        .routes(routes!(sandbox::show))
        .routes(routes!(sandbox::choose_scenario))
        .routes(routes!(sandbox::advance))
        .routes(routes!(webhooks::create, webhooks::list))
        .routes(routes!(webhooks::delete, webhooks::edit))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(webhooks::resume))
        .routes(routes!(webhooks::rotate_secret))
}

/// What needs no credentials: operations, the tracking page, the API's description.
fn public_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
        // The public tracking page: no credentials, the token is the key.
        .routes(routes!(tracking::page))
        .routes(routes!(tracking::state))
        // The merchant console: pages for people, signed in with an e-mail address and password.
        .routes(routes!(console::pages::start))
        .routes(routes!(console::pages::stylesheet))
        .routes(routes!(console::pages::live_updates))
        .routes(routes!(console::pages::card_form_script))
        .routes(routes!(console::pages::passkeys_script))
        .routes(routes!(
            console::pages::sign_in_page,
            console::pages::sign_in
        ))
        .routes(routes!(console::pages::sign_out))
        .routes(routes!(
            console::team::invitation_page,
            console::team::accept_invitation
        ))
        .routes(routes!(
            console::passwords::reset_request_page,
            console::passwords::request_reset
        ))
        .routes(routes!(
            console::passwords::reset_page,
            console::passwords::reset_password
        ))
        .routes(routes!(
            console::second_factor::code_page,
            console::second_factor::check_code
        ))
        .routes(routes!(console::second_factor::factor_page))
        .routes(routes!(console::second_factor::start))
        .routes(routes!(console::second_factor::confirm))
        .routes(routes!(console::second_factor::disable))
        .routes(routes!(console::passkeys::registration_options))
        .routes(routes!(console::passkeys::add))
        .routes(routes!(console::passkeys::remove))
        .routes(routes!(console::passkeys::sign_in_options))
        .routes(routes!(console::passkeys::sign_in))
        .routes(routes!(console::team::require_second_factor))
        .routes(routes!(console::team::switch))
        .routes(routes!(console::team::account_page))
        .routes(routes!(console::team::revoke_session))
        .routes(routes!(console::team::team_page))
        .routes(routes!(console::team::invite))
        .routes(routes!(console::team::change_role))
        .routes(routes!(console::team::remove_member))
        .routes(routes!(console::team::withdraw_invitation))
        .routes(routes!(console::pages::jobs_page))
        .routes(routes!(console::pages::job_page))
        .routes(routes!(console::pages::proof_file))
        .routes(routes!(console::pages::cancel_job))
        .routes(routes!(
            console::webhooks::webhooks_page,
            console::webhooks::add_webhook
        ))
        .routes(routes!(console::catalog::events_page))
        .routes(routes!(console::webhooks::webhook_page))
        .routes(routes!(console::webhooks::webhook_action))
        .routes(routes!(console::webhooks::health_page))
        .routes(routes!(console::webhooks::delivery_page))
        .routes(routes!(console::webhooks::resend_delivery))
        .routes(routes!(console::webhooks::recover_deliveries))
        .routes(routes!(console::webhooks::send_test_event))
        .routes(routes!(
            console::cards::cards_page,
            console::cards::add_card
        ))
        .routes(routes!(console::cards::card_action))
        .routes(routes!(console::card_form::start_card_form))
        .routes(routes!(console::card_form::card_form_returned))
        .routes(routes!(console::card_form::attach_card))
        .routes(routes!(console::keys::keys_page, console::keys::create_key))
        .routes(routes!(console::keys::revoke_key))
        .routes(routes!(console::keys::change_settings))
        .routes(routes!(
            console::sandbox::sandbox_page,
            console::sandbox::book_test_delivery
        ))
        .routes(routes!(console::sandbox::run_page_of))
        .routes(routes!(console::sandbox::act))
        .routes(routes!(console::once::form_answer))
        // The operator console: pages for people, signed in with an operator token.
        .routes(routes!(console::operator::desk::home))
        .routes(routes!(console::operator::desk::search))
        .routes(routes!(
            console::operator::pages::sign_in_page,
            console::operator::pages::sign_in
        ))
        .routes(routes!(console::operator::pages::sign_out))
        .routes(routes!(
            console::operator::account::code_page,
            console::operator::account::check_code
        ))
        .routes(routes!(console::operator::account::setup_page))
        .routes(routes!(console::operator::account::confirm))
        .routes(routes!(
            console::operator::account::invitation_page,
            console::operator::account::accept_invitation
        ))
        .routes(routes!(console::operator::pages::markets_page))
        .routes(routes!(console::operator::market::market_page))
        .routes(routes!(console::operator::jobs::job_page))
        .routes(routes!(console::operator::merchants::merchant_page))
        .routes(routes!(console::operator::couriers::courier_page))
        .routes(routes!(console::operator::couriers::sign_in_code))
        .routes(routes!(console::operator::dispatch::assign))
        .routes(routes!(console::operator::dispatch::set_status))
        .routes(routes!(console::operator::dispatch::courier_action))
        .routes(
            routes!(
                console::operator::price_books::price_books_page,
                console::operator::price_books::upload
            )
            .layer(DefaultBodyLimit::max(admin::UPLOAD_BODY_LIMIT)),
        )
        .routes(routes!(console::operator::price_books::comparison_page))
        .routes(routes!(
            console::operator::price_books::activate_page,
            console::operator::price_books::activate
        ))
        .routes(routes!(console::operator::audit::audit_page))
        .routes(routes!(console::operator::payments::payments_page))
        .routes(routes!(console::operator::payments::refund))
        .routes(routes!(console::operator::plugins::plugins_page))
        // The couriers' app: pages for couriers' phones, signed in with a credential or an
        // operator's one-time code.
        .routes(routes!(console::courier_app::home::shift_page))
        .routes(routes!(console::courier_app::home::shift_state))
        .routes(routes!(console::courier_app::home::change_shift))
        .routes(routes!(console::courier_app::home::report_position))
        .routes(routes!(
            console::courier_app::sign_in_page,
            console::courier_app::sign_in
        ))
        .routes(routes!(console::courier_app::sign_out))
        .routes(routes!(console::courier_app::stylesheet))
        .routes(routes!(console::courier_app::script))
        .routes(routes!(console::courier_app::service_worker))
        .routes(routes!(console::courier_app::manifest))
        .routes(routes!(console::courier_app::icon))
        .routes(routes!(console::courier_app::icon_192))
        .routes(routes!(console::courier_app::icon_512))
        .routes(routes!(console::courier_app::moves::accept))
        .routes(routes!(console::courier_app::moves::decline))
        .routes(routes!(console::courier_app::moves::collected))
        .routes(routes!(console::courier_app::moves::returned))
        .routes(routes!(console::courier_app::moves::deliver_page))
        // The form reads its own body, up to the proof files' limit.
        .routes(routes!(console::courier_app::moves::delivered).layer(DefaultBodyLimit::disable()))
        // The payment provider's notifications: its signature is the credential.
        .routes(routes!(provider_events::receive))
        .routes(routes!(serve_openapi))
}

/// The whole description, built once from the routes.
pub fn openapi_document() -> &'static serde_json::Value {
    static DOCUMENT: OnceLock<serde_json::Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| openapi::describe(documented_routes().into_openapi()))
}

/// The description as JSON.
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    operation_id = "getOpenApi",
    tag = "operations",
    security(()),
    responses((status = 200, description = "This document (OpenAPI 3.1)", content_type = "application/json", body = Object))
)]
pub async fn serve_openapi() -> impl IntoResponse {
    // Serialised once: the document is large and never changes while the process runs.
    static SERVED: OnceLock<axum::body::Bytes> = OnceLock::new();
    let body = SERVED.get_or_init(|| {
        serde_json::to_vec(openapi_document())
            .expect("the description serialises")
            .into()
    });
    ([(CONTENT_TYPE, "application/json")], body.clone())
}

/// Every route, described; the source of both the router and the description.
fn documented_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(public_routes())
        .nest("/v1", merchant_routes())
        .nest("/admin/v1", admin::routes())
        // The proof body limit is configuration; the description does not depend on it.
        .nest("/courier/v1", courier::routes(0))
}

/// Which requests a listener serves: everything; or, when the operator console has a listener
/// of its own (`COURIER_OPS_LISTEN`), everything but the console on the main listener, and
/// only the console (with the stylesheet its pages share) on its own. Anything else answers
/// 404 `request.route_not_found`, as an unknown path does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serves {
    Everything,
    AllButOperatorConsole,
    OperatorConsoleOnly,
}

impl Serves {
    fn allows(self, path: &str) -> bool {
        let console = path == "/ops" || path.starts_with("/ops/");
        match self {
            Serves::Everything => true,
            Serves::AllButOperatorConsole => !console,
            Serves::OperatorConsoleOnly => console || path == "/console/console.css",
        }
    }
}

/// [`router`], answering only what `serves` allows.
pub fn router_serving(state: AppState, serves: Serves) -> Router {
    let router = router(state);
    if serves == Serves::Everything {
        return router;
    }
    router.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| async move {
            if serves.allows(request.uri().path()) {
                next.run(request).await
            } else {
                middleware::route_not_found().await.into_response()
            }
        },
    ))
}

pub fn router(state: AppState) -> Router {
    // Everything under /v1, unknown paths included, answers 401 before anything else.
    let v1 = Router::from(merchant_routes())
        .fallback(middleware::route_not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.config.request_timeout,
            middleware::time_limit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::require_merchant,
        ));
    let public = Router::from(public_routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            console::once::answer_once,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::limit_public,
        ));
    let routes = public
        .nest("/v1", v1)
        .nest("/admin/v1", admin::with_operator_layers(state.clone()))
        .nest("/courier/v1", courier::with_courier_layers(state.clone()));
    let draining = state.draining.clone();
    let max_body_bytes = state.config.max_body_bytes;
    with_edge_layers(
        with_route_layers(routes, max_body_bytes).with_state(state),
        draining,
    )
}

/// What every route goes through, unknown ones included: the body limit, and the metrics (by
/// the route's template, known only once the request is routed).
fn with_route_layers<S>(routes: Router<S>, max_body_bytes: usize) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes
        .fallback(middleware::route_not_found)
        .method_not_allowed_fallback(middleware::method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            middleware::RequestMetrics::default(),
            middleware::record_metrics,
        ))
}

/// What every request goes through before it is routed: the drain, ids, logs, panics, error
/// bodies.
///
/// These wrap the router once, as its fallback, rather than each route: a layer of
/// `Router::layer` wraps every route in a box of its own, cloned and called anew for each
/// request.
fn with_edge_layers(routed: Router, draining: Draining) -> Router {
    let request_id = HeaderName::from_static(REQUEST_ID_HEADER);
    let edge = ServiceBuilder::new()
        .layer(axum::middleware::from_fn_with_state(
            draining,
            middleware::close_while_draining,
        ))
        .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
        .layer(PropagateRequestIdLayer::new(request_id))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<_>| {
                    let id = request
                        .headers()
                        .get(REQUEST_ID_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-");
                    tracing::info_span!(
                        "request",
                        request_id = %id,
                        method = %request.method(),
                        path = %tracking::loggable_path(request.uri().path()),
                    )
                })
                .on_response(|response: &Response<_>, latency: Duration, _: &Span| {
                    tracing::info!(
                        status = response.status().as_u16(),
                        latency_ms = latency.as_secs_f64() * 1000.0,
                        "response"
                    );
                })
                // Every answer is logged above; a fault is logged where it happens, with its
                // cause. A 503 a balancer polls for (`/readyz` while draining) is no error.
                .on_failure(()),
        )
        .layer(CatchPanicLayer::custom(middleware::panic_response))
        .layer(axum::middleware::from_fn(middleware::json_errors_only))
        .service(routed);
    Router::new().fallback_service(edge)
}

#[cfg(test)]
mod serves_tests {
    use super::Serves;

    #[test]
    fn a_console_of_its_own_splits_the_paths_between_the_listeners() {
        for path in ["/ops", "/ops/", "/ops/markets", "/ops/sign-in"] {
            assert!(!Serves::AllButOperatorConsole.allows(path), "{path}");
            assert!(Serves::OperatorConsoleOnly.allows(path), "{path}");
        }
        for path in [
            "/v1/quotes",
            "/console/jobs",
            "/admin/v1/merchants",
            "/opsx",
            "/track/x",
        ] {
            assert!(Serves::AllButOperatorConsole.allows(path), "{path}");
            assert!(!Serves::OperatorConsoleOnly.allows(path), "{path}");
        }
        assert!(Serves::OperatorConsoleOnly.allows("/console/console.css"));
        assert!(Serves::Everything.allows("/ops/markets") && Serves::Everything.allows("/v1/jobs"));
    }
}

#[cfg(test)]
mod tests {
    //! The edge's refusals, through the real layer stack with routes made for the purpose.

    use axum::body::{Body, to_bytes};
    use axum::http::{Request, StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    use serde_json::Value;
    use tower::ServiceExt;

    use super::*;

    #[derive(serde::Deserialize)]
    struct Order {
        #[allow(dead_code)]
        quantity: courier_domain::numeric::Numeric<i32>,
    }

    fn test_router() -> Router {
        let routes = Router::new()
            .route(
                "/page",
                get(|| async {
                    let mut response = (
                        StatusCode::NOT_FOUND,
                        axum::response::Html("<h1>Not here</h1>"),
                    )
                        .into_response();
                    response.extensions_mut().insert(middleware::PageForPeople);
                    response
                }),
            )
            .route("/order", post(|ApiJson(_): ApiJson<Order>| async { "ok" }))
            .route(
                "/panic",
                get(|| async {
                    if true {
                        panic!("secret detail: password=hunter2");
                    }
                    "unreachable"
                }),
            );
        with_edge_layers(with_route_layers(routes, 64), Draining::default())
    }

    async fn send(request: Request<Body>) -> (StatusCode, Value) {
        let response = test_router().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    fn post_order(content_type: Option<&str>, body: &str) -> Request<Body> {
        let mut builder = Request::post("/order");
        if let Some(content_type) = content_type {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        builder.body(Body::from(body.to_owned())).unwrap()
    }

    #[tokio::test]
    async fn well_formed_json_passes() {
        let request = post_order(Some("application/json"), r#"{"quantity": "2"}"#);
        let response = test_router().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn malformed_json_is_422_with_a_code() {
        let (status, body) = send(post_order(Some("application/json"), "{not json")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(body["code"], "request.malformed_json");
    }

    #[tokio::test]
    async fn json_of_the_wrong_shape_is_422_with_a_code() {
        let (status, body) =
            send(post_order(Some("application/json"), r#"{"quantity": 1.5}"#)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(body["code"], "request.invalid_body");
    }

    #[tokio::test]
    async fn a_wrong_content_type_is_415_with_a_code() {
        for content_type in [None, Some("text/plain")] {
            let (status, body) = send(post_order(content_type, r#"{"quantity": 1}"#)).await;
            assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
            assert_eq!(body["code"], "request.unsupported_media_type");
        }
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_413_with_a_code() {
        let big = format!(r#"{{"quantity": 1, "pad": "{}"}}"#, "x".repeat(200));
        let (status, body) = send(post_order(Some("application/json"), &big)).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(body["code"], "request.body_too_large");
    }

    #[tokio::test]
    async fn a_panic_is_500_internal_and_leaks_nothing() {
        let (status, body) = send(Request::get("/panic").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["code"], "internal");
        assert!(!body.to_string().contains("hunter2"));
    }

    #[tokio::test]
    async fn a_page_for_people_keeps_its_html_body() {
        let request = Request::get("/page").body(Body::empty()).unwrap();
        let response = test_router().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let bytes = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        assert_eq!(&bytes[..], b"<h1>Not here</h1>");
        // Without the mark, a 404 still gets the JSON body.
        let (status, body) = send(Request::get("/nowhere").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(body["code"], "not_found");
    }

    #[tokio::test]
    async fn a_request_past_the_time_limit_is_503_with_a_code() {
        let slow = Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    "late"
                }),
            )
            .route("/quick", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(
                Duration::from_millis(50),
                middleware::time_limit,
            ));
        let app = with_edge_layers(with_route_layers(slow, 64), Draining::default());
        let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
        let response = app.clone().oneshot(get("/slow")).await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let bytes = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["code"], "service.timeout");
        let response = app.oneshot(get("/quick")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_wrong_method_is_405_with_a_code() {
        let (status, body) = send(Request::get("/order").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(body["code"], "request.method_not_allowed");
    }
}
