//! Mail to the people who manage a merchant's webhooks (owners, admins, developers) when one
//! of its endpoints keeps failing: a warning when its consecutive failures reach
//! `COURIER_WEBHOOK_WARN_AFTER`, while there is time to mend the receiver, and a notice when it
//! is suspended. Each is written in the transaction that records the failure, so it is owed
//! exactly once per streak (the count only rises by one under the endpoint's lock, and a
//! success or a resume sets it back to 0).

use courier_domain::team::Permission;
use courier_store::webhooks::FailureRecorded;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::mail::{MailKind, Outbox};

/// What a failure may owe, and where the console is.
#[derive(Clone, Debug, Default)]
pub struct FailureNotices {
    outbox: Outbox,
    /// The service's public URL, for the link to the endpoint's page.
    public_url: String,
    warn_after: i32,
    suspend_after: i32,
}

impl FailureNotices {
    pub fn new(outbox: Outbox, public_url: String, warn_after: i32, suspend_after: i32) -> Self {
        Self {
            outbox,
            public_url,
            warn_after,
            suspend_after,
        }
    }

    /// Writes the mail `recorded` owes, if any, on `conn` (the recording's transaction).
    pub async fn owed(
        &self,
        conn: &mut PgConnection,
        endpoint_id: Uuid,
        recorded: &FailureRecorded,
        last_error: &str,
    ) -> Result<(), sqlx::Error> {
        let Some(kind) = self.notice_of(recorded) else {
            return Ok(());
        };
        if !self.outbox.sends() {
            return Ok(());
        }
        let merchant = courier_store::merchants::find_merchant(conn, recorded.merchant_id)
            .await?
            .map_or_else(|| recorded.merchant_id.to_string(), |m| m.name);
        let link = format!(
            "{}/console/webhooks/{endpoint_id}",
            self.public_url.trim_end_matches('/')
        );
        let text = kind.text(&Facts {
            merchant: &merchant,
            url: &recorded.url,
            environment: recorded.environment.as_str(),
            failures: recorded.consecutive_failures,
            suspend_after: self.suspend_after,
            last_error,
            link: &link,
        });
        self.outbox
            .tell_members_who_may(
                conn,
                recorded.merchant_id,
                Permission::ManageWebhooks,
                MailKind::WebhookNotice,
                (&text.0, &text.1),
            )
            .await
    }

    fn notice_of(&self, recorded: &FailureRecorded) -> Option<Notice> {
        if recorded.suspended_now {
            Some(Notice::Suspended)
        } else if !recorded.suspended
            && self.warn_after < self.suspend_after
            && recorded.consecutive_failures == self.warn_after
        {
            Some(Notice::Failing)
        } else {
            None
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notice {
    Failing,
    Suspended,
}

struct Facts<'a> {
    merchant: &'a str,
    url: &'a str,
    environment: &'a str,
    failures: i32,
    suspend_after: i32,
    last_error: &'a str,
    link: &'a str,
}

impl Notice {
    /// The subject and the body.
    fn text(self, f: &Facts<'_>) -> (String, String) {
        match self {
            Notice::Failing => (
                format!("{}: webhook endpoint failing ({})", f.merchant, f.url),
                format!(
                    "The last {} deliveries to {} ({} events) failed; the last: {}.\n\n\
                     After {} failures in a row it is suspended, and nothing more is sent to it \
                     until someone resumes it. Deliveries are retried meanwhile; one that \
                     succeeds resets the count.\n\nIts deliveries and their answers: {}\n",
                    f.failures, f.url, f.environment, f.last_error, f.suspend_after, f.link
                ),
            ),
            Notice::Suspended => (
                format!("{}: webhook endpoint suspended ({})", f.merchant, f.url),
                format!(
                    "{} deliveries in a row to {} ({} events) failed, the last: {}. The \
                     endpoint is suspended: nothing more is sent to it, and events raised \
                     meanwhile are not sent after it is resumed.\n\nOnce the receiver \
                     answers again, resume it and recover what it missed: {}\n",
                    f.failures, f.url, f.environment, f.last_error, f.link
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_domain::Environment;

    fn recorded(failures: i32, suspended: bool, suspended_now: bool) -> FailureRecorded {
        FailureRecorded {
            next_attempt_at: None,
            suspended_now,
            suspended,
            consecutive_failures: failures,
            merchant_id: Uuid::nil(),
            environment: Environment::Live,
            url: "https://hooks.example.com/c".into(),
        }
    }

    #[test]
    fn a_streak_owes_one_warning_then_one_suspension_notice() {
        let notices = FailureNotices::new(Outbox::default(), String::new(), 10, 20);
        let owed: Vec<(i32, Notice)> = (1..=25)
            .filter_map(|n| {
                let suspended = n >= 20;
                notices
                    .notice_of(&recorded(n, suspended, n == 20))
                    .map(|notice| (n, notice))
            })
            .collect();
        assert_eq!(owed, [(10, Notice::Failing), (20, Notice::Suspended)]);
    }

    #[test]
    fn a_warning_at_or_past_the_suspension_is_never_owed() {
        let notices = FailureNotices::new(Outbox::default(), String::new(), 20, 20);
        assert_eq!(notices.notice_of(&recorded(19, false, false)), None);
        assert_eq!(
            notices.notice_of(&recorded(20, true, true)),
            Some(Notice::Suspended)
        );
    }

    #[test]
    fn the_texts_name_the_endpoint_the_threshold_and_the_page() {
        let facts = Facts {
            merchant: "Shop",
            url: "https://hooks.example.com/c",
            environment: "live",
            failures: 10,
            suspend_after: 20,
            last_error: "connection refused",
            link: "https://courier.example/console/webhooks/1",
        };
        let (subject, body) = Notice::Failing.text(&facts);
        assert_eq!(
            subject,
            "Shop: webhook endpoint failing (https://hooks.example.com/c)"
        );
        for part in [
            "The last 10 deliveries",
            "After 20 failures",
            "connection refused",
            facts.link,
        ] {
            assert!(body.contains(part), "{part}: {body}");
        }
        let (subject, body) = Notice::Suspended.text(&facts);
        assert!(subject.contains("suspended"));
        assert!(body.contains("resume it and recover"));
    }
}
