//! The webhook portal's event catalog: each event the service sends, with its headers, an
//! example body and the body's JSON Schema, all read from the API's own description (its
//! `webhooks`), so the page and the published schemas cannot disagree.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::respond::{SessionBar, page, signed_in};
use crate::state::AppState;

struct CatalogEvent {
    name: String,
    anchor: String,
    summary: String,
    headers: Vec<(String, String)>,
    example: String,
    schema: String,
}

#[derive(Template)]
#[template(path = "console/events.html")]
struct CatalogPage {
    session: Option<SessionBar>,
    events: Vec<CatalogEvent>,
}

/// `value` with every `#/components/schemas/…` reference replaced by the schema it names
/// (a schema already being inlined is left as its reference: no endless nesting).
fn inlined(value: &Value, schemas: &Map<String, Value>, open: &mut Vec<String>) -> Value {
    match value {
        Value::Object(object) => {
            if let Some(name) = object
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
                && let Some(schema) = schemas.get(name)
                && !open.iter().any(|o| o == name)
            {
                open.push(name.to_owned());
                let resolved = inlined(schema, schemas, open);
                open.pop();
                return resolved;
            }
            Value::Object(
                object
                    .iter()
                    .map(|(k, v)| (k.clone(), inlined(v, schemas, open)))
                    .collect(),
            )
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| inlined(v, schemas, open)).collect())
        }
        other => other.clone(),
    }
}

/// A value the schema accepts, for the example: the first of an enum, a date-time, a UUID,
/// and the fields of an object that `event` has (those whose description names another event
/// only are left out).
fn example(schema: &Value, event: &str) -> Value {
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    if let Some(first) = ["oneOf", "anyOf"]
        .iter()
        .find_map(|k| schema.get(*k).and_then(|v| v.get(0)))
    {
        return example(first, event);
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("null"),
        Some(Value::String(kind)) => kind.as_str(),
        _ if schema.get("properties").is_some() => "object",
        _ => "null",
    };
    match (kind, schema.get("format").and_then(Value::as_str)) {
        ("object", _) => {
            let properties = schema
                .get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            Value::Object(
                properties
                    .iter()
                    .filter(|(_, p)| belongs_to(p, event))
                    .map(|(k, p)| (k.clone(), example(p, event)))
                    .collect(),
            )
        }
        ("array", _) => json!([example(schema.get("items").unwrap_or(&Value::Null), event)]),
        ("string", Some("date-time")) => json!("2026-11-28T10:15:00Z"),
        ("string", Some("uuid")) => json!("0b6c5c52-3a1e-4c5e-9d61-2f0f3a8e9b10"),
        ("string", _) => json!("…"),
        ("integer", _) => json!(0),
        ("number", _) => json!(0.0),
        ("boolean", _) => json!(false),
        _ => Value::Null,
    }
}

/// Whether a field is one `event` sends: an object, or a value whose description names no
/// event, or names this one.
fn belongs_to(property: &Value, event: &str) -> bool {
    if property.get("properties").is_some() {
        return true;
    }
    let description = property
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let names_events = description.contains("job.") || description.contains("payment_method.");
    !names_events || description.contains(event)
}

fn catalog() -> Vec<CatalogEvent> {
    let document = crate::openapi_document();
    let schemas = document["components"]["schemas"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let Some(webhooks) = document["webhooks"].as_object() else {
        return Vec::new();
    };
    webhooks
        .iter()
        .map(|(name, item)| {
            let post = &item["post"];
            let headers = post["parameters"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or_default().to_owned(),
                        p["description"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let body = &post["requestBody"]["content"]["application/json"]["schema"];
            let schema = inlined(body, &schemas, &mut Vec::new());
            let mut sample = example(&schema, name);
            if let Some(envelope) = sample.as_object_mut() {
                envelope.insert("type".into(), json!(name));
                envelope.insert("environment".into(), json!("test"));
            }
            CatalogEvent {
                name: name.clone(),
                anchor: name.replace('.', "-"),
                summary: post["summary"].as_str().unwrap_or_default().to_owned(),
                headers,
                example: serde_json::to_string_pretty(&sample).unwrap_or_default(),
                schema: serde_json::to_string_pretty(&schema).unwrap_or_default(),
            }
        })
        .collect()
}

#[utoipa::path(
    get,
    path = "/console/webhooks/events",
    operation_id = "consoleEventCatalog",
    tag = "console",
    summary = "The event catalog: each event with its headers, an example and its JSON Schema",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
    )
)]
pub async fn events_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match signed_in(&state, &headers).await {
        Ok(session) => page(
            StatusCode::OK,
            CatalogPage {
                session: Some(SessionBar::from(&session)),
                events: catalog(),
            }
            .render(),
        ),
        Err(answer) => answer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_published_event_is_in_the_catalog_with_an_example_its_schema_accepts() {
        let events = catalog();
        let published = crate::openapi_document()["webhooks"]
            .as_object()
            .unwrap()
            .len();
        assert_eq!(events.len(), published);
        for event in &events {
            let example: Value = serde_json::from_str(&event.example).unwrap();
            assert_eq!(example["type"], json!(event.name));
            assert!(example["data"].is_object(), "{}", event.example);
            assert!(
                !event
                    .schema
                    .contains("$ref\": \"#/components/schemas/EventEnvelope")
            );
            assert!(event.headers.iter().any(|(h, _)| h == "Courier-Signature"));
        }
        let dead = events
            .iter()
            .find(|e| e.name == "payment_method.dead")
            .unwrap();
        assert!(dead.example.contains("lastFour"), "{}", dead.example);
        assert!(!dead.example.contains("\"courier\""), "{}", dead.example);
    }
}
