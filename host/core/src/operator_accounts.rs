//! Operators' accounts: the service's own staff are people (`people`, shared with any merchant
//! team they are in) with an operator role (`operator_members`). An operator invites others
//! (`courier operator invite`, or the operator API); the link lets the person set a name and a
//! password (or prove the password of the account the address has) and join; they sign in to
//! the operator console with the address and password, then their second factor, which every
//! operator must have (one without sets it up before anything else).

use chrono::{DateTime, Utc};
use rand::distr::{Alphanumeric, SampleString};
use serde::Serialize;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::audit::{self, AuditAction, AuditRecord};
use crate::mail::{MailKind, Outbox};
use crate::team::{AcceptRefusal, SignInRefusal, Teams, hash_token};
use courier_domain::error::{Code, ErrorCode};
use courier_domain::operators::OperatorRole;
use courier_domain::team::{Person, email_key};
use courier_store::operators as store;

pub use store::OperatorInvitationRow;

pub const INVALID_OPERATOR_ROLE: Code = Code::new(
    422,
    "operator.invalid_role",
    "An operator invitation's `role` is not one of `admin`, `operations`, `finance`, `viewer`.",
);
pub const ALREADY_OPERATOR: Code = Code::new(
    409,
    "operator.already_operator",
    "The invited address belongs to an operator already.",
);

/// Why an operator invitation could not be made.
#[derive(Debug, thiserror::Error, ErrorCode)]
pub enum OperatorInviteError {
    #[error("email is an e-mail address such as ana@example.com, of at most 254 characters")]
    #[code(crate::team::INVALID_EMAIL)]
    InvalidEmail,
    #[error("{0:?} is not an operator role; use admin, operations, finance or viewer")]
    #[code(INVALID_OPERATOR_ROLE)]
    InvalidRole(String),
    #[error("that address belongs to an operator already")]
    #[code(ALREADY_OPERATOR)]
    AlreadyOperator,
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// What inviting an operator answers (`courier operator invite` prints it): the link is shown
/// only here, and mailed when mail is configured.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IssuedOperatorInvitation {
    pub invitation_id: Uuid,
    pub email: String,
    #[schema(value_type = String)]
    pub role: OperatorRole,
    pub expires_at: DateTime<Utc>,
    /// Opened in a browser, it lets the person set a name and password and become an operator.
    pub invitation_url: String,
    /// Whether it was mailed to the person (a relay is configured); else pass it on.
    pub mailed: bool,
}

/// How long after an invitation's use a second use is taken for the same form sent again.
pub const JUST_USED: std::time::Duration = std::time::Duration::from_secs(120);

/// What an operator invitation's link finds.
#[derive(Debug)]
pub enum OperatorInvitationState {
    Unknown,
    /// Used; `just_now`: within the last [`JUST_USED`] (a form sent twice, a reload).
    Used {
        just_now: bool,
    },
    Expired,
    Open {
        invitation: store::OperatorInvitationRow,
        /// The address has an account: its password is asked for instead of a new one.
        has_account: bool,
    },
}

/// Why an operator's sign-in was refused.
#[derive(Debug, thiserror::Error)]
pub enum OperatorSignInRefusal {
    #[error(transparent)]
    Account(#[from] SignInRefusal),
    /// The address and password are an account's, but not an operator's.
    #[error("the account is not an operator's")]
    NotOperator,
}

impl From<sqlx::Error> for OperatorSignInRefusal {
    fn from(error: sqlx::Error) -> Self {
        Self::Account(SignInRefusal::Store(error))
    }
}

/// Operators' accounts. Cheap to clone.
#[derive(Clone)]
pub struct OperatorAccounts {
    pool: PgPool,
    teams: Teams,
    outbox: Outbox,
    /// Where the operator console is reached (`COURIER_OPS_PUBLIC_URL`), for links.
    console_url: String,
}

impl OperatorAccounts {
    /// Accounts checked (passwords, budgets) by `teams`; links name `console_url`; mail through
    /// `outbox`.
    pub fn new(pool: PgPool, teams: Teams, outbox: Outbox, console_url: String) -> Self {
        Self {
            pool,
            teams,
            outbox,
            console_url,
        }
    }

