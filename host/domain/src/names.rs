//! Enums that travel as names: stored in a text column, written in JSON, listed in the API
//! description. Each variant's name is its snake_case spelling, the same in all three places.

/// Declares such an enum with `as_str` and `parse`; it also parses with `str::parse`, which the
/// store uses to read a column (an unknown stored name is an error, never a guess).
macro_rules! named_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$variant_meta:meta])* $variant:ident),+ $(,)? }) => {
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash,
            serde::Serialize, serde::Deserialize, utoipa::ToSchema,
            strum::EnumString, strum::IntoStaticStr,
        )]
        #[serde(rename_all = "snake_case")]
        #[strum(serialize_all = "snake_case")]
        $(#[$meta])*
        $vis enum $name {
            $($(#[$variant_meta])* $variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                self.into()
            }

            pub fn parse(name: &str) -> Option<Self> {
                name.parse().ok()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use named_enum;
