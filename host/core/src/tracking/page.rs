//! The tracking page as HTML: server-rendered from the same state the page later polls, with
//! its one stylesheet and one script inline and allowed by hash in a Content-Security-Policy
//! that lets nothing else load, from this host or any other.

use std::fmt::Write;
use std::sync::LazyLock;

use base64::Engine;
use sha2::{Digest, Sha256};

use super::view::TrackingState;
use courier_domain::tracking::timeline::StepState;

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

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

/// Text or attribute value, escaped for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn hidden(visible: bool) -> &'static str {
    if visible { "" } else { " hidden" }
}

fn document(title: &str, header_extra: &str, head_extra: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex, nofollow\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n{head_extra}</head>\n<body>\n\
         <a class=\"skip\" href=\"#main\">Skip to the delivery</a>\n\
         <header class=\"site\"><div class=\"wrap\"><p class=\"brand\">Courier</p>{header_extra}</div></header>\n\
         {body}</body>\n</html>\n",
        title = escape(title),
    )
}

/// The page of a job.
pub fn render_page(state: &TrackingState) -> String {
    let live = !state.ended;
    let poll_ms = state.poll_after_ms.unwrap_or(0);
    let mut body = String::new();
    let _ = write!(
        body,
        "<main id=\"main\" class=\"wrap\" data-live=\"{live}\" data-poll-ms=\"{poll_ms}\" \
         data-status=\"{status}\">\n<h1>Track your delivery</h1>\n",
        status = escape(&state.status),
    );
    // Status, estimate and proof.
    let (eta_text, eta_remaining, eta_note) = match &state.estimate {
        Some(e) => (e.text.as_str(), e.remaining.as_str(), e.note.unwrap_or("")),
        None => ("", "", ""),
    };
    let _ = write!(
        body,
        "<section id=\"status-card\" class=\"card status{ended}\" aria-labelledby=\"status-headline\">\n\
         <div role=\"status\" aria-live=\"polite\" aria-atomic=\"true\">\n\
         <h2 id=\"status-headline\">{headline}</h2>\n<p id=\"status-detail\">{detail}</p>\n</div>\n\
         <div id=\"estimate\"{eta_hidden}>\n<p class=\"eta-label\">Estimated arrival</p>\n\
         <p class=\"eta\"><span id=\"eta-text\">{eta_text}</span> \
         <span id=\"eta-remaining\" class=\"muted\">{eta_remaining}</span></p>\n\
         <p id=\"eta-note\" class=\"muted small\"{note_hidden}>{eta_note}</p>\n</div>\n\
         <p id=\"proof\"{proof_hidden}>Proof of delivery: <strong id=\"proof-outcome\">{proof}</strong></p>\n\
         </section>\n",
        ended = if state.ended { " ended" } else { "" },
        headline = escape(state.headline),
        detail = escape(state.detail),
        eta_hidden = hidden(state.estimate.is_some()),
        eta_text = escape(eta_text),
        eta_remaining = escape(eta_remaining),
        note_hidden = hidden(!eta_note.is_empty()),
        eta_note = escape(eta_note),
        proof_hidden = hidden(state.proof_outcome.is_some()),
        proof = escape(state.proof_outcome.as_deref().unwrap_or("")),
    );
    // The map.
    let map = &state.map;
    let courier = map.courier;
    let (courier_x, courier_y) = courier.map_or((0.0, 0.0), |p| (p.x, p.y));
    let _ = write!(
        body,
        "<section class=\"card\" aria-labelledby=\"map-heading\">\n<h2 id=\"map-heading\">Map</h2>\n<figure>\n\
         <svg id=\"map\" viewBox=\"{view_box}\" role=\"img\" \
         aria-labelledby=\"map-title map-desc\" preserveAspectRatio=\"xMidYMid meet\">\n\
         <title id=\"map-title\">Delivery map</title>\n<desc id=\"map-desc\">{description}</desc>\n\
         <path id=\"map-streets\" d=\"{streets}\" fill=\"none\" stroke=\"#fff\" stroke-width=\"6\" \
         stroke-linecap=\"round\" stroke-linejoin=\"round\"/>\n\
         <path id=\"map-route\" d=\"{route}\" fill=\"none\" stroke=\"#0b57d0\" stroke-width=\"10\" \
         stroke-linecap=\"round\" stroke-linejoin=\"round\"/>\n\
         <path id=\"map-leg\" d=\"{leg}\" fill=\"none\" stroke=\"#4a5562\" stroke-width=\"7\" \
         stroke-dasharray=\"16 14\" stroke-linecap=\"round\" stroke-linejoin=\"round\"/>\n\
         <circle id=\"map-pickup\" cx=\"{pickup_x}\" cy=\"{pickup_y}\" r=\"22\" fill=\"#146c2e\" \
         stroke=\"#fff\" stroke-width=\"7\"/>\n\
         <circle id=\"map-dropoff\" cx=\"{dropoff_x}\" cy=\"{dropoff_y}\" r=\"22\" fill=\"#b3261e\" \
         stroke=\"#fff\" stroke-width=\"7\"/>\n\
         <circle id=\"map-courier\" cx=\"{courier_x}\" cy=\"{courier_y}\" r=\"20\" fill=\"#1b1f24\" \
         stroke=\"#fff\" stroke-width=\"8\" visibility=\"{courier_visibility}\"/>\n</svg>\n\
         <figcaption><ul class=\"legend\">\n<li class=\"route\">Route</li>\n<li class=\"pickup\">Pickup</li>\n\
         <li class=\"dropoff\">Drop-off</li>\n<li id=\"legend-courier\" class=\"courier\"{courier_hidden}>Courier</li>\n\
         </ul></figcaption>\n</figure>\n</section>\n",
        view_box = escape(&map.view_box),
        description = escape(&map.description),
        streets = escape(&map.streets),
        route = escape(&map.route),
        leg = escape(&map.courier_leg),
        pickup_x = map.pickup.x,
        pickup_y = map.pickup.y,
        dropoff_x = map.dropoff.x,
        dropoff_y = map.dropoff.y,
        courier_visibility = if courier.is_some() {
            "visible"
        } else {
            "hidden"
        },
        courier_hidden = hidden(courier.is_some()),
    );
    // Areas and timeline.
    let _ = write!(
        body,
        "<section class=\"card\" aria-labelledby=\"stops-heading\">\n\
         <h2 id=\"stops-heading\">Pickup and drop-off</h2>\n<dl class=\"stops\">\n\
         <div><dt>Pickup area</dt><dd id=\"pickup-area\">{pickup}</dd></div>\n\
         <div><dt>Drop-off area</dt><dd id=\"dropoff-area\">{dropoff}</dd></div>\n</dl>\n</section>\n\
         <section class=\"card\" aria-labelledby=\"progress-heading\">\n\
         <h2 id=\"progress-heading\">Progress</h2>\n<ol id=\"timeline\" class=\"timeline\">\n",
        pickup = escape(&state.pickup_area),
        dropoff = escape(&state.dropoff_area),
    );
    for step in &state.timeline {
        let state_class = match step.state {
            StepState::Done => "done",
            StepState::Current => "current",
            StepState::Upcoming => "upcoming",
        };
        let current = if step.state == StepState::Current {
            " aria-current=\"step\""
        } else {
            ""
        };
        let _ = write!(
            body,
            "<li class=\"step {state_class}\"{current}><span class=\"label\">{label}\
             <span class=\"visually-hidden\"> ({spoken})</span></span>",
            label = escape(step.label),
            spoken = step.spoken,
        );
        if let (Some(at), Some(text)) = (step.at, &step.at_text) {
            let _ = write!(
                body,
                "<time datetime=\"{}\">{}</time>",
                at.to_rfc3339(),
                escape(text)
            );
        }
        body.push_str("</li>\n");
    }
    body.push_str("</ol>\n</section>\n</main>\n");
    let _ = write!(
        body,
        "<footer class=\"wrap site-footer\"><p>Updated <time id=\"updated-at\" datetime=\"{at}\">{text}</time>. \
         <span id=\"live-note\">{note}</span></p></footer>\n<script>{SCRIPT}</script>\n",
        at = state.updated_at.to_rfc3339(),
        text = escape(&state.updated_text),
        note = if live {
            "This page updates on its own."
        } else {
            "This delivery has ended."
        },
    );
    // Without scripts, the page reloads itself while the delivery is under way.
    let head_extra = if live {
        "<noscript><meta http-equiv=\"refresh\" content=\"30\"></noscript>\n"
    } else {
        ""
    };
    document(
        &format!("{} · Delivery {}", state.headline, state.reference),
        &format!(
            "<p class=\"reference\">Delivery <span>{}</span></p>",
            escape(&state.reference)
        ),
        head_extra,
        &body,
    )
}

