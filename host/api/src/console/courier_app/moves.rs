//! The courier's moves from the app: answering an offer, "collected", the delivery form with
//! its proof (a photo from the camera, a signature drawn on the screen), and "returned".
//! Each is the courier API's own move, under the form's action id as its key.

use askama::Template;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine;
use uuid::Uuid;

use super::super::respond::{field, see_other};
use super::{app_page, csrf_refusal, message, signed_form, signed_in, unavailable};
use crate::state::AppState;
use courier_core::couriers::CourierAppSession;
use courier_core::jobs::fulfilment::FulfilmentError;
use courier_domain::JobStatus;
use courier_domain::error::{Answer, ErrorCode};
use courier_domain::job::proof::{DeliveryRequest, FileUpload, Proof, Requirement};

/// The form's action id: the move's key, so a form sent twice moves the job once.
fn action_key(fields: &[(String, String)]) -> Option<&str> {
    field(fields, "action_id").filter(|id| !id.is_empty())
}

/// The page for a move the service refused: what happened, in words, with its code.
fn refused(error: &FulfilmentError) -> Response {
    let (status, heading, text) = match error {
        FulfilmentError::OfferExpired => (
            StatusCode::CONFLICT,
            "The offer ran out",
            "It was offered to someone else. New offers appear on the shift page.",
        ),
        FulfilmentError::OfferNotOpen => (
            StatusCode::CONFLICT,
            "The offer is gone",
            "It was withdrawn (the merchant called it off, or you went offline) or already answered.",
        ),
        FulfilmentError::OfferNotFound => (
            StatusCode::NOT_FOUND,
            "No such offer",
            "There is no such offer for you.",
        ),
        FulfilmentError::JobNotFound => (
            StatusCode::NOT_FOUND,
            "Not your job",
            "That job is not with you: it may have been given to another courier.",
        ),
        FulfilmentError::InvalidTransition(_) => (
            StatusCode::CONFLICT,
            "Already done",
            "The job has moved on since this page was shown (collected, delivered, or called off).",
        ),
        _ => match error.answer() {
            Answer::Refused(code) => (
                StatusCode::from_u16(code.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY),
                "Not sent",
                code.meaning,
            ),
            Answer::Fault(_) => {
                tracing::error!(%error, "a courier's move from the app failed");
                return unavailable(true);
            }
        },
    };
    let code = match error.answer() {
        Answer::Refused(code) => code.code,
        Answer::Fault(_) => "",
    };
    message(status, true, heading, &format!("{text} ({code})"))
}

fn parse_id(raw: &str) -> Option<Uuid> {
    Uuid::parse_str(raw).ok()
}

/// A move's form: its session, its fields, and the id of the offer or job it moves (`unknown`
/// answers one that is not an id); or the answer to give instead.
async fn move_form(
    state: &AppState,
    request: Request,
    raw_id: &str,
    unknown: FulfilmentError,
) -> Result<(CourierAppSession, Vec<(String, String)>, Uuid), Response> {
    let (session, fields) = signed_form(state, request).await?;
    let id = parse_id(raw_id).ok_or_else(|| refused(&unknown))?;
    Ok((session, fields, id))
}

/// The answer to a move: back to the shift, or the page that says why not.
fn answered<T>(moved: Result<T, FulfilmentError>) -> Response {
    match moved {
        Ok(_) => see_other("/courier/"),
        Err(error) => refused(&error),
    }
}

#[utoipa::path(
    post,
    path = "/courier/offers/{id}/accept",
    operation_id = "courierAppAcceptOffer",
    tag = "courier app",
    summary = "The couriers' app: take the offered job (every job of an offered route)",
    security(()),
    params(("id" = String, Path, description = "The offer's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `action_id`"),
    responses(
        (status = 303, description = "Taken: to the shift, the jobs' stops listed"),
        (status = 403, description = "A page: the form has no valid token, or the courier is suspended", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such offer (offer.not_found)", content_type = "text/html", body = String),
        (status = 409, description = "A page: the offer ran out or is gone (offer.expired offer.not_open idempotency.key_reused)", content_type = "text/html", body = String),
    )
)]
pub async fn accept(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, fields, id) =
        match move_form(&state, request, &id, FulfilmentError::OfferNotFound).await {
            Ok(form) => form,
            Err(answer) => return answer,
        };
    answered(
        state
            .fulfilment
            .accept_offer(session.courier.id, id, action_key(&fields))
            .await,
    )
}

