//! The simulator's plan: the scenarios a merchant may choose, the stages a simulated delivery
//! goes through, which step comes next and how long (in simulated seconds) it waits. Pure.

crate::names::named_enum! {
    /// What happens to a test job, chosen per job (docs/sandbox.md).
    #[derive(Default)]
    #[schema(as = SandboxScenario, rename_all = "snake_case")]
    pub enum Scenario {
        /// Assigned, collected, driven to the drop-off and delivered.
        #[default]
        HappyPath,
        /// Nobody takes the job: it fails at the dispatch deadline.
        NoCourier,
        /// On the way to the pickup the job is handed to a second courier, who completes it.
        CourierReassigned,
        /// Nobody takes it at the door: it is driven back and returned.
        Returned,
        /// Operations call the job off while the courier is on the way to the pickup.
        CancelledByOperations,
        /// Nothing happens until `POST /v1/sandbox/jobs/{id}/advance`, which takes the happy
        /// path's next step.
        Manual,
    }
}

impl Scenario {
    pub const ALL: [Scenario; 6] = [
        Scenario::HappyPath,
        Scenario::NoCourier,
        Scenario::CourierReassigned,
        Scenario::Returned,
        Scenario::CancelledByOperations,
        Scenario::Manual,
    ];

    /// Whether steps happen on their own, when due.
    pub fn runs_by_itself(self) -> bool {
        self != Scenario::Manual
    }
}

crate::names::named_enum! {
    /// Where a simulated delivery is.
    #[schema(as = SandboxStage, rename_all = "snake_case")]
    pub enum Stage {
        /// Waiting for the job's search, or for a courier.
        Searching,
        /// A courier is driving to the pickup.
        ToPickup,
        /// At the pickup, loading.
        AtPickup,
        /// Collected, driving to the drop-off.
        ToDropoff,
        /// At the drop-off door.
        AtDropoff,
        /// Nobody took it: driving back to the pickup.
        Returning,
        /// The job ended, or someone else took it over: nothing more to simulate.
        Done,
    }
}

impl Stage {
    pub const ALL: [Stage; 7] = [
        Stage::Searching,
        Stage::ToPickup,
        Stage::AtPickup,
        Stage::ToDropoff,
        Stage::AtDropoff,
        Stage::Returning,
        Stage::Done,
    ];
}

/// One step of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, utoipa::ToSchema)]
#[schema(as = SandboxStep, rename_all = "snake_case")]
pub enum Step {
    /// A simulated courier takes the job (`job.courier_assigned`) and drives to the pickup.
    Assign,
    /// A second simulated courier takes over (`job.courier_assigned` again).
    Reassign,
    ArriveAtPickup,
    /// `job.picked_up`; the drive to the drop-off begins.
    Collect,
    ArriveAtDropoff,
    /// `job.delivered` with a proof of delivery.
    Deliver,
    /// Nobody answered at the door: the drive back begins.
    DriveBack,
    /// `job.returned`.
    Return,
    /// Operations set the job to `cancelled` (`job.status_changed`).
    CancelByOperations,
    /// `job.failed`: no courier before the deadline.
    Fail,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Assign => "assign",
            Step::Reassign => "reassign",
            Step::ArriveAtPickup => "arrive_at_pickup",
            Step::Collect => "collect",
            Step::ArriveAtDropoff => "arrive_at_dropoff",
            Step::Deliver => "deliver",
            Step::DriveBack => "drive_back",
            Step::Return => "return",
            Step::CancelByOperations => "cancel_by_operations",
            Step::Fail => "fail",
        }
    }

    /// Whether the step moves the job (and so raises an event), rather than only the courier.
    pub fn moves_job(self) -> bool {
        !matches!(
            self,
            Step::ArriveAtPickup | Step::ArriveAtDropoff | Step::DriveBack
        )
    }
}

/// Simulated seconds a courier takes to show up once the search is open.
pub const SEARCH_SECONDS: f64 = 30.0;
/// Simulated seconds spent loading at the pickup.
pub const LOADING_SECONDS: f64 = 60.0;
/// Simulated seconds spent at the drop-off door.
pub const HANDOVER_SECONDS: f64 = 30.0;

/// The step after `stage`, or None once done. The manual scenario follows the happy path.
pub fn next_step(scenario: Scenario, stage: Stage, reassigned: bool) -> Option<Step> {
    Some(match stage {
        Stage::Searching if scenario == Scenario::NoCourier => Step::Fail,
        Stage::Searching => Step::Assign,
        Stage::ToPickup if scenario == Scenario::CourierReassigned && !reassigned => Step::Reassign,
        Stage::ToPickup if scenario == Scenario::CancelledByOperations => Step::CancelByOperations,
        Stage::ToPickup => Step::ArriveAtPickup,
        Stage::AtPickup => Step::Collect,
        Stage::ToDropoff => Step::ArriveAtDropoff,
        Stage::AtDropoff if scenario == Scenario::Returned => Step::DriveBack,
        Stage::AtDropoff => Step::Deliver,
        Stage::Returning => Step::Return,
        Stage::Done => return None,
    })
}

