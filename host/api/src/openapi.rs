//! The API's description (OpenAPI 3.1), generated from the handlers' `#[utoipa::path]`
//! annotations and the bodies' `ToSchema` derives, so it cannot drift from the routes: every
//! route is registered through `utoipa_axum::routes!`, which reads the same annotation.
//! Served at `GET /v1/openapi.json` and kept in the repository as `openapi.json`.
//!
//! An annotation names its operation's own refusals by code, space-separated, as the
//! response's description: `(status = 404, description = "job.not_found")`. [`finish`] turns
//! each into a `{code, message}` body whose `code` may be exactly those codes, and adds the
//! refusals that every operation of its section shares (credentials, rate limits, bodies,
//! time limits, the database being away).

use std::collections::BTreeSet;

use courier_domain::error::Code;
use serde_json::{Value, json};
use utoipa::OpenApi;

/// The description's fixed parts; the paths come from the routers.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Courier API",
        version = "1",
        description = "Quotes, bookings, tracking and payments of the Courier delivery service; \
                       the operator API under /admin/v1 and the couriers' API under /courier/v1. \
                       Every refusal is a JSON body {code, message} whose code is stable.",
    ),
    tags(
        (name = "quotes", description = "Priced offers for a delivery, valid for a while"),
        (name = "jobs", description = "Booked deliveries"),
        (name = "lookups", description = "Routes and places on the market's real road network"),
        (name = "payments", description = "Cards on file and the charges against them"),
        (name = "webhooks", description = "Event notifications to the merchant's endpoints"),
        (name = "sandbox", description = "The test environment's simulated couriers"),
        (name = "tracking", description = "The public tracking page and its state"),
        (name = "operations", description = "Health, readiness, metrics and this description"),
        (name = "admin", description = "Operators: markets, price books, merchants, couriers"),
        (name = "couriers", description = "The couriers' app: offers, jobs, proof of delivery"),
    ),
    components(schemas(EventEnvelope))
)]
struct Fixed;

/// The whole description of `paths` (the routes' own descriptions): the fixed parts, then
/// every operation finished with its credentials and refusals, and links between operations.
pub fn describe(paths: utoipa::openapi::OpenApi) -> Value {
    let mut openapi = Fixed::openapi();
    openapi.merge(paths);
    finish(serde_json::to_value(openapi).expect("the description serialises"))
}

/// What every event POSTs to a webhook endpoint (spec section 6), as the standard payload
/// shaper writes it.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct EventEnvelope {
    #[serde(rename = "type")]
    kind: courier_domain::event::EventName,
    /// When it happened, not when it was sent; order by this.
    occurred_at: chrono::DateTime<chrono::Utc>,
    /// `test` or `live`.
    environment: String,
    data: EventData,
}

/// The facts of an event. Every event has `occurredAt`, `environment`, `merchant`, and, except
/// `payment_method.dead`, `jobId` and `reference`; the rest depends on the event.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct EventData {
    occurred_at: chrono::DateTime<chrono::Utc>,
    /// 0 = test, 1 = live.
    environment: i32,
    /// The merchant's identifier.
    merchant: String,
    job_id: Option<uuid::Uuid>,
    reference: Option<String>,
    /// job.booked, job.delivered, job.returned.
    market: Option<String>,
    /// job.booked, job.delivered, job.returned.
    currency: Option<String>,
    /// job.booked, job.delivered, job.returned.
    price_amount_minor: Option<i64>,
    /// job.booked, job.delivered, job.returned.
    tax_amount_minor: Option<i64>,
    /// job.booked; null when booked for now.
    scheduled_for: Option<chrono::DateTime<chrono::Utc>>,
    /// The courier's name: job.courier_assigned, job.picked_up, job.delivered, job.returned.
    courier: Option<String>,
    /// job.delivered.
    proof: Option<EventProof>,
    /// job.returned, job.cancelled, job.failed, job.status_changed, payment_method.dead.
    reason: Option<String>,
    /// job.cancelled, when someone was on the way.
    assigned_courier: Option<String>,
    /// job.status_changed: the status before.
    from: Option<String>,
    /// job.status_changed: the status after.
    to: Option<String>,
    /// payment_method.dead.
    payment_method_id: Option<uuid::Uuid>,
    /// payment_method.dead.
    brand: Option<String>,
    /// payment_method.dead.
    last_four: Option<String>,
}

