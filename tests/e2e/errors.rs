//! The one error model at the edge: unknown routes, wrong methods.

use reqwest::Method;

use crate::support::{TestApp, assert_refusal};

#[tokio::test]
async fn unknown_routes_get_404_with_a_code() {
    let app = TestApp::spawn().await;
    let response = app.request(Method::GET, "/nowhere").send().await.unwrap();
    assert_refusal(response, 404, "not_found").await;
    app.stop().await;
}

#[tokio::test]
async fn a_wrong_method_gets_405_with_a_code() {
    let app = TestApp::spawn().await;
    for path in ["/healthz", "/readyz", "/metrics"] {
        let response = app.request(Method::POST, path).send().await.unwrap();
        assert_refusal(response, 405, "request.method_not_allowed").await;
    }
    app.stop().await;
}
