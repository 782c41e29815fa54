//! The tracking page as HTML, from the same state the page later polls: templates shared with
//! the consoles (the map is the console job page's too), with the page's one stylesheet and
//! one script inline and allowed by hash in a Content-Security-Policy that lets nothing else
//! load, from this host or any other.

use std::sync::LazyLock;

use askama::Template;
use base64::Engine;
use sha2::{Digest, Sha256};

use courier_core::tracking::TrackingState;
use courier_core::tracking::map::MapView;

const STYLE: &str = include_str!("../../templates/tracking/page.css");
const SCRIPT: &str = include_str!("../../templates/tracking/page.js");

/// Nothing but the inline style and script (by hash) and polling this host.
pub fn content_security_policy() -> &'static str {
    static POLICY: LazyLock<String> = LazyLock::new(|| {
        format!(
            "default-src 'none'; script-src '{}'; style-src '{}'; connect-src 'self'; \
             img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            source_hash(SCRIPT),
            source_hash(STYLE)
        )
    });
    &POLICY
}

fn source_hash(source: &str) -> String {
    let digest = Sha256::digest(source.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[derive(Template)]
#[template(path = "tracking/page.html")]
struct TrackingPage<'a> {
    state: &'a TrackingState,
    /// The state's map, as `tracking/map.html` (shared with the console) names it.
    map: &'a MapView,
    style: &'static str,
    script: &'static str,
}

#[derive(Template)]
#[template(path = "tracking/notice.html")]
struct NoticePage<'a> {
    title: &'a str,
    heading: &'a str,
    paragraphs: &'a [&'a str],
    style: &'static str,
}

/// The page of a job.
pub fn render_page(state: &TrackingState) -> Result<String, askama::Error> {
    TrackingPage {
        state,
        map: &state.map,
        style: STYLE,
        script: SCRIPT,
    }
    .render()
}

fn notice(title: &str, heading: &str, paragraphs: &[&str]) -> Result<String, askama::Error> {
    NoticePage {
        title,
        heading,
        paragraphs,
        style: STYLE,
    }
    .render()
}

/// Unknown and expired tokens alike.
pub fn render_not_found() -> Result<String, askama::Error> {
    notice(
        "Delivery not found",
        "We can’t find this delivery",
        &[
            "The tracking link may be incomplete, or the delivery ended a while ago and its \
             tracking page has closed.",
            "Please check the link you were sent, or ask the sender about your order.",
        ],
    )
}

/// The page cannot be shown right now (the database is unreachable).
pub fn render_unavailable() -> Result<String, askama::Error> {
    notice(
        "Tracking unavailable",
        "Tracking is unavailable right now",
        &["Please try again in a minute."],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_exactly_the_inline_style_and_script() {
        let policy = content_security_policy();
        assert!(policy.starts_with("default-src 'none';"));
        assert!(policy.contains(&source_hash(SCRIPT)));
        assert!(policy.contains(&source_hash(STYLE)));
        assert!(!policy.contains("unsafe-inline") && !policy.contains("http"));
        let page = render_not_found().unwrap();
        assert!(page.contains(&format!("<style>{STYLE}</style>")));
        assert!(!page.contains("<script"));
        assert!(page.contains("We can’t find this delivery"));
    }
}