/// What happened at the door (job.delivered).
#[derive(serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct EventProof {
    #[schema(value_type = courier_domain::job::proof::DeliveryOutcome)]
    outcome: String,
    recipient_name: Option<String>,
    has_photo: bool,
    has_signature: bool,
}

/// Which credentials a path asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    Public,
    Merchant,
    Operator,
    Courier,
}

impl Section {
    fn of(path: &str) -> Self {
        if path == "/v1/openapi.json" {
            Section::Public
        } else if path.starts_with("/v1/") {
            Section::Merchant
        } else if path.starts_with("/admin/v1/") {
            Section::Operator
        } else if path.starts_with("/courier/v1/") {
            Section::Courier
        } else {
            Section::Public
        }
    }

    fn security_scheme(self) -> Option<&'static str> {
        match self {
            Section::Public => None,
            Section::Merchant => Some("merchantKey"),
            Section::Operator => Some("operatorToken"),
            Section::Courier => Some("courierKey"),
        }
    }

    /// Refusals every operation of the section can answer, whatever it does.
    fn shared_refusals(self) -> Vec<(u16, &'static [&'static str])> {
        const CREDENTIALS: &[&str] = &[
            "auth.missing_credentials",
            "auth.malformed_credentials",
            "auth.invalid_credentials",
        ];
        match self {
            // Every public route counts against the client address's budget.
            Section::Public => vec![(429, &["rate_limited"])],
            Section::Merchant => vec![
                (401, CREDENTIALS),
                (429, &["rate_limited"]),
                (503, &["service.database_unavailable", "service.timeout"]),
            ],
            Section::Operator => vec![
                (401, CREDENTIALS),
                (429, &["rate_limited"]),
                (503, &["service.database_unavailable", "service.timeout"]),
            ],
            Section::Courier => vec![
                (401, CREDENTIALS),
                (403, &["courier.suspended"]),
                (429, &["rate_limited"]),
                (503, &["service.database_unavailable"]),
            ],
        }
    }
}

/// Refusals of any operation that takes a JSON body.
const BODY_REFUSALS: &[(u16, &[&str])] = &[
    (413, &["request.body_too_large"]),
    (415, &["request.unsupported_media_type"]),
    (
        422,
        &[
            "request.malformed_json",
            "request.invalid_body",
            "payment.raw_card_number",
        ],
    ),
];

const METHODS: &[&str] = &["get", "put", "post", "delete", "patch"];

/// A created (or listed) resource's links to the operations on it (OpenAPI links), so a
/// client or a stateful fuzzer can chain calls: create, then read, change or delete what was
/// created; list, then act on the first listed.
struct ResourceLinks {
    /// The creating (or listing) operation and its success status.
    from: (&'static str, &'static str),
    /// Path parameters of the targets and where their values come from (runtime expressions).
    parameters: &'static [(&'static str, &'static str)],
    /// The operations on the created resource.
    to: &'static [&'static str],
}

