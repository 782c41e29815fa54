//! Merchants' teams: the people who sign in to the console, each with a role in one or more
//! merchants' teams; invitations that bring them in; sign-in with an e-mail address and a
//! password (Argon2id), with a failure budget per account beside the one per address.

mod config;
mod error;
mod passkeys;
mod passwords;
pub mod second_factor;

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::distr::{Alphanumeric, SampleString};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use crate::audit::{self, AuditAction, AuditRecord};
use crate::infra::secrets::{Sealer, SecretKey};
use crate::mail::{MailKind, Outbox};
use courier_domain::team::{self as rules, Permission, Role};
pub use courier_domain::team::{Acting, Person};
use courier_store::people as store;

pub use config::TeamConfig;
pub use error::{
    AcceptRefusal, ChangeRefusal, FactorRefusal, INVALID_EMAIL, ResetRefusal, SignInRefusal,
    TeamError,
};
pub use passkeys::{
    CEREMONY_LIFETIME, Ceremony, MAX_NAME_CHARS as MAX_PASSKEY_NAME_CHARS, PasskeyEntry,
    PasskeyRefusal, Passkeys,
};
pub use second_factor::Enrolment;
pub use store::SecondFactorRow;
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
    /// Whether it was mailed to the person (a relay is configured); else pass it on.
    pub mailed: bool,
}

/// What asking for a password reset answers (`courier person password-reset` prints it): the
/// link is mailed when mail is configured, and shown only to an operator otherwise.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IssuedReset {
    pub email: String,
    pub expires_at: DateTime<Utc>,
    /// Opened in a browser, it lets the person set a new password, once.
    pub password_reset_url: String,
    pub mailed: bool,
}

/// Who asks for a password reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetAsker {
    /// Anyone, from the sign-in page: at most one link per [`RESET_EVERY`] per account.
    Person,
    /// An operator, on the command line.
    Operator,
}

/// How often the sign-in page's form makes a reset link for one account.
pub const RESET_EVERY: chrono::Duration = chrono::Duration::minutes(5);

/// What a password-reset link finds.
#[derive(Debug)]
pub enum ResetState {
    Open { email: String },
    Used,
    Expired,
    Unknown,
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

/// The account someone joins with through an invitation (see [`Teams::joining_account`]).
pub enum JoiningAccount {
    Existing(Person),
    New {
        person: Person,
        email_key: String,
        password_hash: String,
    },
}

impl JoiningAccount {
    /// Writes a new account on `conn` (or takes the existing one): the person who joins.
    pub async fn write(
        self,
        conn: &mut sqlx::PgConnection,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Person, AcceptRefusal> {
        let (person, email_key, password_hash) = match self {
            JoiningAccount::Existing(person) => return Ok(person),
            JoiningAccount::New {
                person,
                email_key,
                password_hash,
            } => (person, email_key, password_hash),
        };
        let created = store::insert(
            conn,
            &store::NewPerson {
                id: person.id,
                email: &person.email,
                email_key: &email_key,
                name: &person.name,
                password_hash: &password_hash,
                now,
            },
        )
        .await?;
        if !created {
            // Signed up through another invitation a moment ago: that account's password is
            // asked for instead.
            return Err(AcceptRefusal::AccountExists);
        }
        Ok(person)
    }
}

/// Merchants' teams. Cheap to clone.
#[derive(Clone)]
pub struct Teams {
    pool: PgPool,
    config: TeamConfig,
    public_url: String,
    outbox: Outbox,
    /// Seals TOTP keys.
    sealer: Sealer,
    passkeys: Passkeys,
}

/// What is kept of a link's token: its SHA-256.
pub(crate) fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn reset_state(found: Option<store::PasswordResetRow>, now: DateTime<Utc>) -> ResetState {
    match found {
        None => ResetState::Unknown,
        Some(reset) if reset.used_at.is_some() => ResetState::Used,
        Some(reset) if reset.expires_at <= now => ResetState::Expired,
        Some(reset) => ResetState::Open { email: reset.email },
    }
}

fn to_chrono(duration: Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX)
}

impl Teams {
    /// Teams whose links name `public_url`, mailed through `outbox`, their TOTP keys sealed
    /// with a subkey of `key`.
    pub fn new(
        pool: PgPool,
        config: TeamConfig,
        (public_url, outbox): (String, Outbox),
        key: &SecretKey,
    ) -> Self {
        Self {
            passkeys: Passkeys::new(pool.clone(), &public_url),
            pool,
            config,
            public_url: public_url.trim_end_matches('/').to_owned(),
            outbox,
            sealer: Sealer::new(key, "totp-secrets"),
        }
    }

