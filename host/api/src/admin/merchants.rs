//! Merchants, their keys and account settings, for operators.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::state::AppState;
use courier_core::auth::operators::Operator;
use courier_core::merchants::{
    self, AccountSettings, ApiKey, CreatedKey, MerchantDetail, MerchantSummary, NewMerchant,
    SettingsChange,
};
use courier_core::team::IssuedInvitation;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMerchantBody {
    /// 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    name: String,
}

#[utoipa::path(
    post,
    path = "/merchants",
    operation_id = "createMerchant",
    tag = "admin",
    summary = "Onboard a merchant; its first test and live keys' secrets are shown only in this response",
    request_body = NewMerchantBody,
    responses(
        (status = 201, description = "The merchant and its first two keys, with their secrets", body = NewMerchant),
        (status = 422, description = "merchant.invalid_name"),
    )
)]
/// `POST /admin/v1/merchants` `{name}`: 201 with the merchant and its first two keys.
pub async fn create(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    ApiJson(body): ApiJson<NewMerchantBody>,
) -> Result<(StatusCode, Json<NewMerchant>), ApiError> {
    let created = state
        .merchants
        .create_as(&body.name, &operator.name)
        .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(
    get,
    path = "/merchants",
    operation_id = "listMerchants",
    tag = "admin",
    summary = "Every merchant, newest first",
    responses((status = 200, description = "Merchants", body = Vec<MerchantSummary>))
)]
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<MerchantSummary>>, ApiError> {
    Ok(Json(state.merchants.list().await?))
}

#[utoipa::path(
    get,
    path = "/merchants/{id}",
    operation_id = "getMerchant",
    tag = "admin",
    summary = "A merchant with its settings and keys (never their secrets)",
    params(("id" = Uuid, Path, description = "The merchant's id")),
    responses(
        (status = 200, description = "The merchant", body = MerchantDetail),
        (status = 404, description = "merchant.not_found"),
    )
)]
pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<MerchantDetail>, ApiError> {
    Ok(Json(state.merchants.show(merchants::parse_id(&id)?).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKeyBody {
    #[schema(value_type = courier_domain::Environment)]
    environment: String,
    /// 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100)]
    label: String,
}

#[utoipa::path(
    post,
    path = "/merchants/{id}/keys",
    operation_id = "createApiKey",
    tag = "admin",
    summary = "Issue a merchant another API key; its secret is shown only in this response",
    params(("id" = Uuid, Path, description = "The merchant's id")),
    request_body = NewKeyBody,
    responses(
        (status = 201, description = "The key with its secret", body = CreatedKey),
        (status = 404, description = "merchant.not_found"),
        (status = 422, description = "key.invalid_environment key.invalid_label"),
    )
)]
/// `POST /admin/v1/merchants/{id}/keys` `{environment, label}`: 201 with the key and its
/// secret, which is never shown again.
pub async fn create_key(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewKeyBody>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    let created = state
        .merchants
        .create_key(
            merchants::parse_id(&id)?,
            &body.environment,
            &body.label,
            &operator.name,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(
    post,
    path = "/keys/{key}/revoke",
    operation_id = "revokeApiKey",
    tag = "admin",
    summary = "Revoke an API key at once, on every instance (idempotent)",
    params(("key" = String, Path, description = "The key (`ck_test_…` or `ck_live_…`), not its secret")),
    responses(
        (status = 200, description = "The key, revoked", body = ApiKey),
        (status = 404, description = "key.not_found"),
    )
)]
/// `POST /admin/v1/keys/{key}/revoke`: idempotent; answers the key.
pub async fn revoke_key(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(key): Path<String>,
) -> Result<Json<ApiKey>, ApiError> {
    Ok(Json(
        state.merchants.revoke_key(&key, &operator.name).await?,
    ))
}

#[utoipa::path(
    get,
    path = "/merchants/{id}/settings",
    operation_id = "getMerchantSettings",
    tag = "admin",
    params(("id" = Uuid, Path, description = "The merchant's id")),
    responses(
        (status = 200, description = "The merchant's account settings", body = AccountSettings),
        (status = 404, description = "merchant.not_found"),
    )
)]
pub async fn settings(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<AccountSettings>, ApiError> {
    Ok(Json(
        state.merchants.settings(merchants::parse_id(&id)?).await?,
    ))
}

#[utoipa::path(
    patch,
    path = "/merchants/{id}/settings",
    operation_id = "changeMerchantSettings",
    tag = "admin",
    summary = "Change some account settings: absent fields stay, null restores the default",
    params(("id" = Uuid, Path, description = "The merchant's id")),
    request_body = SettingsChange,
    responses(
        (status = 200, description = "The settings after the change", body = AccountSettings),
        (status = 404, description = "merchant.not_found"),
        (status = 422, description = "settings.invalid_sms_sender_name settings.invalid_rate_limit settings.invalid_contact_email settings.invalid_preparation_minutes"),
    )
)]
pub async fn change_settings(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(change): ApiJson<SettingsChange>,
) -> Result<Json<AccountSettings>, ApiError> {
    Ok(Json(
        state
            .merchants
            .change_settings(merchants::parse_id(&id)?, &change, &operator.name)
            .await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewInvitationBody {
    /// The person's e-mail address (at most 254 characters).
    #[schema(max_length = 254)]
    email: String,
    #[schema(value_type = courier_domain::team::Role)]
    role: String,
}

#[utoipa::path(
    post,
    path = "/merchants/{id}/invitations",
    operation_id = "inviteTeamMember",
    tag = "admin",
    summary = "Invite someone to a merchant's team (its first owner, say); the invitation's link is shown only in this response",
    params(("id" = Uuid, Path, description = "The merchant's id")),
    request_body = NewInvitationBody,
    responses(
        (status = 201, description = "The invitation, with the link the person opens to set a name and password", body = IssuedInvitation),
        (status = 404, description = "merchant.not_found"),
        (status = 409, description = "team.already_member"),
        (status = 422, description = "team.invalid_email team.invalid_role"),
    )
)]
/// `POST /admin/v1/merchants/{id}/invitations` `{email, role}`: 201 with the invitation's link,
/// which works once.
pub async fn invite(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewInvitationBody>,
) -> Result<(StatusCode, Json<IssuedInvitation>), ApiError> {
    let issued = state
        .teams
        .invite(
            merchants::parse_id(&id)?,
            &body.email,
            &body.role,
            &operator.name,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(issued)))
}