const LINKS: &[ResourceLinks] = &[
    ResourceLinks {
        from: ("bookJob", "201"),
        parameters: &[("id", "$response.body#/id")],
        to: &[
            "getJob",
            "cancelJob",
            "getCourierPosition",
            "getSandboxRun",
            "advanceSandboxRun",
            "chooseSandboxScenario",
        ],
    },
    ResourceLinks {
        from: ("createWebhookEndpoint", "201"),
        parameters: &[("id", "$response.body#/id")],
        to: &[
            "listWebhookDeliveries",
            "rotateWebhookSecret",
            "resumeWebhookEndpoint",
            "deleteWebhookEndpoint",
        ],
    },
    ResourceLinks {
        from: ("attachPaymentMethod", "201"),
        parameters: &[("id", "$response.body#/id")],
        to: &["makePaymentMethodDefault", "removePaymentMethod"],
    },
    ResourceLinks {
        from: ("createCourier", "201"),
        parameters: &[("id", "$response.body#/id")],
        to: &["getCourier", "suspendCourier", "reinstateCourier"],
    },
    ResourceLinks {
        from: ("createMerchant", "201"),
        parameters: &[("id", "$response.body#/merchant_id")],
        to: &[
            "getMerchant",
            "createApiKey",
            "getMerchantSettings",
            "changeMerchantSettings",
        ],
    },
    ResourceLinks {
        from: ("listJobs", "200"),
        parameters: &[("id", "$response.body#/items/0/id")],
        to: &["getJob", "cancelJob", "getCourierPosition"],
    },
    ResourceLinks {
        from: ("listCourierOffers", "200"),
        parameters: &[("id", "$response.body#/0/id")],
        to: &["acceptOffer", "declineOffer"],
    },
    ResourceLinks {
        from: ("listCourierJobs", "200"),
        parameters: &[("id", "$response.body#/0/id")],
        to: &["markJobCollected", "markJobDelivered", "markJobReturned"],
    },
    ResourceLinks {
        from: ("uploadPriceBook", "201"),
        parameters: &[
            ("market", "$response.body#/market"),
            ("version", "$response.body#/version"),
        ],
        to: &["activatePriceBook", "comparePriceBook"],
    },
];

/// Adds [`LINKS`] to the creating and listing operations' success responses.
fn add_links(paths: &mut serde_json::Map<String, Value>) {
    for links in LINKS {
        let (operation_id, status) = links.from;
        let response = paths
            .values_mut()
            .flat_map(|item| {
                item.as_object_mut()
                    .expect("path items are objects")
                    .values_mut()
            })
            .find(|operation| operation["operationId"] == operation_id)
            .unwrap_or_else(|| panic!("linked operation {operation_id} is not described"))
            .pointer_mut(&format!("/responses/{status}"))
            .unwrap_or_else(|| panic!("{operation_id} does not answer {status}"));
        let described: serde_json::Map<String, Value> = links
            .to
            .iter()
            .map(|target| {
                let parameters: serde_json::Map<String, Value> = links
                    .parameters
                    .iter()
                    .map(|(name, value)| (format!("path.{name}"), json!(value)))
                    .collect();
                (
                    (*target).to_owned(),
                    json!({ "operationId": target, "parameters": parameters }),
                )
            })
            .collect();
        response["links"] = Value::Object(described);
    }
}

/// Security schemes, refusal bodies and shared refusals, added to what the annotations say.
fn finish(mut document: Value) -> Value {
    let components = document["components"]
        .as_object_mut()
        .expect("the description has components");
    components.insert("securitySchemes".into(), security_schemes());
    components
        .entry("schemas")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("schemas are an object")
        .insert("Error".into(), error_schema(None));
    document["webhooks"] = webhooks();
    let paths = document["paths"]
        .as_object_mut()
        .expect("the description has paths");
    let declared = courier_domain::error::catalogue::<crate::ApiError>();
    for (path, item) in paths.iter_mut() {
        let section = Section::of(path);
        for method in METHODS {
            if let Some(operation) = item.get_mut(*method) {
                finish_operation(section, operation, &declared);
            }
        }
    }
    add_links(paths);
    document
}

