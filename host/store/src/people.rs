//! People who sign in to the merchant console (`people`), their places in merchants' teams
//! (`merchant_members`), and the invitations that bring them there (`invitations`).

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::team::Role;

use crate::text_columns::Text;

/// A person as sign-in reads them.
#[derive(Clone, Debug)]
pub struct PersonRow {
    pub id: Uuid,
    pub email: String,
    pub name: String,
    pub password_hash: String,
    pub sign_in_blocked_until: Option<DateTime<Utc>>,
}

/// The person whose address is `email_key`.
pub async fn find_by_email(
    pool: &PgPool,
    email_key: &str,
) -> Result<Option<PersonRow>, sqlx::Error> {
    sqlx::query_as!(
        PersonRow,
        "SELECT id, email, name, password_hash, sign_in_blocked_until FROM people \
         WHERE email_key = $1",
        email_key,
    )
    .fetch_optional(pool)
    .await
}

/// The person `id`.
pub async fn find(pool: &PgPool, id: Uuid) -> Result<Option<PersonRow>, sqlx::Error> {
    sqlx::query_as!(
        PersonRow,
        "SELECT id, email, name, password_hash, sign_in_blocked_until FROM people WHERE id = $1",
        id,
    )
    .fetch_optional(pool)
    .await
}

pub struct NewPerson<'a> {
    pub id: Uuid,
    pub email: &'a str,
    pub email_key: &'a str,
    pub name: &'a str,
    pub password_hash: &'a str,
    pub now: DateTime<Utc>,
}

