//! Numeric request fields accept a JSON number or a numeric string (spec, "Conventions"):
//! decimals for coordinates, whole numbers for integers.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// A number that may arrive as a JSON number or as a string holding one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Numeric<T>(pub T);

/// The number types `Numeric` can hold.
pub trait NumericValue: Sized + Copy {
    const EXPECTING: &'static str;
    fn from_i64(value: i64) -> Option<Self>;
    fn from_u64(value: u64) -> Option<Self>;
    fn from_f64(value: f64) -> Option<Self>;
    fn from_text(text: &str) -> Option<Self>;
}

impl NumericValue for f64 {
    const EXPECTING: &'static str = "a number or a numeric string";
    fn from_i64(value: i64) -> Option<Self> {
        Some(value as f64)
    }
    fn from_u64(value: u64) -> Option<Self> {
        Some(value as f64)
    }
    fn from_f64(value: f64) -> Option<Self> {
        value.is_finite().then_some(value)
    }
    fn from_text(text: &str) -> Option<Self> {
        // Rust also parses "inf" and "NaN"; neither is a number a client means.
        let plain = text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
        plain
            .then(|| text.parse().ok())
            .flatten()
            .and_then(Self::from_f64)
    }
}

macro_rules! whole_number {
    ($($t:ty),*) => {$(
        impl NumericValue for $t {
            const EXPECTING: &'static str = "a whole number or a whole-number string";
            fn from_i64(value: i64) -> Option<Self> {
                value.try_into().ok()
            }
            fn from_u64(value: u64) -> Option<Self> {
                value.try_into().ok()
            }
            fn from_f64(value: f64) -> Option<Self> {
                // 3.0 is a whole number; 3.5 is not. Casting saturates, so check the range.
                let whole = value.is_finite() && value.fract() == 0.0;
                let in_range = value >= <$t>::MIN as f64 && value <= <$t>::MAX as f64;
                (whole && in_range).then(|| value as $t)
            }
            fn from_text(text: &str) -> Option<Self> {
                text.parse().ok()
            }
        }
    )*};
}

whole_number!(i32, i64, u32, u64, usize);

impl<'de, T: NumericValue> Deserialize<'de> for Numeric<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NumericVisitor<T>(PhantomData<T>);

        impl<T: NumericValue> NumericVisitor<T> {
            fn out_of_range<E: de::Error>(&self, shown: &dyn fmt::Display) -> E {
                E::custom(format!("invalid value {shown}, expected {}", T::EXPECTING))
            }
        }

        impl<T: NumericValue> Visitor<'_> for NumericVisitor<T> {
            type Value = Numeric<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(T::EXPECTING)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                T::from_i64(v)
                    .map(Numeric)
                    .ok_or_else(|| self.out_of_range(&v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                T::from_u64(v)
                    .map(Numeric)
                    .ok_or_else(|| self.out_of_range(&v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                T::from_f64(v)
                    .map(Numeric)
                    .ok_or_else(|| self.out_of_range(&v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                T::from_text(v.trim())
                    .map(Numeric)
                    .ok_or_else(|| self.out_of_range(&format!("{v:?}")))
            }
        }

        deserializer.deserialize_any(NumericVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<T: NumericValue>(json: &str) -> Result<T, serde_json::Error> {
        serde_json::from_str::<Numeric<T>>(json).map(|n| n.0)
    }

    #[test]
    fn decimals_accept_numbers_and_numeric_strings() {
        assert_eq!(parse::<f64>("47.14").unwrap(), 47.14);
        assert_eq!(parse::<f64>("\"47.14\"").unwrap(), 47.14);
        assert_eq!(parse::<f64>("\" -9.5 \"").unwrap(), -9.5);
        assert_eq!(parse::<f64>("12").unwrap(), 12.0);
        assert_eq!(parse::<f64>("\"1e2\"").unwrap(), 100.0);
    }

    #[test]
    fn decimals_refuse_what_is_not_a_finite_number() {
        for bad in [
            "\"abc\"", "\"NaN\"", "\"inf\"", "\"\"", "true", "null", "[1]", "\"1,5\"",
        ] {
            assert!(parse::<f64>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn integers_accept_whole_numbers_in_either_form() {
        assert_eq!(parse::<i64>("1500").unwrap(), 1500);
        assert_eq!(parse::<i64>("\"1500\"").unwrap(), 1500);
        assert_eq!(parse::<i64>("-3").unwrap(), -3);
        assert_eq!(parse::<i32>("3.0").unwrap(), 3);
        assert_eq!(parse::<i64>("\"9223372036854775807\"").unwrap(), i64::MAX);
    }

    #[test]
    fn integers_refuse_fractions_and_overflow() {
        for bad in [
            "1.5",
            "\"1.5\"",
            "\"12abc\"",
            "\"\"",
            "1e300",
            "\"2147483648\"",
        ] {
            assert!(parse::<i32>(bad).is_err(), "{bad}");
        }
        assert!(parse::<u32>("-1").is_err());
        assert!(parse::<i64>("\"9223372036854775808\"").is_err());
    }

    #[test]
    fn works_inside_optional_fields() {
        #[derive(Deserialize)]
        struct Body {
            #[serde(default)]
            weight_grams: Option<Numeric<i64>>,
        }
        let body: Body = serde_json::from_str(r#"{"weight_grams": "250"}"#).unwrap();
        assert_eq!(body.weight_grams, Some(Numeric(250)));
        let body: Body = serde_json::from_str(r#"{}"#).unwrap();
        assert_eq!(body.weight_grams, None);
        let body: Body = serde_json::from_str(r#"{"weight_grams": null}"#).unwrap();
        assert_eq!(body.weight_grams, None);
    }
}