/// `declared`: every code the service answers with, whose meanings describe the refusals.
fn finish_operation(section: Section, operation: &mut Value, declared: &[&Code]) {
    let operation = operation.as_object_mut().expect("operations are objects");
    match section.security_scheme() {
        Some(scheme) => operation.insert("security".into(), json!([{ scheme: [] }])),
        None => operation.remove("security"),
    };
    let takes_json = operation
        .get("requestBody")
        .and_then(|body| body["content"].get("application/json"))
        .is_some();
    let responses = operation
        .entry("responses")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("responses are an object");

    let mut refusals: Vec<(u16, BTreeSet<String>)> = Vec::new();
    let mut add = |status: u16, codes: &[&str]| match refusals.iter_mut().find(|r| r.0 == status) {
        Some((_, known)) => known.extend(codes.iter().map(|c| (*c).to_owned())),
        None => refusals.push((status, codes.iter().map(|c| (*c).to_owned()).collect())),
    };
    for (status, response) in responses.iter() {
        let Ok(status) = status.parse::<u16>() else {
            continue;
        };
        if status >= 400 && response.get("content").is_none() {
            let description = response["description"].as_str().unwrap_or_default();
            add(status, &description.split_whitespace().collect::<Vec<_>>());
        }
    }
    for (status, codes) in section.shared_refusals() {
        add(status, codes);
    }
    if takes_json {
        for (status, codes) in BODY_REFUSALS {
            add(*status, codes);
        }
    }
    add(500, &["internal"]);

    for (status, codes) in refusals {
        // A refusal described with its own content (a page for people) stays as described.
        if responses
            .get(&status.to_string())
            .is_some_and(|response| response.get("content").is_some())
        {
            continue;
        }
        let codes: Vec<String> = codes.into_iter().collect();
        let mut response = json!({
            "description": refusal_description(&codes, declared),
            "content": { "application/json": { "schema": error_schema(Some(&codes)) } },
        });
        if let Some(headers) = refusal_headers(section, status) {
            response["headers"] = headers;
        }
        responses.insert(status.to_string(), response);
    }
}

/// "Refused:" and each code with its meaning, as the code's declaration gives it.
fn refusal_description(codes: &[String], declared: &[&Code]) -> String {
    let mut description = String::from("Refused:");
    for code in codes {
        description.push_str(&format!("\n- `{code}`"));
        if let Some(declaration) = declared.iter().find(|d| d.code == code) {
            description.push_str(&format!(": {}", declaration.meaning));
        }
    }
    description
}

/// `{code, message}`; with `codes`, the code is one of them.
fn error_schema(codes: Option<&[String]>) -> Value {
    let mut code = json!({ "type": "string", "description": "Stable, machine-readable" });
    if let Some(codes) = codes {
        code["enum"] = json!(codes);
    }
    json!({
        "type": "object",
        "required": ["code", "message"],
        "properties": {
            "code": code,
            "message": { "type": "string", "description": "For people; may change" },
        },
    })
}

fn refusal_headers(section: Section, status: u16) -> Option<Value> {
    let header =
        |description: &str| json!({ "description": description, "schema": { "type": "string" } });
    match (section, status) {
        (_, 429) => Some(json!({
            "Retry-After": header("Whole seconds until the budget allows this request again"),
        })),
        (Section::Merchant | Section::Operator | Section::Courier, 401) => Some(json!({
            "WWW-Authenticate": header("The challenge for the credentials this section takes"),
        })),
        _ => None,
    }
}

