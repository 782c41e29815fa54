//! The operator audit trail's vocabulary: what operators do, to which kinds of thing.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

/// The kinds of thing operators act on: `AuditRecord::target_type`.
pub const TARGET_TYPES: [&str; 9] = [
    "merchant",
    "api_key",
    "person",
    "invitation",
    "price_book",
    "charge",
    "job",
    "courier",
    "client_address",
];

crate::named_values!(
    /// What an operator did, as the audit trail names it.
    pub AuditActionName: "What an operator did" = AuditAction::ALL.map(AuditAction::as_str)
);
crate::named_values!(
    /// The kinds of thing operators act on.
    pub AuditTargetType: "The kind of thing an operator acted on" = TARGET_TYPES
);

/// What an operator did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuditAction {
    MerchantCreated,
    KeyCreated,
    KeyRevoked,
    SettingsChanged,
    PriceBookUploaded,
    PriceBookActivated,
    PriceBookRolledBack,
    ChargeRefunded,
    JobStatusSet,
    JobCourierReassigned,
    CourierCreated,
    CourierSuspended,
    CourierReinstated,
    /// A request to the operator API without a valid token (target: its client address).
    SignInFailed,
    /// Someone was invited to a merchant's team (target: the invitation).
    MemberInvited,
    InvitationWithdrawn,
    /// An invitation was used (target: the person who joined).
    MemberJoined,
    MemberRoleChanged,
    MemberRemoved,
    /// An owner required, or stopped requiring, a second factor of the team.
    SecondFactorRule,
    /// Someone was invited to be an operator (target: the invitation).
    OperatorInvited,
    /// An operator invitation was used (target: the person who joined).
    OperatorJoined,
    /// An operator gave a courier a one-time sign-in code for the app (target: the courier).
    CourierSignInCodeIssued,
}

impl AuditAction {
    pub const ALL: [AuditAction; 23] = [
        AuditAction::MerchantCreated,
        AuditAction::KeyCreated,
        AuditAction::KeyRevoked,
        AuditAction::SettingsChanged,
        AuditAction::PriceBookUploaded,
        AuditAction::PriceBookActivated,
        AuditAction::PriceBookRolledBack,
        AuditAction::ChargeRefunded,
        AuditAction::JobStatusSet,
        AuditAction::JobCourierReassigned,
        AuditAction::CourierCreated,
        AuditAction::CourierSuspended,
        AuditAction::CourierReinstated,
        AuditAction::SignInFailed,
        AuditAction::MemberInvited,
        AuditAction::InvitationWithdrawn,
        AuditAction::MemberJoined,
        AuditAction::MemberRoleChanged,
        AuditAction::MemberRemoved,
        AuditAction::SecondFactorRule,
        AuditAction::OperatorInvited,
        AuditAction::OperatorJoined,
        AuditAction::CourierSignInCodeIssued,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::MerchantCreated => "merchant.created",
            AuditAction::KeyCreated => "key.created",
            AuditAction::KeyRevoked => "key.revoked",
            AuditAction::SettingsChanged => "merchant.settings_changed",
            AuditAction::PriceBookUploaded => "price_book.uploaded",
            AuditAction::PriceBookActivated => "price_book.activated",
            AuditAction::PriceBookRolledBack => "price_book.rolled_back",
            AuditAction::ChargeRefunded => "charge.refunded",
            AuditAction::JobStatusSet => "job.status_set",
            AuditAction::JobCourierReassigned => "job.courier_reassigned",
            AuditAction::CourierCreated => "courier.created",
            AuditAction::CourierSuspended => "courier.suspended",
            AuditAction::CourierReinstated => "courier.reinstated",
            AuditAction::SignInFailed => "operator.sign_in_failed",
            AuditAction::MemberInvited => "team.member_invited",
            AuditAction::InvitationWithdrawn => "team.invitation_withdrawn",
            AuditAction::MemberJoined => "team.member_joined",
            AuditAction::MemberRoleChanged => "team.role_changed",
            AuditAction::MemberRemoved => "team.member_removed",
            AuditAction::SecondFactorRule => "team.second_factor_rule",
            AuditAction::OperatorInvited => "operator.invited",
            AuditAction::OperatorJoined => "operator.joined",
            AuditAction::CourierSignInCodeIssued => "courier.sign_in_code_issued",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

/// One operator action. `target_type` names the kind of thing acted on (`merchant`,
/// `api_key`, `person`, `invitation`, `price_book`, `charge`, `job`, `courier`) and
/// `target_id` which one.
#[derive(Clone, Debug)]
pub struct AuditRecord<'a> {
    pub operator: &'a str,
    pub action: AuditAction,
    pub target_type: &'static str,
    pub target_id: String,
    pub merchant_id: Option<Uuid>,
    /// Never secrets: key secrets, card data and tokens stay out of the trail.
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub occurred_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_names_round_trip() {
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::parse(action.as_str()), Some(action));
        }
        assert_eq!(AuditAction::parse("key.stolen"), None);
    }
}
