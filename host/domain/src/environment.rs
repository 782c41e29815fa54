use serde::Serialize;

/// Test (sandbox) or live; decided by the credential a request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    Test,
    Live,
}

impl Environment {
    pub const ALL: [Environment; 2] = [Environment::Test, Environment::Live];

    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Test => "test",
            Environment::Live => "live",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "test" => Some(Environment::Test),
            "live" => Some(Environment::Live),
            _ => None,
        }
    }

    /// The prefix every API key of this environment starts with.
    pub fn key_prefix(self) -> &'static str {
        match self {
            Environment::Test => "ck_test_",
            Environment::Live => "ck_live_",
        }
    }

    /// The environment a key's prefix names, if any.
    pub fn of_key(key: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|env| key.starts_with(env.key_prefix()))
    }
}

/// A stored environment this code does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an environment")]
pub struct UnknownEnvironment(pub String);

/// How a stored environment is read: an unknown one is an error, never a guess.
impl TryFrom<String> for Environment {
    type Error = UnknownEnvironment;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value).ok_or(UnknownEnvironment(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_names_the_environment() {
        assert_eq!(Environment::of_key("ck_test_abc"), Some(Environment::Test));
        assert_eq!(Environment::of_key("ck_live_abc"), Some(Environment::Live));
        assert_eq!(Environment::of_key("ck_prod_abc"), None);
        assert_eq!(Environment::of_key("CK_TEST_abc"), None);
    }
}
