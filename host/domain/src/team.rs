//! A merchant's team: the people who sign in to the console, what each role may do there, and
//! the rules for their e-mail addresses and passwords.

crate::names::named_enum! {
    /// What a person may do in a merchant's console.
    pub enum Role {
        /// Everything, the team's owners and second-factor rule included.
        Owner,
        /// The team (but its owners), keys, settings, cards, webhooks, jobs and the sandbox.
        Admin,
        /// Keys and webhooks; reads jobs.
        Developer,
        /// Jobs, cancelling them, and the sandbox.
        Support,
        /// Reads everything a member may read; changes nothing.
        Viewer,
    }
}

/// Something a console page or form does, which a role may or may not do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Read jobs, charges, deliveries, keys (never a secret), settings and the team.
    Read,
    CancelJobs,
    UseSandbox,
    ManageKeys,
    ManageWebhooks,
    /// The account's settings and its cards: what its money depends on.
    ManageSettings,
    /// Invite people, change their roles, remove them (owners only by owners).
    ManageTeam,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Owner,
        Role::Admin,
        Role::Developer,
        Role::Support,
        Role::Viewer,
    ];

    /// Whether this role may do `permission`.
    pub fn may(self, permission: Permission) -> bool {
        use Permission::*;
        match self {
            Role::Owner | Role::Admin => true,
            Role::Developer => matches!(permission, Read | ManageKeys | ManageWebhooks),
            Role::Support => matches!(permission, Read | CancelJobs | UseSandbox),
            Role::Viewer => permission == Read,
        }
    }

    /// Whether this role may invite someone as `role`, or give or take `role` away: owners
    /// any role, admins any but owner, others none.
    pub fn may_grant(self, role: Role) -> bool {
        match self {
            Role::Owner => true,
            Role::Admin => role != Role::Owner,
            _ => false,
        }
    }

    /// The role's name as pages write it.
    pub fn label(self) -> &'static str {
        match self {
            Role::Owner => "Owner",
            Role::Admin => "Admin",
            Role::Developer => "Developer",
            Role::Support => "Support",
            Role::Viewer => "Viewer",
        }
    }

    /// What the role may do, in a line.
    pub fn summary(self) -> &'static str {
        match self {
            Role::Owner => "everything, the team's owners included",
            Role::Admin => "the team, keys, settings, cards, webhooks, jobs and the sandbox",
            Role::Developer => "keys and webhooks; reads jobs",
            Role::Support => "jobs, cancelling them, and the sandbox",
            Role::Viewer => "reads everything; changes nothing",
        }
    }
}

/// A person signed in (or just joined).
#[derive(Clone, Debug)]
pub struct Person {
    pub id: uuid::Uuid,
    pub email: String,
    pub name: String,
}

/// Who acts on a team: a signed-in member, with their role there.
#[derive(Clone, Debug)]
pub struct Acting<'a> {
    pub person: &'a Person,
    pub merchant_id: uuid::Uuid,
    pub role: Role,
}

/// The longest e-mail address a person may have.
pub const MAX_EMAIL_CHARS: usize = 254;
/// The shortest password a person may set.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// The longest password a person may set (hashing a longer one only costs the service).
pub const MAX_PASSWORD_CHARS: usize = 128;
/// The longest name a person may give.
pub const MAX_NAME_CHARS: usize = 100;

/// An e-mail address as an account is looked up by: trimmed and lower-cased, so `Ana@Shop.Example`
/// and `ana@shop.example` are one person. None when it is not an address.
pub fn email_key(email: &str) -> Option<String> {
    let email = email.trim();
    (email.chars().count() <= MAX_EMAIL_CHARS
        && email.parse::<email_address::EmailAddress>().is_ok())
    .then(|| email.to_lowercase())
}

/// Why a password cannot be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeakPassword {
    TooShort,
    TooLong,
    /// It is the person's e-mail address, or its name part.
    IsTheEmail,
}