    /// People's passkeys: a faster way to give the second factor.
    pub fn passkeys(&self) -> &Passkeys {
        &self.passkeys
    }

    /// Whether `person_id` has a second factor (a sign-in then asks for a code).
    pub async fn has_second_factor(&self, person_id: Uuid) -> Result<bool, sqlx::Error> {
        store::has_second_factor(&self.pool, person_id).await
    }

    /// Whether links are mailed (else whoever makes one passes it on).
    pub fn mails(&self) -> bool {
        self.outbox.sends()
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
        let merchant = courier_store::merchants::find_merchant(&mut tx, merchant_id)
            .await?
            .ok_or(TeamError::MerchantNotFound)?;
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
        let invitation_url = format!("{}/console/invitations/{token}", self.public_url);
        let subject = format!("You are invited to {}'s team on Courier", merchant.name);
        let body = format!(
            "{invited_by} invites you to join {}'s team on Courier as {} ({}).\n\n\
             Open this link to set your name and password and join:\n\n{invitation_url}\n\n\
             It works once, until {}. If you did not expect it, ignore this mail.\n",
            merchant.name,
            role.label(),
            role.summary(),
            expires_at.format("%Y-%m-%d %H:%M UTC"),
        );
        let mailed = self
            .outbox
            .write(&mut tx, email, MailKind::Invitation, (&subject, &body))
            .await?;
        tx.commit().await?;
        Ok(IssuedInvitation {
            invitation_id: id,
            merchant_id,
            email: email.to_owned(),
            role,
            expires_at,
            invitation_url,
            mailed,
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
        let invitation = match self.invitation(token).await? {
            InvitationState::Open { invitation, .. } => invitation,
            InvitationState::Used => return Err(AcceptRefusal::Used),
            InvitationState::Expired => return Err(AcceptRefusal::Expired),
            InvitationState::Withdrawn => return Err(AcceptRefusal::Withdrawn),
            InvitationState::Unknown => return Err(AcceptRefusal::Unknown),
        };
        let joining = self
            .joining_account(&invitation.email, &invitation.email_key, name, password)
            .await?;
        let now = crate::infra::clock::now();
        let mut tx = self.pool.begin().await?;
        let person = joining.write(&mut tx, now).await?;
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

    /// The account an invitation to `email` joins with, checked before any connection is held
    /// (the Argon2 check or hash is the slow part): the existing account of the address, when
    /// `password` is its password (`name` unused); else a new one named `name` with
    /// `password`, once both are acceptable.
    pub async fn joining_account(
        &self,
        email: &str,
        email_key: &str,
        name: &str,
        password: &str,
    ) -> Result<JoiningAccount, AcceptRefusal> {
        match store::find_by_email(&self.pool, email_key).await? {
            Some(person) => {
                if !passwords::verify(Some(&person.password_hash), password).await {
                    return Err(AcceptRefusal::WrongPassword);
                }
                Ok(JoiningAccount::Existing(Person {
                    id: person.id,
                    email: person.email,
                    name: person.name,
                }))
            }
            None => {
                let name = rules::person_name(name).ok_or(AcceptRefusal::InvalidName)?;
                rules::check_password(password, email).map_err(AcceptRefusal::WeakPassword)?;
                Ok(JoiningAccount::New {
                    person: Person {
                        id: Uuid::new_v4(),
                        email: email.to_owned(),
                        name: name.to_owned(),
                    },
                    email_key: email_key.to_owned(),
                    password_hash: passwords::hash(password).await,
                })
            }
        }
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

    /// Makes a password-reset link for the person of `email`, mailed to them when mail is
    /// configured; None when no account has that address, or when `asker` is the person (the
    /// sign-in page's form) and one was made for them less than [`RESET_EVERY`] ago, so
    /// nobody can fill someone's inbox with resets. An operator always gets one.
    pub async fn request_password_reset(
        &self,
        email: &str,
        asker: ResetAsker,
    ) -> Result<Option<IssuedReset>, sqlx::Error> {
        let Some(key) = rules::email_key(email) else {
            return Ok(None);
        };
        let Some(person) = store::find_by_email(&self.pool, &key).await? else {
            return Ok(None);
        };
        let now = crate::infra::clock::now();
        if asker == ResetAsker::Person
            && store::password_reset_made_since(&self.pool, person.id, now - RESET_EVERY).await?
        {
            return Ok(None);
        }
        let token = Alphanumeric.sample_string(&mut rand::rng(), 43);
        let expires_at = now + to_chrono(self.config.password_reset_ttl);
        let password_reset_url = format!("{}/console/password-reset/{token}", self.public_url);
        let mut tx = self.pool.begin().await?;
        store::insert_password_reset(&mut tx, &hash_token(&token), person.id, now, expires_at)
            .await?;
        let body = format!(
            "Someone asked to reset the password of your Courier account, {}.\n\n\
             Open this link to choose a new one (it signs you out everywhere):\n\n\
             {password_reset_url}\n\nIt works once, until {}. If you did not ask, ignore \
             this mail: your password stays as it is.\n",
            person.email,
            expires_at.format("%Y-%m-%d %H:%M UTC"),
        );
        let mailed = self
            .outbox
            .write(
                &mut tx,
                &person.email,
                MailKind::PasswordReset,
                ("Reset your Courier password", &body),
            )
            .await?;
        tx.commit().await?;
        Ok(Some(IssuedReset {
            email: person.email,
            expires_at,
            password_reset_url,
            mailed,
        }))
    }

    /// What the password-reset link holding `token` finds.
    pub async fn password_reset(&self, token: &str) -> Result<ResetState, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let found = store::password_reset(&mut conn, &hash_token(token)).await?;
        Ok(reset_state(found, crate::infra::clock::now()))
    }

    /// Sets a new password with the reset link holding `token`: used once; every session of
    /// the person ends, and the account is open to sign-ins again.
    pub async fn reset_password(
        &self,
        token: &str,
        password: &str,
    ) -> Result<Person, ResetRefusal> {
        let token_hash = hash_token(token);
        let now = crate::infra::clock::now();
        let email = match self.password_reset(token).await? {
            ResetState::Open { email } => email,
            ResetState::Used => return Err(ResetRefusal::Used),
            ResetState::Expired => return Err(ResetRefusal::Expired),
            ResetState::Unknown => return Err(ResetRefusal::Unknown),
        };
        rules::check_password(password, &email).map_err(ResetRefusal::WeakPassword)?;
        let password_hash = passwords::hash(password).await;
        let mut tx = self.pool.begin().await?;
        // Locked and checked again: two uses at once, one wins.
        let found = store::password_reset(&mut tx, &token_hash).await?;
        let person_id = match (reset_state(found.clone(), now), found) {
            (ResetState::Open { .. }, Some(reset)) => reset.person_id,
            (ResetState::Expired, _) => return Err(ResetRefusal::Expired),
            (ResetState::Unknown, _) => return Err(ResetRefusal::Unknown),
            _ => return Err(ResetRefusal::Used),
        };
        store::reset_password(&mut tx, &token_hash, person_id, &password_hash, now).await?;
        tx.commit().await?;
        let person = store::find(&self.pool, person_id)
            .await?
            .ok_or(ResetRefusal::Unknown)?;
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

fn unix_now() -> u64 {
    u64::try_from(crate::infra::clock::now().timestamp()).unwrap_or(0)
}

/// The second factor of people: TOTP enrolment, checks of a code or a recovery code, and an
/// owner's rule that the whole team has one.
impl Teams {
    /// Starts a TOTP enrolment for `person_id`: a new secret, waiting for its first code.
    pub async fn start_totp(&self, person_id: Uuid, email: &str) -> Result<Enrolment, sqlx::Error> {
        let secret = second_factor::new_secret();
        store::set_pending_totp(
            &self.pool,
            person_id,
            &self.sealer.seal(person_id.as_bytes(), &secret),
        )
        .await?;
        Ok(second_factor::enrolment(&secret, email).expect("a fresh secret is long enough"))
    }

    /// The enrolment waiting for `person_id`'s first code, to draw again (the same secret).
    pub async fn waiting_totp(&self, person_id: Uuid) -> Result<Option<Enrolment>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let Some(row) = store::totp_for_update(&mut conn, person_id).await? else {
            return Ok(None);
        };
        Ok(row
            .pending_secret
            .and_then(|sealed| self.sealer.open(person_id.as_bytes(), &sealed))
            .and_then(|secret| second_factor::enrolment(&secret, &row.email)))
    }

    /// Turns TOTP on with the first code of the waiting enrolment; answers the recovery codes,
    /// shown this once.
    pub async fn confirm_totp(
        &self,
        person_id: Uuid,
        code: &str,
    ) -> Result<Vec<String>, FactorRefusal> {
        let mut tx = self.pool.begin().await?;
        let row = store::totp_for_update(&mut tx, person_id)
            .await?
            .ok_or(FactorRefusal::NotStarted)?;
        let secret = row
            .pending_secret
            .and_then(|sealed| self.sealer.open(person_id.as_bytes(), &sealed))
            .ok_or(FactorRefusal::NotStarted)?;
        let step = second_factor::matching_step(&secret, code, unix_now(), None)
            .ok_or(FactorRefusal::WrongCode)?;
        let codes = second_factor::new_recovery_codes();
        let hashes: Vec<Vec<u8>> = codes
            .iter()
            .map(|c| second_factor::recovery_hash(person_id, c))
            .collect();
        store::enable_totp(
            &mut tx,
            person_id,
            step,
            &hashes,
            crate::infra::clock::now(),
        )
        .await?;
        tx.commit().await?;
        Ok(codes)
    }

    /// Whether `code` is `person_id`'s second factor now: a TOTP code not used before, or an
    /// unused recovery code (used up by this check).
    pub async fn check_second_factor(
        &self,
        person_id: Uuid,
        code: &str,
    ) -> Result<bool, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let Some(row) = store::totp_for_update(&mut tx, person_id).await? else {
            return Ok(false);
        };
        let Some(secret) = row
            .secret
            .and_then(|sealed| self.sealer.open(person_id.as_bytes(), &sealed))
        else {
            return Ok(false);
        };
        let accepted = if second_factor::is_recovery_code(code) {
            let hash = second_factor::recovery_hash(person_id, code);
            store::use_recovery_code(&mut tx, person_id, &hash, crate::infra::clock::now()).await?
        } else {
            match second_factor::matching_step(&secret, code, unix_now(), row.last_step) {
                Some(step) => {
                    store::note_totp_step(&mut tx, person_id, step).await?;
                    true
                }
                None => false,
            }
        };
        tx.commit().await?;
        Ok(accepted)
    }

    /// Turns `person_id`'s TOTP off, with their password; refused while a team of theirs
    /// requires a second factor.
    pub async fn disable_totp(&self, person_id: Uuid, password: &str) -> Result<(), FactorRefusal> {
        let Some(person) = store::find(&self.pool, person_id).await? else {
            return Err(FactorRefusal::WrongPassword);
        };
        if !passwords::verify(Some(&person.password_hash), password).await {
            return Err(FactorRefusal::WrongPassword);
        }
        if !store::second_factor(&self.pool, person_id)
            .await?
            .required_by
            .is_empty()
        {
            return Err(FactorRefusal::Required);
        }
        store::disable_totp(&self.pool, person_id).await?;
        // Passkeys stand for the second factor: with it off they go too.
        self.passkeys.remove_all(person_id).await?;
        Ok(())
    }

    /// Whether `merchant_id` requires a second factor of its team.
    pub async fn requires_second_factor(&self, merchant_id: Uuid) -> Result<bool, sqlx::Error> {
        store::requires_second_factor(&self.pool, merchant_id).await
    }

    /// What `person_id`'s account page says of their second factor.
    pub async fn second_factor(&self, person_id: Uuid) -> Result<SecondFactorRow, sqlx::Error> {
        store::second_factor(&self.pool, person_id).await
    }

    /// An owner requires (or no longer requires) a second factor of the whole team; to require
    /// it, they have one themselves.
    pub async fn require_second_factor(
        &self,
        acting: &Acting<'_>,
        required: bool,
    ) -> Result<(), ChangeRefusal> {
        if acting.role != Role::Owner {
            return Err(ChangeRefusal::NotAllowed);
        }
        if required
            && store::second_factor(&self.pool, acting.person.id)
                .await?
                .enabled_at
                .is_none()
        {
            return Err(ChangeRefusal::OwnFactorFirst);
        }
        let mut tx = self.pool.begin().await?;
        store::set_required_second_factor(&mut tx, acting.merchant_id, required).await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator: &acting.person.email,
                action: AuditAction::SecondFactorRule,
                target_type: "merchant",
                target_id: acting.merchant_id.to_string(),
                merchant_id: Some(acting.merchant_id),
                before: None,
                after: Some(serde_json::json!({"require_second_factor": required})),
                occurred_at: crate::infra::clock::now(),
            },
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
