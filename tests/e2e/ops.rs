//! Operations endpoints and request ids.

use reqwest::Method;

use crate::support::{TestApp, status_and_json};

#[tokio::test]
async fn health_and_readiness_answer() {
    let app = TestApp::spawn().await;
    let (status, body) =
        status_and_json(app.request(Method::GET, "/healthz").send().await.unwrap()).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));
    let (status, body) =
        status_and_json(app.request(Method::GET, "/readyz").send().await.unwrap()).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ready")));
    app.stop().await;
}

#[tokio::test]
async fn every_response_carries_a_request_id_and_echoes_the_callers() {
    let app = TestApp::spawn().await;
    let response = app.request(Method::GET, "/healthz").send().await.unwrap();
    let generated = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(uuid::Uuid::parse_str(&generated).is_ok(), "{generated}");
    let response = app
        .request(Method::GET, "/nowhere")
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "trace-me-42");
    app.stop().await;
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_status() {
    let app = TestApp::spawn().await;
    app.request(Method::GET, "/healthz").send().await.unwrap();
    app.request(Method::GET, "/v1/some/thing")
        .send()
        .await
        .unwrap();
    let response = app.request(Method::GET, "/metrics").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("http_requests_total"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("http_requests_total")
            && l.contains("route=\"/healthz\"")
            && l.contains("status=\"200\"")),
        "{text}"
    );
    assert!(text.contains("http_request_duration_seconds_bucket"));
    // Concrete paths never become labels.
    assert!(!text.contains("/v1/some/thing"));
    app.stop().await;
}

#[tokio::test]
async fn graceful_stop_releases_the_port() {
    let app = TestApp::spawn().await;
    let address = app.address;
    app.stop().await;
    assert!(tokio::net::TcpStream::connect(address).await.is_err());
}