#[utoipa::path(
    post,
    path = "/courier/offers/{id}/decline",
    operation_id = "courierAppDeclineOffer",
    tag = "courier app",
    summary = "The couriers' app: turn the offer down; it goes to another courier",
    security(()),
    params(("id" = String, Path, description = "The offer's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `action_id`"),
    responses(
        (status = 303, description = "Declined: to the shift"),
        (status = 403, description = "A page: the form has no valid token, or the courier is suspended", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such offer (offer.not_found)", content_type = "text/html", body = String),
        (status = 409, description = "A page: the offer ran out or is gone (offer.expired offer.not_open idempotency.key_reused)", content_type = "text/html", body = String),
    )
)]
pub async fn decline(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, fields, id) =
        match move_form(&state, request, &id, FulfilmentError::OfferNotFound).await {
            Ok(form) => form,
            Err(answer) => return answer,
        };
    answered(
        state
            .fulfilment
            .decline_offer(session.courier.id, id, action_key(&fields))
            .await,
    )
}

#[utoipa::path(
    post,
    path = "/courier/jobs/{id}/collected",
    operation_id = "courierAppCollected",
    tag = "courier app",
    summary = "The couriers' app: the parcel is collected (the job is in transit)",
    security(()),
    params(("id" = String, Path, description = "The job's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `action_id`"),
    responses(
        (status = 303, description = "To the shift"),
        (status = 403, description = "A page: the form has no valid token, or the courier is suspended", content_type = "text/html", body = String),
        (status = 404, description = "A page: not the courier's job (job.not_found)", content_type = "text/html", body = String),
        (status = 409, description = "A page: the job moved on (job.invalid_transition idempotency.key_reused)", content_type = "text/html", body = String),
    )
)]
pub async fn collected(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, fields, id) =
        match move_form(&state, request, &id, FulfilmentError::JobNotFound).await {
            Ok(form) => form,
            Err(answer) => return answer,
        };
    answered(
        state
            .fulfilment
            .collected(session.courier.id, id, action_key(&fields))
            .await,
    )
}

#[utoipa::path(
    post,
    path = "/courier/jobs/{id}/returned",
    operation_id = "courierAppReturned",
    tag = "courier app",
    summary = "The couriers' app: the parcel was brought back to the pickup, with the reason",
    security(()),
    params(("id" = String, Path, description = "The job's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `action_id`, `reason` (1 to 500 characters)"),
    responses(
        (status = 303, description = "To the shift"),
        (status = 403, description = "A page: the form has no valid token, or the courier is suspended", content_type = "text/html", body = String),
        (status = 404, description = "A page: not the courier's job (job.not_found)", content_type = "text/html", body = String),
        (status = 409, description = "A page: the job moved on (job.invalid_transition idempotency.key_reused)", content_type = "text/html", body = String),
        (status = 422, description = "The delivery page again, saying the reason is missing (job.reason_required)", content_type = "text/html", body = String),
    )
)]
pub async fn returned(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, fields, id) =
        match move_form(&state, request, &id, FulfilmentError::JobNotFound).await {
            Ok(form) => form,
            Err(answer) => return answer,
        };
    let reason = field(&fields, "reason");
    match state
        .fulfilment
        .returned(session.courier.id, id, reason, action_key(&fields))
        .await
    {
        Err(error @ FulfilmentError::ReasonRequired) => {
            delivery_page(&state, &session, id, Problem::Return(&error)).await
        }
        moved => answered(moved),
    }
}

/// The delivery page's fields, as the courier filled them (shown again after a refusal).
#[derive(Default)]
struct Typed {
    outcome: String,
    recipient_name: String,
    note: String,
}

