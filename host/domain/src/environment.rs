crate::names::named_enum! {
    /// Test (sandbox) or live; decided by the credential a request carries.
    pub enum Environment {
        Test,
        Live,
    }
}

impl Environment {
    pub const ALL: [Environment; 2] = [Environment::Test, Environment::Live];

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

    #[test]
    fn names_round_trip() {
        for env in Environment::ALL {
            assert_eq!(Environment::parse(env.as_str()), Some(env));
            assert_eq!(
                serde_json::to_value(env).unwrap(),
                serde_json::json!(env.as_str())
            );
        }
        assert_eq!(Environment::parse("Test"), None);
    }
}
