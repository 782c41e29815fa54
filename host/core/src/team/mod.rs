//! Merchants' teams: the people who sign in to the console, each with a role in one or more
//! merchants' teams; invitations that bring them in; sign-in with an e-mail address and a
//! password (Argon2id), with a failure budget per account beside the one per address.

mod config;
mod error;
mod passwords;

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::distr::{Alphanumeric, SampleString};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use crate::audit::{self, AuditAction, AuditRecord};
use courier_domain::team::{self as rules, Permission, Role};
pub use courier_domain::team::{Acting, Person};
use courier_store::people as store;

pub use config::TeamConfig;
pub use error::{AcceptRefusal, ChangeRefusal, SignInRefusal, TeamError};
pub use store::{InvitationRow, MemberRow, MembershipRow};

/// What inviting someone answers (`courier merchant invite` prints it): the link is shown
/// only here, and mailed when mail is configured.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IssuedInvitation {
    pub invitation_id: Uuid,
    pub merchant_id: Uuid,
    pub email: String,
    pub role: Role,
    pub expires_at: DateTime<Utc>,
    /// Opened in a browser, it lets the person set a name and password and join the team.
    pub invitation_url: String,
}

/// What an invitation's link finds.
#[derive(Debug)]
pub enum InvitationState {
    /// It can be used; `has_account` when its address has signed up already (then joining asks
    /// for that account's password instead of a new one).
    Open {
        invitation: InvitationRow,
        has_account: bool,
    },
    Used,
    Expired,
    Withdrawn,
    Unknown,
}

/// Merchants' teams. Cheap to clone.
#[derive(Clone)]
pub struct Teams {
    pool: PgPool,
    config: TeamConfig,
    public_url: String,
}

fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn to_chrono(duration: Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX)
}

impl Teams {
    pub fn new(pool: PgPool, config: TeamConfig, public_url: String) -> Self {
        Self {
            pool,
            config,
            public_url: public_url.trim_end_matches('/').to_owned(),
        }
    }

    pub fn config(&self) -> &TeamConfig {
        &self.config
    }