/// Adds a person; false when the address has an account already.
pub async fn insert(conn: &mut PgConnection, person: &NewPerson<'_>) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO people (id, email, email_key, name, password_hash, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (email_key) DO NOTHING",
        person.id,
        person.email,
        person.email_key,
        person.name,
        person.password_hash,
        person.now,
    )
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Counts a failed sign-in of `id`; at the `limit`-th since the last good one the account is
/// blocked until `blocked_until` and the count starts again.
pub async fn note_failed_sign_in(
    pool: &PgPool,
    id: Uuid,
    limit: i32,
    blocked_until: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE people SET \
           sign_in_blocked_until = CASE WHEN failed_sign_ins + 1 >= $2 THEN $3 \
                                   ELSE sign_in_blocked_until END, \
           failed_sign_ins = CASE WHEN failed_sign_ins + 1 >= $2 THEN 0 \
                             ELSE failed_sign_ins + 1 END \
         WHERE id = $1",
        id,
        limit,
        blocked_until,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A good sign-in of `id` at `now`: the failure count starts again.
pub async fn note_sign_in(pool: &PgPool, id: Uuid, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE people SET failed_sign_ins = 0, last_sign_in_at = $2 WHERE id = $1",
        id,
        now,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A team a person is in.
#[derive(Clone, Debug)]
pub struct MembershipRow {
    pub merchant_id: Uuid,
    pub merchant_name: String,
    pub role: Role,
}

/// The teams `person_id` is in, by merchant name.
pub async fn memberships(
    pool: &PgPool,
    person_id: Uuid,
) -> Result<Vec<MembershipRow>, sqlx::Error> {
    sqlx::query_as!(
        MembershipRow,
        "SELECT t.merchant_id, m.name AS merchant_name, t.role AS \"role: Text<Role>\" \
         FROM merchant_members t JOIN merchants m ON m.id = t.merchant_id \
         WHERE t.person_id = $1 ORDER BY m.name, t.merchant_id",
        person_id,
    )
    .fetch_all(pool)
    .await
}

/// A member of a team.
#[derive(Clone, Debug)]
pub struct MemberRow {
    pub person_id: Uuid,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub joined_at: DateTime<Utc>,
    pub last_sign_in_at: Option<DateTime<Utc>>,
}

/// The members of `merchant_id`'s team, owners first.
pub async fn members(pool: &PgPool, merchant_id: Uuid) -> Result<Vec<MemberRow>, sqlx::Error> {
    sqlx::query_as!(
        MemberRow,
        "SELECT p.id AS person_id, p.email, p.name, t.role AS \"role: Text<Role>\", \
         t.created_at AS joined_at, p.last_sign_in_at \
         FROM merchant_members t JOIN people p ON p.id = t.person_id \
         WHERE t.merchant_id = $1 \
         ORDER BY array_position(ARRAY['owner','admin','developer','support','viewer'], t.role), \
                  p.email_key",
        merchant_id,
    )
    .fetch_all(pool)
    .await
}

/// The role of `person_id` in `merchant_id`'s team, locking the membership for a change.
pub async fn role_for_update(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    person_id: Uuid,
) -> Result<Option<Role>, sqlx::Error> {
    let role = sqlx::query_scalar!(
        "SELECT role AS \"role: Text<Role>\" FROM merchant_members \
         WHERE merchant_id = $1 AND person_id = $2 FOR UPDATE",
        merchant_id,
        person_id,
    )
    .fetch_optional(conn)
    .await?;
    Ok(role.map(|r| r.0))
}

/// Locks the team's owners' memberships, so the last owner cannot be removed by two changes
/// at once; answers how many owners there are.
pub async fn lock_owners(conn: &mut PgConnection, merchant_id: Uuid) -> Result<usize, sqlx::Error> {
    let owners = sqlx::query_scalar!(
        "SELECT person_id FROM merchant_members WHERE merchant_id = $1 AND role = 'owner' \
         ORDER BY person_id FOR UPDATE",
        merchant_id,
    )
    .fetch_all(conn)
    .await?;
    Ok(owners.len())
}

/// Adds `person_id` to the team as `role`; false when they are in it already.
pub async fn add_member(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    person_id: Uuid,
    role: Role,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let added = sqlx::query!(
        "INSERT INTO merchant_members (merchant_id, person_id, role, created_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        merchant_id,
        person_id,
        role.as_str(),
        now,
    )
    .execute(conn)
    .await?;
    Ok(added.rows_affected() == 1)
}

pub async fn set_role(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    person_id: Uuid,
    role: Role,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE merchant_members SET role = $3 WHERE merchant_id = $1 AND person_id = $2",
        merchant_id,
        person_id,
        role.as_str(),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes `person_id` out of the team; their sessions in it end with the membership (a session
/// is live only while its person is a member).
pub async fn remove_member(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    person_id: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "DELETE FROM merchant_members WHERE merchant_id = $1 AND person_id = $2",
        merchant_id,
        person_id,
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "DELETE FROM console_sessions WHERE merchant_id = $1 AND person_id = $2",
        merchant_id,
        person_id,
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub struct NewInvitation<'a> {
    pub id: Uuid,
    pub token_hash: &'a [u8],
    pub merchant_id: Uuid,
    pub email: &'a str,
    pub email_key: &'a str,
    pub role: Role,
    pub invited_by: &'a str,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert_invitation(
    conn: &mut PgConnection,
    invitation: &NewInvitation<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO invitations (id, token_hash, merchant_id, email, email_key, role, \
         invited_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        invitation.id,
        invitation.token_hash,
        invitation.merchant_id,
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

/// An invitation as its link finds it.
#[derive(Clone, Debug)]
pub struct InvitationRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub merchant_name: String,
    pub email: String,
    pub email_key: String,
    pub role: Role,
    pub invited_by: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub withdrawn_at: Option<DateTime<Utc>>,
}

/// The invitation whose token hashes to `token_hash`, whatever its state.
pub async fn invitation_by_token(
    pool: &PgPool,
    token_hash: &[u8],
) -> Result<Option<InvitationRow>, sqlx::Error> {
    sqlx::query_as!(
        InvitationRow,
        "SELECT i.id, i.merchant_id, m.name AS merchant_name, i.email, i.email_key, \
         i.role AS \"role: Text<Role>\", i.invited_by, i.created_at, i.expires_at, \
         i.accepted_at, i.withdrawn_at \
         FROM invitations i JOIN merchants m ON m.id = i.merchant_id WHERE i.token_hash = $1",
        token_hash,
    )
    .fetch_optional(pool)
    .await
}

/// Marks the invitation `id` used by `person_id` at `now`, if it still can be (not used, not
/// withdrawn, not expired); false when it cannot, so two acceptances never both succeed.
pub async fn mark_accepted(
    conn: &mut PgConnection,
    id: Uuid,
    person_id: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let marked = sqlx::query!(
        "UPDATE invitations SET accepted_at = $3, accepted_by = $2 \
         WHERE id = $1 AND accepted_at IS NULL AND withdrawn_at IS NULL AND expires_at > $3",
        id,
        person_id,
        now,
    )
    .execute(conn)
    .await?;
    Ok(marked.rows_affected() == 1)
}

/// The invitations of `merchant_id` still waiting to be used, newest first.
pub async fn open_invitations(
    pool: &PgPool,
    merchant_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<InvitationRow>, sqlx::Error> {
    sqlx::query_as!(
        InvitationRow,
        "SELECT i.id, i.merchant_id, m.name AS merchant_name, i.email, i.email_key, \
         i.role AS \"role: Text<Role>\", i.invited_by, i.created_at, i.expires_at, \
         i.accepted_at, i.withdrawn_at \
         FROM invitations i JOIN merchants m ON m.id = i.merchant_id \
         WHERE i.merchant_id = $1 AND i.accepted_at IS NULL AND i.withdrawn_at IS NULL \
           AND i.expires_at > $2 \
         ORDER BY i.created_at DESC LIMIT 100",
        merchant_id,
        now,
    )
    .fetch_all(pool)
    .await
}

/// Withdraws an open invitation of `merchant_id`; answers its role, or None when there was
/// none open by that id.
pub async fn withdraw_invitation(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Option<Role>, sqlx::Error> {
    let role = sqlx::query_scalar!(
        "UPDATE invitations SET withdrawn_at = $3 \
         WHERE id = $2 AND merchant_id = $1 AND accepted_at IS NULL AND withdrawn_at IS NULL \
         RETURNING role AS \"role: Text<Role>\"",
        merchant_id,
        id,
        now,
    )
    .fetch_optional(conn)
    .await?;
    Ok(role.map(|r| r.0))
}

/// Keeps a password reset's token for `person_id`.
pub async fn insert_password_reset(
    conn: &mut PgConnection,
    token_hash: &[u8],
    person_id: Uuid,
    now: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO password_resets (token_hash, person_id, created_at, expires_at) \
         VALUES ($1, $2, $3, $4)",
        token_hash,
        person_id,
        now,
        expires_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A password reset as its link finds it.
#[derive(Clone, Debug)]
pub struct PasswordResetRow {
    pub person_id: Uuid,
    pub email: String,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
}

/// The password reset of `token_hash`, whatever its state, locked for its use.
pub async fn password_reset(
    conn: &mut PgConnection,
    token_hash: &[u8],
) -> Result<Option<PasswordResetRow>, sqlx::Error> {
    sqlx::query_as!(
        PasswordResetRow,
        "SELECT r.person_id, p.email, r.expires_at, r.used_at \
         FROM password_resets r JOIN people p ON p.id = r.person_id \
         WHERE r.token_hash = $1 FOR UPDATE OF r",
        token_hash,
    )
    .fetch_optional(conn)
    .await
}

/// Sets `person_id`'s password from the reset of `token_hash`: the reset is used, the account
/// open again, and every session of the person ends.
pub async fn reset_password(
    conn: &mut PgConnection,
    token_hash: &[u8],
    person_id: Uuid,
    password_hash: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE password_resets SET used_at = $2 WHERE token_hash = $1",
        token_hash,
        now,
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE people SET password_hash = $2, failed_sign_ins = 0, \
         sign_in_blocked_until = NULL WHERE id = $1",
        person_id,
        password_hash,
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "DELETE FROM console_sessions WHERE person_id = $1",
        person_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A person's TOTP as a check or an enrolment reads it, locked for the change.
#[derive(Clone, Debug)]
pub struct TotpRow {
    pub email: String,
    /// Sealed.
    pub secret: Option<Vec<u8>>,
    /// Sealed; set while an enrolment waits for its first code.
    pub pending_secret: Option<Vec<u8>>,
    pub last_step: Option<i64>,
}

pub async fn totp_for_update(
    conn: &mut PgConnection,
    person_id: Uuid,
) -> Result<Option<TotpRow>, sqlx::Error> {
    sqlx::query_as!(
        TotpRow,
        "SELECT email, totp_secret AS secret, totp_pending_secret AS pending_secret, \
         totp_last_step AS last_step FROM people WHERE id = $1 FOR UPDATE",
        person_id,
    )
    .fetch_optional(conn)
    .await
}

/// Keeps a sealed secret waiting for its first code.
pub async fn set_pending_totp(
    pool: &PgPool,
    person_id: Uuid,
    sealed: &[u8],
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE people SET totp_pending_secret = $2 WHERE id = $1",
        person_id,
        sealed,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Turns TOTP on with the waiting secret, its first code's `step` used, and the recovery codes
/// of `hashes` (any older ones dropped).
pub async fn enable_totp(
    conn: &mut PgConnection,
    person_id: Uuid,
    step: i64,
    hashes: &[Vec<u8>],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE people SET totp_secret = totp_pending_secret, totp_pending_secret = NULL, \
         totp_enabled_at = $3, totp_last_step = $2 WHERE id = $1",
        person_id,
        step,
        now,
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!("DELETE FROM recovery_codes WHERE person_id = $1", person_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query!(
        "INSERT INTO recovery_codes (person_id, code_hash) SELECT $1, unnest($2::bytea[])",
        person_id,
        hashes,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A TOTP code of `step` was accepted: no code of it or before is again.
pub async fn note_totp_step(
    conn: &mut PgConnection,
    person_id: Uuid,
    step: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE people SET totp_last_step = $2 WHERE id = $1",
        person_id,
        step,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Uses one of `person_id`'s recovery codes; false when it is not one, or was used.
pub async fn use_recovery_code(
    conn: &mut PgConnection,
    person_id: Uuid,
    code_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let used = sqlx::query!(
        "UPDATE recovery_codes SET used_at = $3 \
         WHERE person_id = $1 AND code_hash = $2 AND used_at IS NULL",
        person_id,
        code_hash,
        now,
    )
    .execute(conn)
    .await?;
    Ok(used.rows_affected() == 1)
}

/// Turns `person_id`'s TOTP off, its recovery codes with it.
pub async fn disable_totp(pool: &PgPool, person_id: Uuid) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query!(
        "UPDATE people SET totp_secret = NULL, totp_pending_secret = NULL, \
         totp_enabled_at = NULL, totp_last_step = NULL WHERE id = $1",
        person_id,
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("DELETE FROM recovery_codes WHERE person_id = $1", person_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// A person's second factor, as their account page shows it.
#[derive(Clone, Debug)]
pub struct SecondFactorRow {
    pub enabled_at: Option<DateTime<Utc>>,
    pub recovery_codes_left: i64,
    /// Names of the teams of theirs that require a second factor.
    pub required_by: Vec<String>,
}

pub async fn second_factor(pool: &PgPool, person_id: Uuid) -> Result<SecondFactorRow, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT p.totp_enabled_at, \
         (SELECT count(*) FROM recovery_codes r WHERE r.person_id = p.id AND r.used_at IS NULL) \
           AS \"left!\", \
         ARRAY(SELECT m.name FROM merchant_members t JOIN merchants m ON m.id = t.merchant_id \
               WHERE t.person_id = p.id AND m.require_second_factor ORDER BY m.name) \
           AS \"required_by!\" \
         FROM people p WHERE p.id = $1",
        person_id,
    )
    .fetch_one(pool)
    .await?;
    Ok(SecondFactorRow {
        enabled_at: row.totp_enabled_at,
        recovery_codes_left: row.left,
        required_by: row.required_by,
    })
}

/// Whether `merchant_id` requires a second factor of its team.
pub async fn set_required_second_factor(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    required: bool,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE merchants SET require_second_factor = $2 WHERE id = $1",
        merchant_id,
        required,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether `person_id` has a second factor.
pub async fn has_second_factor(pool: &PgPool, person_id: Uuid) -> Result<bool, sqlx::Error> {
    let found = sqlx::query_scalar!(
        "SELECT totp_enabled_at IS NOT NULL AS \"on!\" FROM people WHERE id = $1",
        person_id,
    )
    .fetch_optional(pool)
    .await?;
    Ok(found.unwrap_or(false))
}

/// Whether `merchant_id` requires a second factor of its team.
pub async fn requires_second_factor(pool: &PgPool, merchant_id: Uuid) -> Result<bool, sqlx::Error> {
    let found = sqlx::query_scalar!(
        "SELECT require_second_factor FROM merchants WHERE id = $1",
        merchant_id,
    )
    .fetch_optional(pool)
    .await?;
    Ok(found.unwrap_or(false))
}

/// Whether a password reset was made for `person_id` since `since`.
pub async fn password_reset_made_since(
    pool: &PgPool,
    person_id: Uuid,
    since: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let found = sqlx::query_scalar!(
        "SELECT EXISTS (SELECT 1 FROM password_resets WHERE person_id = $1 AND created_at > $2) \
         AS \"found!\"",
        person_id,
        since,
    )
    .fetch_one(pool)
    .await?;
    Ok(found)
}
