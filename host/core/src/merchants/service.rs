//! The merchants service: what operators do with merchants goes through it. Its methods sit
//! beside what they do: onboarding in the parent module, keys in `keys`, settings in `settings`.

use sqlx::PgPool;

use crate::auth::Authenticator;

/// Merchants as operators manage them. Cheap to clone.
#[derive(Clone)]
pub struct Merchants {
    pub(super) pool: PgPool,
    pub(super) authenticator: Authenticator,
}

impl Merchants {
    pub fn new(pool: PgPool, authenticator: Authenticator) -> Self {
        Self {
            pool,
            authenticator,
        }
    }
}