#[derive(Template)]
#[template(path = "courier/deliver.html")]
struct DeliverPage {
    signed_in: bool,
    csrf: String,
    job_id: Uuid,
    reference: String,
    address: String,
    contact_name: String,
    collected: bool,
    photo_required: bool,
    signature_required: bool,
    typed: Typed,
    /// What was wrong with the delivery sent, with its code.
    delivery_error: Option<String>,
    return_error: Option<String>,
    deliver_action: Uuid,
    return_action: Uuid,
    max_megabytes: String,
}

/// What the delivery page says was wrong.
enum Problem<'a> {
    None,
    Delivery(&'a FulfilmentError, Typed),
    Return(&'a FulfilmentError),
}

fn in_words(error: &FulfilmentError) -> String {
    let code = match error.answer() {
        Answer::Refused(code) => code.code,
        Answer::Fault(_) => "",
    };
    format!("{error} ({code})")
}

async fn delivery_page(
    state: &AppState,
    session: &CourierAppSession,
    job_id: Uuid,
    problem: Problem<'_>,
) -> Response {
    let jobs = match state.couriers.jobs_under_way(session.courier.id).await {
        Ok(jobs) => jobs,
        Err(error) => {
            tracing::error!(%error, "reading a courier's jobs failed");
            return unavailable(true);
        }
    };
    let Some(job) = jobs.iter().find(|j| j.id == job_id) else {
        return refused(&FulfilmentError::JobNotFound);
    };
    let (status, typed, delivery_error, return_error) = match problem {
        Problem::None => (StatusCode::OK, Typed::default(), None, None),
        Problem::Delivery(error, typed) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            typed,
            Some(in_words(error)),
            None,
        ),
        Problem::Return(error) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Typed::default(),
            None,
            Some(in_words(error)),
        ),
    };
    let text = |name: &str| job.dropoff[name].as_str().unwrap_or_default().to_owned();
    app_page(
        status,
        DeliverPage {
            signed_in: true,
            csrf: session.csrf_token.clone(),
            job_id,
            reference: job.reference.clone(),
            address: text("address"),
            contact_name: text("contact_name"),
            // Shown before collection too, so a phone keeps the page for a dead zone; the
            // service takes a delivery only after the collection.
            collected: job.status == JobStatus::InTransit,
            photo_required: job.proof_photo_required,
            signature_required: job.proof_signature_required,
            typed,
            delivery_error,
            return_error,
            deliver_action: Uuid::new_v4(),
            return_action: Uuid::new_v4(),
            max_megabytes: format!(
                "{:.0}",
                state.config.dispatch.proof_max_bytes as f64 / 1_048_576.0
            ),
        }
        .render(),
    )
}

#[utoipa::path(
    get,
    path = "/courier/jobs/{id}/deliver",
    operation_id = "courierAppDeliveryPage",
    tag = "courier app",
    summary = "The couriers' app: the delivery form (outcome, recipient, photo from the camera, signature, note) and the return form",
    security(()),
    params(("id" = String, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /courier/sign-in"),
        (status = 404, description = "A page: not the courier's job under way", content_type = "text/html", body = String),
    )
)]
pub async fn deliver_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let Some(id) = parse_id(&id) else {
        return refused(&FulfilmentError::JobNotFound);
    };
    delivery_page(&state, &session, id, Problem::None).await
}

/// The delivery form as sent: its text fields and its files.
#[derive(Default)]
struct DeliveryForm {
    fields: Vec<(String, String)>,
    photo: Option<FileUpload>,
    signature: Option<FileUpload>,
}

