//! What a customer text says, and whether one may be sent at all: pure rules, no I/O.

use std::fmt;

use crate::Environment;

/// The placeholders a message template may use.
const PLACEHOLDERS: [&str; 3] = ["{reference}", "{tracking_url}", "{sender}"];

/// A message template with `{reference}`, `{tracking_url}` and `{sender}` placeholders; it
/// must carry the tracking link, and names nothing else in braces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageTemplate(String);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("the template must contain {{tracking_url}}")]
    NoTrackingLink,
    #[error(
        "the template names an unknown placeholder {0:?}; use {{reference}}, {{tracking_url}} or {{sender}}"
    )]
    UnknownPlaceholder(String),
}

impl MessageTemplate {
    pub const DEFAULT: &'static str =
        "{sender}: your delivery {reference} is on its way. Track it: {tracking_url}";

    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        if !text.contains("{tracking_url}") {
            return Err(TemplateError::NoTrackingLink);
        }
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            let after = &rest[open..];
            let close = after.find('}').map_or(after.len(), |c| c + 1);
            let placeholder = &after[..close];
            if !PLACEHOLDERS.contains(&placeholder) {
                return Err(TemplateError::UnknownPlaceholder(placeholder.to_owned()));
            }
            rest = &after[close..];
        }
        Ok(Self(text.to_owned()))
    }

    /// Fills the placeholders in one pass, so a value is never read as a placeholder.
    pub fn render(&self, reference: &str, tracking_url: &str, sender: &str) -> String {
        let mut text = String::with_capacity(self.0.len() + tracking_url.len());
        let mut rest = self.0.as_str();
        while let Some(open) = rest.find('{') {
            text.push_str(&rest[..open]);
            let after = &rest[open..];
            let close = after.find('}').map_or(after.len(), |c| c + 1);
            text.push_str(match &after[..close] {
                "{reference}" => reference,
                "{tracking_url}" => tracking_url,
                "{sender}" => sender,
                other => other,
            });
            rest = &after[close..];
        }
        text.push_str(rest);
        text
    }
}

impl Default for MessageTemplate {
    fn default() -> Self {
        Self(Self::DEFAULT.to_owned())
    }
}

/// What becomes of a text the job asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Goes to the SMS gateway.
    Send,
    /// A test-environment job: recorded as what would have been sent, never sent.
    Simulate,
    /// Cannot be sent; the reason is kept with the record.
    Skip(SkipReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The number belongs to a country the market does not text.
    CountryNotSupported,
    /// No SMS gateway is configured for live texts.
    NoGateway,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::CountryNotSupported => "country_not_supported",
            SkipReason::NoGateway => "no_gateway",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Decides what happens to the tracking-link text of a job whose customer is to be notified.
/// The sandbox never texts anybody, whatever the number.
pub fn decide(
    environment: Environment,
    phone: &str,
    text_countries: &[String],
    gateway_configured: bool,
) -> Disposition {
    if environment == Environment::Test {
        return Disposition::Simulate;
    }
    let country = phone_country(phone);
    if !country.is_some_and(|c| text_countries.iter().any(|t| t == &c)) {
        return Disposition::Skip(SkipReason::CountryNotSupported);
    }
    if !gateway_configured {
        return Disposition::Skip(SkipReason::NoGateway);
    }
    Disposition::Send
}

/// The ISO 3166 alpha-2 country of an E.164 number, when the numbering plan tells.
pub fn phone_country(e164: &str) -> Option<String> {
    let number = rlibphonenumber::PHONE_NUMBER_UTIL.parse(e164, None).ok()?;
    Some(number.get_region_code()?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_need_the_link_and_only_known_placeholders() {
        assert_eq!(
            MessageTemplate::parse("Hi {reference}"),
            Err(TemplateError::NoTrackingLink)
        );
        assert_eq!(
            MessageTemplate::parse("{name}: {tracking_url}"),
            Err(TemplateError::UnknownPlaceholder("{name}".into()))
        );
        assert_eq!(
            MessageTemplate::parse("{tracking_url} {oops"),
            Err(TemplateError::UnknownPlaceholder("{oops".into()))
        );
        let template = MessageTemplate::parse("{sender} {reference} {tracking_url}").unwrap();
        assert_eq!(
            template.render("CR-1", "https://x/track/t", "Shop"),
            "Shop CR-1 https://x/track/t"
        );
        assert!(MessageTemplate::parse(MessageTemplate::DEFAULT).is_ok());
    }

    #[test]
    fn a_rendered_value_is_not_expanded_again() {
        let template = MessageTemplate::default();
        let text = template.render("{tracking_url}", "https://x/track/t", "S");
        assert_eq!(text.matches("https://x/track/t").count(), 1);
    }

    #[test]
    fn phone_countries_come_from_the_numbering_plan() {
        assert_eq!(phone_country("+966501234567").as_deref(), Some("SA"));
        assert_eq!(phone_country("+4232366000").as_deref(), Some("LI"));
        assert_eq!(phone_country("+14103963100").as_deref(), Some("US"));
        assert_eq!(phone_country("not a number"), None);
    }

    #[test]
    fn the_sandbox_never_texts_and_live_texts_only_where_allowed() {
        let sa = ["SA".to_owned()];
        assert_eq!(
            decide(Environment::Test, "+966501234567", &sa, true),
            Disposition::Simulate
        );
        assert_eq!(
            decide(Environment::Test, "+4232366000", &[], false),
            Disposition::Simulate
        );
        assert_eq!(
            decide(Environment::Live, "+966501234567", &sa, true),
            Disposition::Send
        );
        assert_eq!(
            decide(Environment::Live, "+4232366000", &sa, true),
            Disposition::Skip(SkipReason::CountryNotSupported)
        );
        assert_eq!(
            decide(Environment::Live, "+966501234567", &sa, false),
            Disposition::Skip(SkipReason::NoGateway)
        );
    }
}