/// One POST per event name to the merchant's endpoints, signed.
fn webhooks() -> Value {
    let header = |name: &str, description: &str| {
        json!({ "name": name, "in": "header", "required": true, "description": description,
                "schema": { "type": "string" } })
    };
    let events = courier_domain::event::EventName::ALL.map(|event| {
        let operation = json!({
            "post": {
                "operationId": format!("event.{}", event.as_str()),
                "summary": format!("{}: sent to endpoints subscribed to it", event.as_str()),
                "parameters": [
                    header("Courier-Event", "The event name"),
                    header("Courier-Delivery", "The delivery's id: the same on every retry; de-duplicate on it"),
                    header("Courier-Signature", "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"{t}.{raw body}\" with the endpoint's signing secret>"),
                ],
                "requestBody": {
                    "required": true,
                    "content": { "application/json": {
                        "schema": { "$ref": "#/components/schemas/EventEnvelope" },
                    } },
                },
                "responses": {
                    "2XX": { "description": "Received: answer within 10 seconds. Anything else is retried, ten attempts in all; 410 stops the retries." },
                },
            },
        });
        (event.as_str().to_owned(), operation)
    });
    Value::Object(events.into_iter().collect())
}

fn security_schemes() -> Value {
    json!({
        "merchantKey": {
            "type": "http",
            "scheme": "basic",
            "description": "The merchant's API key: key id as the user name, secret as the password. \
                            Test keys act in the test environment, live keys in live.",
        },
        "operatorToken": {
            "type": "http",
            "scheme": "bearer",
            "description": "An operator's token (COURIER_ADMIN_TOKEN or one of COURIER_OPERATOR_TOKENS)",
        },
        "courierKey": {
            "type": "http",
            "scheme": "bearer",
            "description": "The courier's credential crk_<key>.<secret>, issued when an operator adds the courier",
        },
    })
}