    /// Invites `email` to be an operator with `role`; `invited_by` is who the audit trail
    /// names (an operator token's name, or the inviting operator's address).
    pub async fn invite(
        &self,
        email: &str,
        role: &str,
        invited_by: &str,
    ) -> Result<IssuedOperatorInvitation, OperatorInviteError> {
        let email = email.trim();
        let email_key = email_key(email).ok_or(OperatorInviteError::InvalidEmail)?;
        let role = OperatorRole::parse(role.trim())
            .ok_or_else(|| OperatorInviteError::InvalidRole(role.to_owned()))?;
        if store::is_operator(&self.pool, &email_key).await? {
            return Err(OperatorInviteError::AlreadyOperator);
        }
        let token = Alphanumeric.sample_string(&mut rand::rng(), 43);
        let now = crate::infra::clock::now();
        let expires_at = now
            + chrono::Duration::from_std(self.teams.config().invitation_ttl)
                .unwrap_or(chrono::Duration::MAX);
        let id = Uuid::new_v4();
        let mut tx = self.pool.begin().await?;
        store::insert_invitation(
            &mut tx,
            &store::NewOperatorInvitation {
                id,
                token_hash: &hash_token(&token),
                email,
                email_key: &email_key,
                role,
                invited_by,
                now,
                expires_at,
            },
        )
        .await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator: invited_by,
                action: AuditAction::OperatorInvited,
                target_type: "invitation",
                target_id: id.to_string(),
                merchant_id: None,
                before: None,
                after: Some(json!({"email": email, "role": role.as_str()})),
                occurred_at: now,
            },
        )
        .await?;
        let invitation_url = format!(
            "{}/ops/invitations/{token}",
            self.console_url.trim_end_matches('/')
        );
        let subject = "You are invited to be an operator of Courier";
        let body = format!(
            "{invited_by} invites you to be an operator of Courier as {} ({}).\n\n\
             Open this link to set your name and password; a second factor is set up at your \
             first sign-in:\n\n{invitation_url}\n\n\
             It works once, until {}. If you did not expect it, ignore this mail.\n",
            role.label(),
            role.summary(),
            expires_at.format("%Y-%m-%d %H:%M UTC"),
        );
        let mailed = self
            .outbox
            .write(&mut tx, email, MailKind::Invitation, (subject, &body))
            .await?;
        tx.commit().await?;
        Ok(IssuedOperatorInvitation {
            invitation_id: id,
            email: email.to_owned(),
            role,
            expires_at,
            invitation_url,
            mailed,
        })
    }

    /// What the invitation link holding `token` finds.
    pub async fn invitation(&self, token: &str) -> Result<OperatorInvitationState, sqlx::Error> {
        let Some(invitation) = store::invitation_by_token(&self.pool, &hash_token(token)).await?
        else {
            return Ok(OperatorInvitationState::Unknown);
        };
        let now = crate::infra::clock::now();
        Ok(if let Some(accepted_at) = invitation.accepted_at {
            OperatorInvitationState::Used {
                just_now: now - accepted_at
                    < chrono::Duration::from_std(JUST_USED).unwrap_or_default(),
            }
        } else if invitation.expires_at <= now {
            OperatorInvitationState::Expired
        } else {
            let has_account =
                courier_store::people::find_by_email(&self.pool, &invitation.email_key)
                    .await?
                    .is_some();
            OperatorInvitationState::Open {
                invitation,
                has_account,
            }
        })
    }

    /// Uses the invitation of `token` as [`Teams::accept`] uses a team's: the person becomes
    /// an operator with the invitation's role. Used once.
    pub async fn accept(
        &self,
        token: &str,
        name: &str,
        password: &str,
    ) -> Result<Person, AcceptRefusal> {
        let invitation = match self.invitation(token).await? {
            OperatorInvitationState::Open { invitation, .. } => invitation,
            OperatorInvitationState::Used { .. } => return Err(AcceptRefusal::Used),
            OperatorInvitationState::Expired => return Err(AcceptRefusal::Expired),
            OperatorInvitationState::Unknown => return Err(AcceptRefusal::Unknown),
        };
        let joining = self
            .teams
            .joining_account(&invitation.email, &invitation.email_key, name, password)
            .await?;
        let now = crate::infra::clock::now();
        let mut tx = self.pool.begin().await?;
        let person = joining.write(&mut tx, now).await?;
        if !store::mark_accepted(&mut tx, invitation.id, person.id, now).await? {
            return Err(AcceptRefusal::Used);
        }
        store::add_operator(&mut tx, person.id, invitation.role, now).await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator: &person.email,
                action: AuditAction::OperatorJoined,
                target_type: "person",
                target_id: person.id.to_string(),
                merchant_id: None,
                before: None,
                after: Some(json!({
                    "email": person.email,
                    "role": invitation.role.as_str(),
                    "invitation_id": invitation.id,
                })),
                occurred_at: now,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(person)
    }

    /// Checks an operator's sign-in: their account's (the same budgets as the merchant
    /// console's), and that it is an operator's. Answers the person, their role, and whether
    /// they have a second factor to give.
    pub async fn sign_in(
        &self,
        email: &str,
        password: &str,
    ) -> Result<(Person, OperatorRole, bool), OperatorSignInRefusal> {
        let person = self.teams.sign_in(email, password).await?;
        let role = store::role_of(&self.pool, person.id)
            .await?
            .ok_or(OperatorSignInRefusal::NotOperator)?;
        let has_factor = self.teams.has_second_factor(person.id).await?;
        Ok((person, role, has_factor))
    }
}
