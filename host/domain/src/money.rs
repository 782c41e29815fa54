//! Currencies and amounts in minor units.

use std::fmt;

/// An ISO 4217 currency with its number of decimals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Currency(iso_currency::Currency);

#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not an ISO 4217 currency code")]
pub struct UnknownCurrency(pub String);

impl Currency {
    pub fn from_code(code: &str) -> Result<Self, UnknownCurrency> {
        iso_currency::Currency::from_code(code)
            .map(Self)
            .ok_or_else(|| UnknownCurrency(code.to_owned()))
    }

    pub fn code(self) -> String {
        self.0.code().to_owned()
    }

    /// Digits after the decimal point (2 for CHF, 0 for JPY).
    pub fn decimals(self) -> u32 {
        self.0.exponent().map_or(0, u32::from)
    }

    /// An amount for people: the amount with the currency's decimals, then the code
    /// ("12.50 CHF", "1250 JPY", "-0.05 EUR").
    pub fn format(self, amount_minor: i64) -> String {
        let decimals = self.decimals();
        let sign = if amount_minor < 0 { "-" } else { "" };
        let magnitude = amount_minor.unsigned_abs();
        if decimals == 0 {
            return format!("{sign}{magnitude} {}", self.0.code());
        }
        let scale = 10u64.pow(decimals);
        format!(
            "{sign}{}.{:0width$} {}",
            magnitude / scale,
            magnitude % scale,
            self.0.code(),
            width = decimals as usize
        )
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_the_currencys_own_decimals() {
        let chf = Currency::from_code("CHF").unwrap();
        assert_eq!(chf.format(1250), "12.50 CHF");
        assert_eq!(chf.format(5), "0.05 CHF");
        assert_eq!(chf.format(-1205), "-12.05 CHF");
        assert_eq!(Currency::from_code("JPY").unwrap().format(1250), "1250 JPY");
        assert_eq!(
            Currency::from_code("BHD").unwrap().format(1250),
            "1.250 BHD"
        );
        assert_eq!(
            Currency::from_code("USD").unwrap().format(i64::MIN),
            "-92233720368547758.08 USD"
        );
    }

    #[test]
    fn refuses_unknown_codes() {
        assert!(Currency::from_code("XYZ").is_err());
        assert!(Currency::from_code("chf").is_err());
    }
}