/// Keeps `openapi.json` at the repository's top equal to what the code generates.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi_document as document;

    fn kept_copy() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi.json")
    }

    #[test]
    fn the_kept_copy_is_what_the_code_generates() {
        let generated = format!("{}\n", serde_json::to_string_pretty(document()).unwrap());
        if std::env::var_os("COURIER_WRITE_OPENAPI").is_some() {
            std::fs::write(kept_copy(), &generated).unwrap();
        }
        let kept = std::fs::read_to_string(kept_copy()).unwrap_or_default();
        assert!(
            kept == generated,
            "openapi.json is stale; regenerate it with \
             `COURIER_WRITE_OPENAPI=1 cargo test -p courier --lib openapi`"
        );
    }

    #[test]
    fn every_operation_is_described_with_its_refusals() {
        let document = document();
        assert_eq!(document["openapi"], "3.1.0");
        let mut operation_ids = BTreeSet::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let id = operation["operationId"].as_str().unwrap_or_default();
                assert!(!id.is_empty(), "{method} {path} has no operationId");
                assert!(operation_ids.insert(id.to_owned()), "{id} is used twice");
                assert!(
                    operation["tags"].as_array().is_some_and(|t| !t.is_empty()),
                    "{id} has no tag"
                );
                let responses = operation["responses"].as_object().unwrap();
                // A page's form succeeds by sending the browser on (303, post/redirect/get).
                assert!(
                    responses
                        .keys()
                        .any(|s| s.starts_with('2') || s.starts_with('3')),
                    "{id} documents no success"
                );
                for (status, response) in responses {
                    let for_people = response["content"].get("text/html").is_some();
                    if (status.starts_with('4') || status.starts_with('5')) && !for_people {
                        let codes = &response["content"]["application/json"]["schema"]["properties"]
                            ["code"]["enum"];
                        assert!(
                            codes.as_array().is_some_and(|c| !c.is_empty()),
                            "{id} answers {status} without naming its codes"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn links_lead_to_described_operations_with_their_path_parameters() {
        let mut paths_by_operation = std::collections::BTreeMap::new();
        for (path, item) in document()["paths"].as_object().unwrap() {
            for operation in item.as_object().unwrap().values() {
                paths_by_operation.insert(operation["operationId"].as_str().unwrap(), path);
            }
        }
        for links in LINKS {
            for target in links.to {
                let path = paths_by_operation
                    .get(target)
                    .unwrap_or_else(|| panic!("{target} is not described"));
                let mut named: Vec<String> = links
                    .parameters
                    .iter()
                    .map(|(name, _)| format!("{{{name}}}"))
                    .collect();
                let mut in_path: Vec<String> = path
                    .split('/')
                    .filter(|segment| segment.starts_with('{'))
                    .map(str::to_owned)
                    .collect();
                named.sort();
                in_path.sort();
                assert_eq!(named, in_path, "{target} ({path})");
            }
        }
    }

    #[test]
    fn every_code_the_description_lists_is_a_declared_code_and_every_declared_code_is_listed() {
        let catalogue = courier_domain::error::catalogue::<super::super::ApiError>();
        let declared: BTreeSet<&str> = catalogue.iter().map(|code| code.code).collect();
        let mut listed = BTreeSet::new();
        for (path, item) in document()["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let Some(responses) = operation["responses"].as_object() else {
                    continue;
                };
                for (status, response) in responses {
                    let codes = &response["content"]["application/json"]["schema"]["properties"]["code"]
                        ["enum"];
                    for code in codes.as_array().into_iter().flatten() {
                        let code = code.as_str().unwrap();
                        if let Some(declared) = catalogue.iter().find(|c| c.code == code) {
                            assert_eq!(
                                status,
                                &declared.status.to_string(),
                                "{method} {path} lists {code} under another status"
                            );
                        }
                        listed.insert(code.to_owned());
                    }
                }
            }
        }
        let mut listed: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
        let undeclared: Vec<_> = listed.difference(&declared).collect();
        assert!(
            undeclared.is_empty(),
            "listed but never declared: {undeclared:?}"
        );
        // Answered for a method no operation has, so no operation lists it.
        listed.insert("request.method_not_allowed");
        // A charge move its state refuses is settled by the workers (the charge was already
        // moved on); no operation answers it.
        listed.insert("charge.invalid_state");
        let unlisted: Vec<_> = declared.difference(&listed).collect();
        assert!(
            unlisted.is_empty(),
            "declared but listed by no operation: {unlisted:?}"
        );
    }

    #[test]
    fn named_values_are_the_domain_types_names() {
        use utoipa::PartialSchema;
        let values = |schema: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>| {
            serde_json::to_value(schema).unwrap()["enum"].clone()
        };
        assert_eq!(
            values(courier_domain::VehicleName::schema()),
            json!(["bicycle", "electric_bicycle", "motorcycle", "car", "van"])
        );
        let statuses = values(courier_domain::JobStatus::schema());
        assert_eq!(statuses.as_array().unwrap().len(), 8);
        assert!(statuses.as_array().unwrap().contains(&json!("in_transit")));
    }

    #[test]
    fn each_section_asks_for_its_own_credentials() {
        let paths = &document()["paths"];
        let scheme = |path: &str, method: &str| paths[path][method]["security"][0].clone();
        assert_eq!(scheme("/v1/jobs", "get"), json!({ "merchantKey": [] }));
        assert_eq!(
            scheme("/admin/v1/merchants", "get"),
            json!({ "operatorToken": [] })
        );
        assert_eq!(scheme("/courier/v1/me", "get"), json!({ "courierKey": [] }));
        assert!(paths["/healthz"]["get"].get("security").is_none());
        assert!(paths["/v1/openapi.json"]["get"].get("security").is_none());
    }

    #[test]
    fn a_route_registered_without_its_description_is_refused() {
        // `routes!` registers a handler at the path its annotation describes; a plain
        // `.route(` would serve a path the description does not know.
        let api = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut offenders = Vec::new();
        let mut folders = vec![api];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                    continue;
                }
                let source = std::fs::read_to_string(&path).unwrap();
                // Unit tests build routers of their own.
                let served = source.split("#[cfg(test)]").next().unwrap_or_default();
                // A route's path is a literal; `market.route(vehicle, ..)` is routing, not one.
                if served.contains(".route(\"") || served.contains(".route_service(") {
                    offenders.push(path.display().to_string());
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "routes outside `routes!`: {offenders:?}"
        );
    }
}