impl WeakPassword {
    /// What a page says of it.
    pub fn explain(self) -> String {
        match self {
            WeakPassword::TooShort => {
                format!("Choose a password of at least {MIN_PASSWORD_CHARS} characters.")
            }
            WeakPassword::TooLong => {
                format!("Choose a password of at most {MAX_PASSWORD_CHARS} characters.")
            }
            WeakPassword::IsTheEmail => "Choose a password that is not your e-mail address.".into(),
        }
    }
}

/// Checks a new password for the person with `email`.
pub fn check_password(password: &str, email: &str) -> Result<(), WeakPassword> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(WeakPassword::TooShort);
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(WeakPassword::TooLong);
    }
    let lowered = password.trim().to_lowercase();
    let email = email.trim().to_lowercase();
    let local = email.split('@').next().unwrap_or_default();
    if lowered == email || lowered == local {
        return Err(WeakPassword::IsTheEmail);
    }
    Ok(())
}

/// A person's name as given: trimmed; None when empty or too long.
pub fn person_name(name: &str) -> Option<&str> {
    let name = name.trim();
    (!name.is_empty() && name.chars().count() <= MAX_NAME_CHARS && !name.contains('\0'))
        .then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_may_what_the_docs_say() {
        use Permission::*;
        let all = [
            Read,
            CancelJobs,
            UseSandbox,
            ManageKeys,
            ManageWebhooks,
            ManageSettings,
            ManageTeam,
        ];
        let allowed = |role: Role| all.into_iter().filter(|p| role.may(*p)).collect::<Vec<_>>();
        assert_eq!(allowed(Role::Owner), all);
        assert_eq!(allowed(Role::Admin), all);
        assert_eq!(allowed(Role::Developer), [Read, ManageKeys, ManageWebhooks]);
        assert_eq!(allowed(Role::Support), [Read, CancelJobs, UseSandbox]);
        assert_eq!(allowed(Role::Viewer), [Read]);
    }

    #[test]
    fn only_owners_make_owners() {
        assert!(Role::Owner.may_grant(Role::Owner));
        assert!(!Role::Admin.may_grant(Role::Owner));
        assert!(Role::Admin.may_grant(Role::Admin));
        assert!(Role::Admin.may_grant(Role::Viewer));
        for role in [Role::Developer, Role::Support, Role::Viewer] {
            assert!(Role::ALL.iter().all(|r| !role.may_grant(*r)));
        }
    }

    #[test]
    fn names_round_trip() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("Owner"), None);
        assert_eq!(Role::parse("root"), None);
    }

    #[test]
    fn addresses_are_keyed_in_lower_case() {
        assert_eq!(
            email_key("  Ana@Shop.Example "),
            Some("ana@shop.example".into())
        );
        assert_eq!(email_key("not an address"), None);
        assert_eq!(email_key(""), None);
        let long = format!("{}@example.com", "a".repeat(250));
        assert_eq!(email_key(&long), None);
    }

    #[test]
    fn passwords_are_long_enough_and_not_the_address() {
        assert_eq!(
            check_password("short", "ana@shop.example"),
            Err(WeakPassword::TooShort)
        );
        assert_eq!(
            check_password(&"x".repeat(129), "ana@shop.example"),
            Err(WeakPassword::TooLong)
        );
        assert_eq!(
            check_password("Ana@Shop.Example", "ana@shop.example"),
            Err(WeakPassword::IsTheEmail)
        );
        assert_eq!(
            check_password("anaanaanaana", "anaanaanaana@shop.example"),
            Err(WeakPassword::IsTheEmail)
        );
        assert_eq!(
            check_password("correct horse battery", "ana@shop.example"),
            Ok(())
        );
        // Counted in characters, not bytes.
        assert_eq!(
            check_password("ééééé", "ana@shop.example"),
            Err(WeakPassword::TooShort)
        );
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(person_name("  Ana Diaz "), Some("Ana Diaz"));
        assert_eq!(person_name("   "), None);
        assert_eq!(person_name(&"a".repeat(101)), None);
    }
}
