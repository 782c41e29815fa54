//! Settings read from the environment. Each feature declares its own as a
//! `#[derive(clap::Args)]` struct whose fields carry `env = "COURIER_…"`, a default and a doc
//! comment; the root configuration flattens them, and the docs' table of variables is made
//! from the same declarations. This module depends on nothing else of the crate, so every
//! feature can use it.

use std::ffi::OsStr;
use std::time::Duration;

use clap::error::{ContextKind, ContextValue};
use clap::{Args, Command, FromArgMatches};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{name} is not valid: {reason}")]
    Invalid { name: String, reason: String },
}

/// Reads `T` through `lookup` (a variable's value, or None when it is unset), never from the
/// process's own environment, so tests can supply their values.
pub fn from_lookup<T: Args + FromArgMatches>(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<T, ConfigError> {
    let command = T::augment_args(Command::new("courier").no_binary_name(true));
    let mut argv: Vec<String> = Vec::new();
    for arg in command.get_arguments() {
        let (Some(name), Some(long)) = (arg.get_env().and_then(OsStr::to_str), arg.get_long())
        else {
            continue;
        };
        // An empty value counts as unset, as in the process's environment.
        if let Some(value) = lookup(name).filter(|value| !value.is_empty()) {
            argv.push(format!("--{long}={value}"));
        }
    }
    // Only what `lookup` gave counts, not the process's environment.
    let command = command.mut_args(|arg| arg.env(None));
    let refused = |error: clap::Error| {
        // The refused argument is named `--long <VALUE>`: name its variable instead.
        let argument = match error.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(argument)) => argument.clone(),
            _ => String::new(),
        };
        let name = T::augment_args(Command::new("courier"))
            .get_arguments()
            .find(|arg| {
                arg.get_long().is_some_and(|long| {
                    argument == format!("--{long}") || argument.starts_with(&format!("--{long} "))
                })
            })
            .and_then(|arg| arg.get_env()?.to_str().map(str::to_owned))
            .unwrap_or_else(|| "the configuration".to_owned());
        ConfigError::Invalid {
            name,
            reason: reason_of(&error),
        }
    };
    let matches = command.try_get_matches_from(argv).map_err(refused)?;
    T::from_arg_matches(&matches).map_err(refused)
}

/// Reads `T` from the process's environment.
pub fn from_env<T: Args + FromArgMatches>() -> Result<T, ConfigError> {
    from_lookup(environment)
}

