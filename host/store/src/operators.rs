//! Operators (`operator_members`): people with a role in the operator console, and the
//! invitations that make them operators (`operator_invitations`).

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::operators::OperatorRole;

use crate::text_columns::Text;

pub struct NewOperatorInvitation<'a> {
    pub id: Uuid,
    pub token_hash: &'a [u8],
    pub email: &'a str,
    pub email_key: &'a str,
    pub role: OperatorRole,
    pub invited_by: &'a str,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert_invitation(
    conn: &mut PgConnection,
    invitation: &NewOperatorInvitation<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO operator_invitations (id, token_hash, email, email_key, role, invited_by, \
         created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        invitation.id,
        invitation.token_hash,
        invitation.email,
        invitation.email_key,
        invitation.role.as_str(),
        invitation.invited_by,
        invitation.now,
        invitation.expires_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// An operator invitation, whatever its state.
#[derive(Clone, Debug)]
pub struct OperatorInvitationRow {
    pub id: Uuid,
    pub email: String,
    pub email_key: String,
    pub role: OperatorRole,
    pub invited_by: String,
    pub expires_at: DateTime<Utc>,
    pub accepted_at: Option<DateTime<Utc>>,
}

/// The operator invitation whose token hashes to `token_hash`.
pub async fn invitation_by_token(
    pool: &PgPool,
    token_hash: &[u8],
) -> Result<Option<OperatorInvitationRow>, sqlx::Error> {
    sqlx::query_as!(
        OperatorInvitationRow,
        "SELECT id, email, email_key, role AS \"role: Text<OperatorRole>\", invited_by, \
           expires_at, accepted_at \
         FROM operator_invitations WHERE token_hash = $1",
        token_hash,
    )
    .fetch_optional(pool)
    .await
}

/// Marks the invitation used by `person_id`; false when it was used meanwhile.
pub async fn mark_accepted(
    conn: &mut PgConnection,
    id: Uuid,
    person_id: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "UPDATE operator_invitations SET accepted_at = $3, accepted_by = $2 \
         WHERE id = $1 AND accepted_at IS NULL",
        id,
        person_id,
        now,
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Makes `person_id` an operator with `role` (an operator already keeps the role they have);
/// true when they were not one.
pub async fn add_operator(
    conn: &mut PgConnection,
    person_id: Uuid,
    role: OperatorRole,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "INSERT INTO operator_members (person_id, role, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (person_id) DO NOTHING",
        person_id,
        role.as_str(),
        now,
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The operator role of `person_id`, if they are an operator.
pub async fn role_of(pool: &PgPool, person_id: Uuid) -> Result<Option<OperatorRole>, sqlx::Error> {
    let role = sqlx::query_scalar!(
        "SELECT role AS \"role: Text<OperatorRole>\" FROM operator_members WHERE person_id = $1",
        person_id,
    )
    .fetch_optional(pool)
    .await?;
    Ok(role.map(Into::into))
}

/// Whether the address of `email_key` is an operator's.
pub async fn is_operator(pool: &PgPool, email_key: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT EXISTS (SELECT 1 FROM operator_members o JOIN people p ON p.id = o.person_id \
         WHERE p.email_key = $1) AS \"exists!\"",
        email_key,
    )
    .fetch_one(pool)
    .await
}