/// Simulated seconds from the start of its stage (for `Searching`, from when the search
/// opened) until `step` is due. `leg_seconds` is the drive of the stage; `deadline_seconds`
/// the dispatch deadline.
pub fn wait_before(step: Step, leg_seconds: f64, deadline_seconds: f64) -> f64 {
    match step {
        Step::Assign => SEARCH_SECONDS,
        Step::Fail => deadline_seconds,
        // Halfway to the pickup.
        Step::Reassign | Step::CancelByOperations => leg_seconds / 2.0,
        Step::ArriveAtPickup | Step::ArriveAtDropoff | Step::Return => leg_seconds,
        Step::Collect => LOADING_SECONDS,
        Step::Deliver | Step::DriveBack => HANDOVER_SECONDS,
    }
}

/// Real time for `simulated_seconds` at `speed` (simulated seconds per real second).
pub fn real_duration(simulated_seconds: f64, speed: f64) -> chrono::Duration {
    let millis = (simulated_seconds.max(0.0) / speed * 1000.0).ceil();
    chrono::Duration::milliseconds(millis.min(i64::MAX as f64 / 2.0) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The steps of a scenario from the start, as the simulator takes them.
    fn walk(scenario: Scenario) -> Vec<Step> {
        let mut stage = Stage::Searching;
        let mut reassigned = false;
        let mut steps = Vec::new();
        while let Some(step) = next_step(scenario, stage, reassigned) {
            steps.push(step);
            stage = match step {
                Step::Assign => Stage::ToPickup,
                Step::Reassign => {
                    reassigned = true;
                    Stage::ToPickup
                }
                Step::ArriveAtPickup => Stage::AtPickup,
                Step::Collect => Stage::ToDropoff,
                Step::ArriveAtDropoff => Stage::AtDropoff,
                Step::DriveBack => Stage::Returning,
                Step::Deliver | Step::Return | Step::CancelByOperations | Step::Fail => Stage::Done,
            };
            assert!(steps.len() < 20, "{scenario:?} never ends");
        }
        steps
    }

    #[test]
    fn each_scenario_reaches_its_ending() {
        use Step::*;
        let happy = vec![Assign, ArriveAtPickup, Collect, ArriveAtDropoff, Deliver];
        assert_eq!(walk(Scenario::HappyPath), happy);
        assert_eq!(walk(Scenario::Manual), happy);
        assert_eq!(walk(Scenario::NoCourier), vec![Fail]);
        assert_eq!(
            walk(Scenario::CourierReassigned),
            vec![
                Assign,
                Reassign,
                ArriveAtPickup,
                Collect,
                ArriveAtDropoff,
                Deliver
            ]
        );
        assert_eq!(
            walk(Scenario::Returned),
            vec![
                Assign,
                ArriveAtPickup,
                Collect,
                ArriveAtDropoff,
                DriveBack,
                Return
            ]
        );
        assert_eq!(
            walk(Scenario::CancelledByOperations),
            vec![Assign, CancelByOperations]
        );
    }

    #[test]
    fn names_round_trip() {
        for scenario in Scenario::ALL {
            assert_eq!(Scenario::parse(scenario.as_str()), Some(scenario));
        }
        for stage in Stage::ALL {
            assert_eq!(Stage::parse(stage.as_str()), Some(stage));
        }
        assert_eq!(Scenario::parse("Happy_Path"), None);
        assert!(!Scenario::Manual.runs_by_itself());
        assert!(Scenario::Returned.runs_by_itself());
    }

    #[test]
    fn waits_follow_the_drive_and_scale_with_speed() {
        assert_eq!(wait_before(Step::ArriveAtDropoff, 600.0, 900.0), 600.0);
        assert_eq!(wait_before(Step::Reassign, 600.0, 900.0), 300.0);
        assert_eq!(wait_before(Step::Fail, 600.0, 900.0), 900.0);
        assert_eq!(wait_before(Step::Assign, 0.0, 900.0), SEARCH_SECONDS);
        assert_eq!(real_duration(600.0, 1.0), chrono::Duration::seconds(600));
        assert_eq!(real_duration(600.0, 60.0), chrono::Duration::seconds(10));
        assert_eq!(
            real_duration(1.0, 1000.0),
            chrono::Duration::milliseconds(1)
        );
        assert!(!Step::DriveBack.moves_job());
        assert!(Step::Reassign.moves_job());
    }
}
