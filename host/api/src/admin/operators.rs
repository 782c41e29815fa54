//! `/admin/v1/operators/invitations`: inviting the service's own staff to the operator
//! console, for automation (people use `courier operator invite`, which answers the same).

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::state::AppState;
use courier_core::auth::operators::Operator;
use courier_core::operator_accounts::IssuedOperatorInvitation;

/// `POST /admin/v1/operators/invitations`'s body.
#[derive(serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOperatorInvitationBody {
    /// The person's e-mail address (at most 254 characters).
    #[schema(max_length = 254)]
    email: String,
    /// `admin`, `operations`, `finance` or `viewer`.
    role: String,
}

#[utoipa::path(
    post,
    path = "/operators/invitations",
    operation_id = "inviteOperator",
    tag = "admin",
    summary = "Invite someone to be an operator; the invitation's link is shown only in this response",
    request_body = NewOperatorInvitationBody,
    responses(
        (status = 201, description = "The invitation, with the link the person opens to set a name and password", body = IssuedOperatorInvitation),
        (status = 409, description = "operator.already_operator"),
        (status = 422, description = "team.invalid_email operator.invalid_role request.invalid_body"),
    )
)]
/// `POST /admin/v1/operators/invitations` `{email, role}`: 201 with the invitation's link,
/// which works once.
pub async fn invite(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    ApiJson(body): ApiJson<NewOperatorInvitationBody>,
) -> Result<(StatusCode, Json<IssuedOperatorInvitation>), ApiError> {
    let issued = state
        .operator_accounts
        .invite(&body.email, &body.role, &operator.name)
        .await?;
    Ok((StatusCode::CREATED, Json(issued)))
}