/// A variable of the process's environment; an empty one counts as unset.
pub fn environment(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The reason our value parsers gave, without clap's framing.
fn reason_of(error: &clap::Error) -> String {
    match std::error::Error::source(error) {
        Some(source) => source.to_string(),
        None => error.kind().to_string(),
    }
}

/// One variable, as the docs list it.
#[derive(Debug, PartialEq, Eq)]
pub struct Variable {
    pub name: String,
    /// The default, or None when unset means something of its own (the meaning says what).
    pub default: Option<String>,
    pub meaning: String,
}

/// Every variable `T` reads, in declaration order.
pub fn variables<T: Args>() -> Vec<Variable> {
    let command = T::augment_args(Command::new("courier"));
    command
        .get_arguments()
        .filter_map(|arg| {
            let name = arg.get_env()?.to_str()?.to_owned();
            let default = arg
                .get_default_values()
                .first()
                .map(|value| value.to_string_lossy().into_owned());
            let meaning = arg
                .get_long_help()
                .or(arg.get_help())
                .map(|help| help.to_string())
                .unwrap_or_default();
            // clap drops a doc comment's closing full stop; the docs keep whole sentences.
            let meaning = match meaning.ends_with('.') {
                true => meaning,
                false => format!("{meaning}."),
            };
            Some(Variable {
                name,
                default,
                meaning,
            })
        })
        .collect()
}

/// A whole number above zero, capped so that durations made from it cannot overflow.
pub fn positive(raw: &str) -> Result<u64, String> {
    match raw.trim().parse::<u64>() {
        Ok(n) if n > 0 && n <= 1 << 40 => Ok(n),
        _ => Err(format!("{raw:?} is not a whole number above zero")),
    }
}

/// A whole number above zero that fits a `u32`.
pub fn positive_u32(raw: &str) -> Result<u32, String> {
    positive(raw).and_then(|n| u32::try_from(n).map_err(|_| format!("{raw:?} is too large")))
}

/// A whole number above zero that fits an `i32`.
pub fn positive_i32(raw: &str) -> Result<i32, String> {
    positive(raw).and_then(|n| i32::try_from(n).map_err(|_| format!("{raw:?} is too large")))
}

/// A whole number above zero.
pub fn positive_usize(raw: &str) -> Result<usize, String> {
    positive(raw).and_then(|n| usize::try_from(n).map_err(|_| format!("{raw:?} is too large")))
}

/// A whole number of zero or more.
pub fn whole(raw: &str) -> Result<u64, String> {
    match raw.trim().parse::<u64>() {
        Ok(n) if n <= 1 << 40 => Ok(n),
        _ => Err(format!("{raw:?} is not a whole number")),
    }
}

/// Milliseconds, at least one.
pub fn millis(raw: &str) -> Result<Duration, String> {
    positive(raw).map(Duration::from_millis)
}

/// Milliseconds, zero allowed.
pub fn millis_or_zero(raw: &str) -> Result<Duration, String> {
    whole(raw).map(Duration::from_millis)
}

/// An IP address or network (CIDR), as `COURIER_TRUSTED_PROXIES` lists them.
pub fn network(raw: &str) -> Result<ipnet::IpNet, String> {
    let raw = raw.trim();
    raw.parse::<ipnet::IpNet>()
        .or_else(|_| raw.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{raw:?} is not an IP address or a network such as 10.0.0.0/8"))
}

/// Seconds, at least one.
pub fn seconds(raw: &str) -> Result<chrono::Duration, String> {
    positive(raw).map(|s| chrono::Duration::seconds(s as i64))
}

/// `true`/`1` or `false`/`0`.
pub fn flag(raw: &str) -> Result<bool, String> {
    match raw.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err("use true or false".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_are_addresses_or_cidr_ranges() {
        assert_eq!(network("10.0.0.5").unwrap().to_string(), "10.0.0.5/32");
        assert_eq!(network(" 10.1.0.0/16 ").unwrap().to_string(), "10.1.0.0/16");
        assert!(network("::1").is_ok());
        assert!(network("10.0.0.0/33").is_err());
        assert!(network("balancer").is_err());
    }

    /// Two settings of a made-up feature.
    #[derive(Args, Debug)]
    struct Example {
        /// How long to wait.
        #[arg(long = "example-wait-ms", env = "EXAMPLE_WAIT_MS", default_value = "250",
              value_parser = millis)]
        wait: Duration,
        /// Where to go. Unset: nowhere.
        #[arg(long = "example-target", env = "EXAMPLE_TARGET")]
        target: Option<String>,
        #[arg(skip = 7_u32)]
        fixed: u32,
    }

    #[test]
    fn values_come_from_the_lookup_and_defaults_fill_the_rest() {
        let example: Example = from_lookup(|_| None).unwrap();
        assert_eq!(example.wait, Duration::from_millis(250));
        assert_eq!(example.target, None);
        assert_eq!(example.fixed, 7);
        let example: Example = from_lookup(|name| match name {
            "EXAMPLE_WAIT_MS" => Some("40".into()),
            "EXAMPLE_TARGET" => Some("--not-a-flag".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(example.wait, Duration::from_millis(40));
        assert_eq!(example.target.as_deref(), Some("--not-a-flag"));
    }

    #[test]
    fn a_refusal_names_the_variable_and_says_why() {
        let error = from_lookup::<Example>(|name| (name == "EXAMPLE_WAIT_MS").then(|| "0".into()))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "EXAMPLE_WAIT_MS is not valid: \"0\" is not a whole number above zero"
        );
    }

    #[test]
    fn the_variables_are_listed_with_defaults_and_meanings() {
        let listed = variables::<Example>();
        assert_eq!(
            listed,
            [
                Variable {
                    name: "EXAMPLE_WAIT_MS".into(),
                    default: Some("250".into()),
                    meaning: "How long to wait.".into(),
                },
                Variable {
                    name: "EXAMPLE_TARGET".into(),
                    default: None,
                    meaning: "Where to go. Unset: nowhere.".into(),
                },
            ]
        );
    }
}

/// A setting that must never be printed (a token, a key, a password, a URL that may carry
/// one): its `Debug` names no part of it, so a configuration logged or shown in a panic gives
/// nothing away. [`Secret::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(redacted)")
    }
}

/// A secret setting as it is given.
pub fn secret(raw: &str) -> Result<Secret, String> {
    Ok(Secret::new(raw))
}
