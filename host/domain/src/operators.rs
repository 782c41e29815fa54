//! The service's own staff: operators, who sign in to the operator console with an e-mail
//! address, a password and a second factor, each with a role that says what they may do there.

crate::names::named_enum! {
    /// What an operator may do in the operator console.
    pub enum OperatorRole {
        /// Everything: price books, plugins, payments, and inviting operators.
        Admin,
        /// Moves jobs and couriers; reads the rest.
        Operations,
        /// Refunds charges; reads the rest.
        Finance,
        /// Reads everything; changes nothing.
        Viewer,
    }
}

/// Something an operator console page or form does, which a role may or may not do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpsPermission {
    /// Every page's reading.
    Read,
    /// Upload and activate price books.
    ManagePriceBooks,
    /// Refund a charge.
    Refund,
    /// Move jobs and couriers by hand.
    MoveJobs,
    /// Invite operators.
    ManageOperators,
}

impl OperatorRole {
    pub const ALL: [OperatorRole; 4] = [
        OperatorRole::Admin,
        OperatorRole::Operations,
        OperatorRole::Finance,
        OperatorRole::Viewer,
    ];

    /// Whether this role may do `permission`.
    pub fn may(self, permission: OpsPermission) -> bool {
        use OpsPermission::*;
        match self {
            OperatorRole::Admin => true,
            OperatorRole::Operations => matches!(permission, Read | MoveJobs),
            OperatorRole::Finance => matches!(permission, Read | Refund),
            OperatorRole::Viewer => permission == Read,
        }
    }

    /// The role's name as pages write it.
    pub fn label(self) -> &'static str {
        match self {
            OperatorRole::Admin => "Admin",
            OperatorRole::Operations => "Operations",
            OperatorRole::Finance => "Finance",
            OperatorRole::Viewer => "Viewer",
        }
    }

    /// What the role may do, in a line.
    pub fn summary(self) -> &'static str {
        match self {
            OperatorRole::Admin => "price books, plugins, payments and operators",
            OperatorRole::Operations => "moves jobs and couriers; reads the rest",
            OperatorRole::Finance => "refunds charges; reads the rest",
            OperatorRole::Viewer => "reads everything; changes nothing",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_may_what_its_summary_says() {
        use OpsPermission::*;
        let allowed = |role: OperatorRole| -> Vec<OpsPermission> {
            [Read, ManagePriceBooks, Refund, MoveJobs, ManageOperators]
                .into_iter()
                .filter(|p| role.may(*p))
                .collect()
        };
        assert_eq!(allowed(OperatorRole::Admin).len(), 5);
        assert_eq!(allowed(OperatorRole::Operations), [Read, MoveJobs]);
        assert_eq!(allowed(OperatorRole::Finance), [Read, Refund]);
        assert_eq!(allowed(OperatorRole::Viewer), [Read]);
        assert_eq!(OperatorRole::parse("finance"), Some(OperatorRole::Finance));
        assert_eq!(OperatorRole::parse("owner"), None);
    }
}