/// Reads the multipart delivery form; files are kept as the API takes them (base64). A file
/// field left empty is no file; the signature pad sends a `data:` URL.
async fn read_delivery_form(state: &AppState, request: Request) -> Result<DeliveryForm, Response> {
    let too_large = || {
        message(
            StatusCode::PAYLOAD_TOO_LARGE,
            true,
            "The photo is too large",
            "Take the photo again at a lower size, then send the form again.",
        )
    };
    let unreadable = || {
        message(
            StatusCode::BAD_REQUEST,
            true,
            "The form could not be read",
            "Go back to the shift and send it again.",
        )
    };
    let limit = state.config.dispatch.proof_max_bytes.saturating_mul(3) + (64 << 10);
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| too_large())?;
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    let mut multipart = Multipart::from_request(request, state)
        .await
        .map_err(|_| unreadable())?;
    let mut form = DeliveryForm::default();
    let base64 = base64::engine::general_purpose::STANDARD;
    while let Some(part) = multipart.next_field().await.map_err(|_| unreadable())? {
        let name = part.name().unwrap_or_default().to_owned();
        let content_type = part.content_type().unwrap_or_default().to_owned();
        let is_file = part.file_name().is_some();
        let data = part.bytes().await.map_err(|_| unreadable())?;
        match name.as_str() {
            // An empty file field is no photo.
            "photo" if is_file && !data.is_empty() => {
                form.photo = Some(FileUpload {
                    content_type,
                    data: base64.encode(&data),
                });
            }
            "signature" => {
                let text = String::from_utf8_lossy(&data);
                // `data:image/png;base64,…` from the pad.
                if let Some((head, data)) = text.trim().split_once(',')
                    && let Some(content_type) = head
                        .strip_prefix("data:")
                        .and_then(|h| h.strip_suffix(";base64"))
                {
                    form.signature = Some(FileUpload {
                        content_type: content_type.to_owned(),
                        data: data.to_owned(),
                    });
                }
            }
            _ if !is_file => form
                .fields
                .push((name, String::from_utf8_lossy(&data).into_owned())),
            _ => {}
        }
    }
    Ok(form)
}

#[utoipa::path(
    post,
    path = "/courier/jobs/{id}/delivered",
    operation_id = "courierAppDelivered",
    tag = "courier app",
    summary = "The couriers' app: handed over, with proof (the job's proof requirement checked as the API checks it)",
    security(()),
    params(("id" = String, Path, description = "The job's id")),
    request_body(content = String, content_type = "multipart/form-data", description = "`csrf`, `action_id`, `outcome`, `recipient_name`, `note`, `photo` (a file), `signature` (a `data:image/png;base64,` URL)"),
    responses(
        (status = 303, description = "Delivered: to the shift"),
        (status = 403, description = "A page: the form has no valid token, or the courier is suspended", content_type = "text/html", body = String),
        (status = 404, description = "A page: not the courier's job (job.not_found)", content_type = "text/html", body = String),
        (status = 409, description = "A page: the job moved on (job.invalid_transition idempotency.key_reused)", content_type = "text/html", body = String),
        (status = 413, description = "A page: the form is larger than the proof files may be", content_type = "text/html", body = String),
        (status = 422, description = "The delivery page again, saying what is missing (proof.invalid_outcome proof.recipient_name_required proof.photo_required proof.signature_required proof.file_too_large proof.unsupported_content_type proof.invalid_file)", content_type = "text/html", body = String),
    )
)]
pub async fn delivered(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let session = match signed_in(&state, request.headers()).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let form = match read_delivery_form(&state, request).await {
        Ok(form) => form,
        Err(answer) => return answer,
    };
    if let Some(refusal) = csrf_refusal(&session, field(&form.fields, "csrf")) {
        return refusal;
    }
    let Some(id) = parse_id(&id) else {
        return refused(&FulfilmentError::JobNotFound);
    };
    let text = |name: &str| {
        field(&form.fields, name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let typed = Typed {
        outcome: text("outcome").unwrap_or_default(),
        recipient_name: text("recipient_name").unwrap_or_default(),
        note: text("note").unwrap_or_default(),
    };
    let request = DeliveryRequest {
        outcome: text("outcome"),
        recipient_name: text("recipient_name"),
        note: text("note"),
        photo: form.photo,
        signature: form.signature,
    };
    let max_bytes = state.config.dispatch.proof_max_bytes;
    let moved = state
        .fulfilment
        .delivered(session.courier.id, id, action_key(&form.fields), |job| {
            let requirement = Requirement {
                photo: job.proof_photo_required,
                signature: job.proof_signature_required,
            };
            Proof::parse(
                request,
                requirement,
                max_bytes,
                courier_core::infra::clock::now(),
            )
        })
        .await;
    match moved {
        Ok(_) => see_other("/courier/"),
        Err(error @ FulfilmentError::Proof(_)) => {
            delivery_page(&state, &session, id, Problem::Delivery(&error, typed)).await
        }
        Err(error) => refused(&error),
    }
}