fn notice(title: &str, heading: &str, paragraphs: &[&str]) -> String {
    let mut body = format!(
        "<main id=\"main\" class=\"wrap\">\n<h1>{}</h1>\n<section class=\"card notice\">\n",
        escape(heading)
    );
    for paragraph in paragraphs {
        let _ = writeln!(body, "<p>{}</p>", escape(paragraph));
    }
    body.push_str("</section>\n</main>\n");
    document(title, "", "", &body)
}

/// Unknown and expired tokens alike.
pub fn render_not_found() -> String {
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
pub fn render_unavailable() -> String {
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
    fn text_is_escaped() {
        assert_eq!(
            escape("<b>\"Tom\" & 'Jerry'</b>"),
            "&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;"
        );
    }

    #[test]
    fn the_policy_allows_exactly_the_inline_style_and_script() {
        let policy = content_security_policy();
        assert!(policy.starts_with("default-src 'none';"));
        assert!(policy.contains(&source_hash(SCRIPT)));
        assert!(policy.contains(&source_hash(STYLE)));
        assert!(!policy.contains("unsafe-inline") && !policy.contains("http"));
        let page = render_not_found();
        assert!(page.contains(&format!("<style>{STYLE}</style>")));
        assert!(!page.contains("<script"));
    }
}