    /// Invites `email` to `merchant_id`'s team as `role`; `invited_by` is who the audit trail
    /// names (the operator's name, or the inviting person's address).
    pub async fn invite(
        &self,
        merchant_id: Uuid,
        email: &str,
        role: &str,
        invited_by: &str,
    ) -> Result<IssuedInvitation, TeamError> {
        let email = email.trim();
        let email_key = rules::email_key(email).ok_or(TeamError::InvalidEmail)?;
        let role =
            Role::parse(role.trim()).ok_or_else(|| TeamError::InvalidRole(role.to_owned()))?;
        let token = Alphanumeric.sample_string(&mut rand::rng(), 43);
        let now = crate::infra::clock::now();
        let expires_at = now + to_chrono(self.config.invitation_ttl);
        let id = Uuid::new_v4();
        let mut tx = self.pool.begin().await?;
        if !courier_store::merchants::lock_merchant(&mut tx, merchant_id).await? {
            return Err(TeamError::MerchantNotFound);
        }
        if let Some(person) = store::find_by_email(&self.pool, &email_key).await?
            && store::role_for_update(&mut tx, merchant_id, person.id)
                .await?
                .is_some()
        {
            return Err(TeamError::AlreadyMember);
        }
        store::insert_invitation(
            &mut tx,
            &store::NewInvitation {
                id,
                token_hash: &hash_token(&token),
                merchant_id,
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
                action: AuditAction::MemberInvited,
                target_type: "invitation",
                target_id: id.to_string(),
                merchant_id: Some(merchant_id),
                before: None,
                after: Some(json!({"email": email, "role": role.as_str()})),
                occurred_at: now,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(IssuedInvitation {
            invitation_id: id,
            merchant_id,
            email: email.to_owned(),
            role,
            expires_at,
            invitation_url: format!("{}/console/invitations/{token}", self.public_url),
        })
    }

    /// What the invitation link holding `token` finds.
    pub async fn invitation(&self, token: &str) -> Result<InvitationState, sqlx::Error> {
        let Some(invitation) = store::invitation_by_token(&self.pool, &hash_token(token)).await?
        else {
            return Ok(InvitationState::Unknown);
        };
        let now = crate::infra::clock::now();
        Ok(if invitation.accepted_at.is_some() {
            InvitationState::Used
        } else if invitation.withdrawn_at.is_some() {
            InvitationState::Withdrawn
        } else if invitation.expires_at <= now {
            InvitationState::Expired
        } else {
            let has_account = store::find_by_email(&self.pool, &invitation.email_key)
                .await?
                .is_some();
            InvitationState::Open {
                invitation,
                has_account,
            }
        })
    }

    /// Uses the invitation of `token`: a new person with `name` and `password` joins the team;
    /// or, when its address has an account, that account's `password` proves it is theirs
    /// (`name` unused). Used once: a second use, even at the same moment, is refused.
    pub async fn accept(
        &self,
        token: &str,
        name: &str,
        password: &str,
    ) -> Result<Person, AcceptRefusal> {
        let (invitation, has_account) = match self.invitation(token).await? {
            InvitationState::Open {
                invitation,
                has_account,
            } => (invitation, has_account),
            InvitationState::Used => return Err(AcceptRefusal::Used),
            InvitationState::Expired => return Err(AcceptRefusal::Expired),
            InvitationState::Withdrawn => return Err(AcceptRefusal::Withdrawn),
            InvitationState::Unknown => return Err(AcceptRefusal::Unknown),
        };
        let existing = if has_account {
            store::find_by_email(&self.pool, &invitation.email_key).await?
        } else {
            None
        };
        let now = crate::infra::clock::now();
        let mut tx = self.pool.begin().await?;
        let person = match existing {
            Some(person) => {
                if !passwords::verify(Some(&person.password_hash), password).await {
                    return Err(AcceptRefusal::WrongPassword);
                }
                Person {
                    id: person.id,
                    email: person.email,
                    name: person.name,
                }
            }
            None => {
                let name = rules::person_name(name).ok_or(AcceptRefusal::InvalidName)?;
                rules::check_password(password, &invitation.email)
                    .map_err(AcceptRefusal::WeakPassword)?;
                let id = Uuid::new_v4();
                let created = store::insert(
                    &mut tx,
                    &store::NewPerson {
                        id,
                        email: &invitation.email,
                        email_key: &invitation.email_key,
                        name,
                        password_hash: &passwords::hash(password).await,
                        now,
                    },
                )
                .await?;
                if !created {
                    // Signed up through another invitation a moment ago: that account's
                    // password is asked for instead.
                    return Err(AcceptRefusal::AccountExists);
                }
                Person {
                    id,
                    email: invitation.email.clone(),
                    name: name.to_owned(),
                }
            }
        };
        if !store::mark_accepted(&mut tx, invitation.id, person.id, now).await? {
            return Err(AcceptRefusal::Used);
        }
        store::add_member(
            &mut tx,
            invitation.merchant_id,
            person.id,
            invitation.role,
            now,
        )
        .await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator: &person.email,
                action: AuditAction::MemberJoined,
                target_type: "person",
                target_id: person.id.to_string(),
                merchant_id: Some(invitation.merchant_id),
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
        // Joining signs the person in.
        store::note_sign_in(&self.pool, person.id, now).await?;
        Ok(person)
    }

    /// Checks a sign-in: the person of `email`, when `password` is theirs and their account
    /// is not blocked. A wrong password spends the account's budget.
    pub async fn sign_in(&self, email: &str, password: &str) -> Result<Person, SignInRefusal> {
        let stored = match rules::email_key(email) {
            Some(key) => store::find_by_email(&self.pool, &key).await?,
            None => None,
        };
        let matches =
            passwords::verify(stored.as_ref().map(|p| p.password_hash.as_str()), password).await;
        let Some(person) = stored else {
            return Err(SignInRefusal::Wrong);
        };
        let now = crate::infra::clock::now();
        if let Some(until) = person.sign_in_blocked_until
            && until > now
        {
            return Err(SignInRefusal::Blocked { until });
        }
        if !matches {
            store::note_failed_sign_in(
                &self.pool,
                person.id,
                self.config.sign_in_failure_limit,
                now + to_chrono(self.config.sign_in_block),
            )
            .await?;
            return Err(SignInRefusal::Wrong);
        }
        store::note_sign_in(&self.pool, person.id, now).await?;
        Ok(Person {
            id: person.id,
            email: person.email,
            name: person.name,
        })
    }

    /// Whether `password` is `person_id`'s (re-authentication before a sensitive change).
    pub async fn check_password(
        &self,
        person_id: Uuid,
        password: &str,
    ) -> Result<bool, sqlx::Error> {
        let stored = store::find(&self.pool, person_id).await?;
        Ok(passwords::verify(stored.as_ref().map(|p| p.password_hash.as_str()), password).await)
    }

    /// The teams `person_id` is in.
    pub async fn memberships(&self, person_id: Uuid) -> Result<Vec<MembershipRow>, sqlx::Error> {
        store::memberships(&self.pool, person_id).await
    }

    /// `merchant_id`'s team, owners first.
    pub async fn members(&self, merchant_id: Uuid) -> Result<Vec<MemberRow>, sqlx::Error> {
        store::members(&self.pool, merchant_id).await
    }

    /// The invitations of `merchant_id` that can still be used.
    pub async fn open_invitations(
        &self,
        merchant_id: Uuid,
    ) -> Result<Vec<InvitationRow>, sqlx::Error> {
        store::open_invitations(&self.pool, merchant_id, crate::infra::clock::now()).await
    }

    /// Gives `person_id` the role `role` in the acting member's team.
    pub async fn change_role(
        &self,
        acting: &Acting<'_>,
        person_id: Uuid,
        role: Role,
    ) -> Result<(), ChangeRefusal> {
        self.change(acting, person_id, Some(role)).await
    }

    /// Takes `person_id` out of the acting member's team; their sessions there end.
    pub async fn remove(&self, acting: &Acting<'_>, person_id: Uuid) -> Result<(), ChangeRefusal> {
        self.change(acting, person_id, None).await
    }

    async fn change(
        &self,
        acting: &Acting<'_>,
        person_id: Uuid,
        role: Option<Role>,
    ) -> Result<(), ChangeRefusal> {
        if !acting.role.may(Permission::ManageTeam) {
            return Err(ChangeRefusal::NotAllowed);
        }
        if person_id == acting.person.id {
            return Err(ChangeRefusal::Yourself);
        }
        if role.is_some_and(|r| !acting.role.may_grant(r)) {
            return Err(ChangeRefusal::NotAllowed);
        }
        let merchant_id = acting.merchant_id;
        let mut tx = self.pool.begin().await?;
        let owners = store::lock_owners(&mut tx, merchant_id).await?;
        let Some(before) = store::role_for_update(&mut tx, merchant_id, person_id).await? else {
            return Err(ChangeRefusal::NotAMember);
        };
        if !acting.role.may_grant(before) {
            return Err(ChangeRefusal::NotAllowed);
        }
        if before == Role::Owner && role != Some(Role::Owner) && owners <= 1 {
            return Err(ChangeRefusal::LastOwner);
        }
        let action = match role {
            Some(role) => {
                store::set_role(&mut tx, merchant_id, person_id, role).await?;
                AuditAction::MemberRoleChanged
            }
            None => {
                store::remove_member(&mut tx, merchant_id, person_id).await?;
                AuditAction::MemberRemoved
            }
        };
        audit::record(
            &mut tx,
            &AuditRecord {
                operator: &acting.person.email,
                action,
                target_type: "person",
                target_id: person_id.to_string(),
                merchant_id: Some(merchant_id),
                before: Some(json!({"role": before.as_str()})),
                after: role.map(|r| json!({"role": r.as_str()})),
                occurred_at: crate::infra::clock::now(),
            },
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Withdraws an open invitation of the acting member's team.
    pub async fn withdraw(
        &self,
        acting: &Acting<'_>,
        invitation_id: Uuid,
    ) -> Result<(), ChangeRefusal> {
        if !acting.role.may(Permission::ManageTeam) {
            return Err(ChangeRefusal::NotAllowed);
        }
        let now = crate::infra::clock::now();
        let mut tx = self.pool.begin().await?;
        let Some(role) =
            store::withdraw_invitation(&mut tx, acting.merchant_id, invitation_id, now).await?
        else {
            return Err(ChangeRefusal::NotAMember);
        };
        if !acting.role.may_grant(role) {
            return Err(ChangeRefusal::NotAllowed);
        }
        audit::record(
            &mut tx,
            &AuditRecord {
                operator: &acting.person.email,
                action: AuditAction::InvitationWithdrawn,
                target_type: "invitation",
                target_id: invitation_id.to_string(),
                merchant_id: Some(acting.merchant_id),
                before: None,
                after: None,
                occurred_at: now,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
