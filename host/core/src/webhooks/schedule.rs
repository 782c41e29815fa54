//! Which claimed delivery is sent next: the process's send slots are shared fairly, first
//! between merchants, then between each merchant's endpoints, so neither one merchant's backlog
//! nor one slow endpoint can take the slots others need.
//!
//! Slots go round-robin: each free slot goes to the next merchant in turn that has a delivery
//! waiting and is below its cap, and within that merchant to its next endpoint in turn that is
//! below its own cap. A merchant that arrives while others hold queued work waits at most one
//! turn of the merchants ahead of it; while fewer merchants than `total / per_merchant` are
//! saturated, it waits for none.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use uuid::Uuid;

/// Deliveries in flight at once.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// In this process, all merchants together.
    pub total: usize,
    /// For one merchant (all its endpoints, both environments).
    pub per_merchant: usize,
    /// For one endpoint.
    pub per_endpoint: usize,
    /// Claimed deliveries one endpoint may have queued in memory; past it, claims are refused.
    pub backlog_per_endpoint: usize,
}

struct EndpointQueue<J> {
    merchant: Uuid,
    in_flight: usize,
    waiting: VecDeque<J>,
    /// In its merchant's `ready` list.
    listed: bool,
    /// Refused a claim: the poller is woken once the backlog has drained to half.
    overflowed: bool,
    /// When one of its deliveries last started or finished.
    moved_at: Instant,
}

#[derive(Default)]
struct MerchantQueue {
    in_flight: usize,
    /// Endpoints that may have a delivery to start, in turn.
    ready: VecDeque<Uuid>,
    /// In the schedule's `ready` list.
    listed: bool,
}

/// The fair queue of claimed deliveries `J` waiting for a send slot.
pub struct Schedule<J> {
    limits: Limits,
    in_flight: usize,
    endpoints: HashMap<Uuid, EndpointQueue<J>>,
    merchants: HashMap<Uuid, MerchantQueue>,
    /// Merchants that may have a delivery to start, in turn.
    ready: VecDeque<Uuid>,
    /// An overflowed endpoint drained: the poller may claim again.
    wake: bool,
}

impl<J> Schedule<J> {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            in_flight: 0,
            endpoints: HashMap::new(),
            merchants: HashMap::new(),
            ready: VecDeque::new(),
            wake: false,
        }
    }

    /// Queues `job` for `endpoint` of `merchant`; gives it back when the endpoint's backlog is
    /// full.
    pub fn offer(&mut self, merchant: Uuid, endpoint: Uuid, job: J) -> Result<(), J> {
        let backlog = self.limits.backlog_per_endpoint;
        let queue = self
            .endpoints
            .entry(endpoint)
            .or_insert_with(|| EndpointQueue {
                merchant,
                in_flight: 0,
                waiting: VecDeque::new(),
                listed: false,
                overflowed: false,
                moved_at: Instant::now(),
            });
        if queue.waiting.len() >= backlog {
            queue.overflowed = true;
            return Err(job);
        }
        queue.waiting.push_back(job);
        self.list(endpoint);
        Ok(())
    }

    /// The next delivery to start, now counted in flight; None when no slot is free or
    /// nothing may start.
    pub fn next(&mut self) -> Option<(Uuid, J)> {
        if self.in_flight >= self.limits.total {
            return None;
        }
        while let Some(merchant_id) = self.ready.pop_front() {
            let Some(merchant) = self.merchants.get_mut(&merchant_id) else {
                continue;
            };
            merchant.listed = false;
            if merchant.in_flight >= self.limits.per_merchant {
                // Listed again when one of its deliveries finishes.
                continue;
            }
            while let Some(endpoint_id) = merchant.ready.pop_front() {
                let Some(endpoint) = self.endpoints.get_mut(&endpoint_id) else {
                    continue;
                };
                endpoint.listed = false;
                if endpoint.in_flight >= self.limits.per_endpoint {
                    continue;
                }
                let Some(job) = endpoint.waiting.pop_front() else {
                    continue;
                };
                if endpoint.overflowed
                    && endpoint.waiting.len() <= self.limits.backlog_per_endpoint / 2
                {
                    endpoint.overflowed = false;
                    self.wake = true;
                }
                endpoint.in_flight += 1;
                endpoint.moved_at = Instant::now();
                merchant.in_flight += 1;
                self.in_flight += 1;
                self.list(endpoint_id);
                return Some((endpoint_id, job));
            }
        }
        None
    }

    /// A delivery of `endpoint` started by [`next`](Self::next) has finished.
    pub fn finish(&mut self, endpoint_id: Uuid) {
        let Some(endpoint) = self.endpoints.get_mut(&endpoint_id) else {
            return;
        };
        let merchant_id = endpoint.merchant;
        endpoint.in_flight = endpoint.in_flight.saturating_sub(1);
        endpoint.moved_at = Instant::now();
        self.in_flight = self.in_flight.saturating_sub(1);
        if let Some(merchant) = self.merchants.get_mut(&merchant_id) {
            merchant.in_flight = merchant.in_flight.saturating_sub(1);
        }
        self.list(endpoint_id);
        self.forget_if_idle(endpoint_id);
    }

    /// Whether an overflowed endpoint has drained since the last call.
    pub fn take_wake(&mut self) -> bool {
        std::mem::take(&mut self.wake)
    }

    /// Endpoints whose backlog is full: the poller leaves their deliveries alone for now.
    pub fn saturated(&self) -> Vec<Uuid> {
        self.endpoints
            .iter()
            .filter(|(_, e)| e.waiting.len() >= self.limits.backlog_per_endpoint)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Deliveries queued for endpoints that started or finished one since `since`: the queue
    /// the send slots are working through. An endpoint whose slots are all held by slow
    /// attempts does not count; its queue waits on its answers, not on the slots.
    pub fn queued_for_moving(&self, since: Instant) -> usize {
        self.endpoints
            .values()
            .filter(|e| e.moved_at >= since)
            .map(|e| e.waiting.len())
            .sum()
    }

    /// Takes every queued delivery out (those in flight stay counted).
    pub fn drain(&mut self) -> Vec<J> {
        let ids: Vec<Uuid> = self.endpoints.keys().copied().collect();
        let mut jobs = Vec::new();
        for id in ids {
            if let Some(endpoint) = self.endpoints.get_mut(&id) {
                jobs.extend(endpoint.waiting.drain(..));
            }
            self.forget_if_idle(id);
        }
        jobs
    }

    /// Deliveries queued, not yet started.
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.endpoints.values().map(|e| e.waiting.len()).sum()
    }

    /// Puts the endpoint in its merchant's turn, and the merchant in the schedule's, if either
    /// may start something and is not listed yet.
    fn list(&mut self, endpoint_id: Uuid) {
        let Some(endpoint) = self.endpoints.get_mut(&endpoint_id) else {
            return;
        };
        let merchant = self.merchants.entry(endpoint.merchant).or_default();
        if !endpoint.listed
            && !endpoint.waiting.is_empty()
            && endpoint.in_flight < self.limits.per_endpoint
        {
            endpoint.listed = true;
            merchant.ready.push_back(endpoint_id);
        }
        if !merchant.listed
            && !merchant.ready.is_empty()
            && merchant.in_flight < self.limits.per_merchant
        {
            merchant.listed = true;
            self.ready.push_back(endpoint.merchant);
        }
    }

    fn forget_if_idle(&mut self, endpoint_id: Uuid) {
        let Some(endpoint) = self.endpoints.get(&endpoint_id) else {
            return;
        };
        if endpoint.in_flight > 0 || !endpoint.waiting.is_empty() {
            return;
        }
        let merchant_id = endpoint.merchant;
        self.endpoints.remove(&endpoint_id);
        if let Some(merchant) = self.merchants.get_mut(&merchant_id) {
            merchant.ready.retain(|id| *id != endpoint_id);
            if merchant.in_flight == 0 && merchant.ready.is_empty() {
                let listed = merchant.listed;
                self.merchants.remove(&merchant_id);
                if listed {
                    self.ready.retain(|id| *id != merchant_id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_merchant: usize, per_endpoint: usize) -> Limits {
        Limits {
            total,
            per_merchant,
            per_endpoint,
            backlog_per_endpoint: 100,
        }
    }

    fn started(schedule: &mut Schedule<u32>) -> Vec<(Uuid, u32)> {
        std::iter::from_fn(|| schedule.next()).collect()
    }

    #[test]
    fn one_merchant_alone_may_use_its_whole_share() {
        let mut schedule = Schedule::new(limits(8, 4, 2));
        let merchant = Uuid::new_v4();
        let endpoints = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
        for (n, endpoint) in endpoints.iter().enumerate() {
            for job in 0..5 {
                schedule
                    .offer(merchant, *endpoint, (n * 10 + job) as u32)
                    .unwrap();
            }
        }
        let first = started(&mut schedule);
        // Capped by the merchant's share, spread over its endpoints in turn.
        assert_eq!(first.len(), 4);
        let distinct: std::collections::HashSet<_> = first.iter().map(|(e, _)| *e).collect();
        assert_eq!(distinct.len(), 3);
        assert_eq!(schedule.queued(), 11);
    }

    #[test]
    fn only_the_queues_of_endpoints_that_moved_count_as_being_worked_through() {
        let mut schedule = Schedule::new(limits(8, 8, 2));
        let merchant = Uuid::new_v4();
        let (stuck, moving) = (Uuid::new_v4(), Uuid::new_v4());
        for job in 0..5 {
            schedule.offer(merchant, stuck, job).unwrap();
            schedule.offer(merchant, moving, 10 + job).unwrap();
        }
        assert_eq!(started(&mut schedule).len(), 4);
        std::thread::sleep(std::time::Duration::from_millis(1));
        let before = Instant::now();
        // Only `moving` answers and starts its next since `before`.
        schedule.finish(moving);
        assert_eq!(schedule.next().map(|(e, _)| e), Some(moving));
        assert_eq!(schedule.queued_for_moving(before), 2);
        let later = Instant::now() + std::time::Duration::from_millis(1);
        assert_eq!(schedule.queued_for_moving(later), 0);
    }

    #[test]
    fn a_merchant_with_a_backlog_leaves_room_for_another() {
        let mut schedule = Schedule::new(limits(8, 4, 4));
        let (busy, quiet) = (Uuid::new_v4(), Uuid::new_v4());
        let busy_endpoints: Vec<Uuid> = (0..16).map(|_| Uuid::new_v4()).collect();
        for endpoint in &busy_endpoints {
            for job in 0..50 {
                schedule.offer(busy, *endpoint, job).unwrap();
            }
        }
        assert_eq!(started(&mut schedule).len(), 4);
        let quiet_endpoint = Uuid::new_v4();
        schedule.offer(quiet, quiet_endpoint, 999).unwrap();
        assert_eq!(schedule.next(), Some((quiet_endpoint, 999)));
    }

    #[test]
    fn freed_slots_go_round_robin_between_waiting_merchants() {
        let mut schedule = Schedule::new(limits(2, 2, 2));
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let (ea, eb) = (Uuid::new_v4(), Uuid::new_v4());
        for job in 0..10 {
            schedule.offer(a, ea, job).unwrap();
        }
        let held = started(&mut schedule);
        assert_eq!(held.len(), 2);
        for job in 100..110 {
            schedule.offer(b, eb, job).unwrap();
        }
        // Every slot that frees alternates between the two merchants.
        let mut order = Vec::new();
        let mut in_flight: VecDeque<Uuid> = held.iter().map(|(e, _)| *e).collect();
        for _ in 0..8 {
            let endpoint = in_flight.pop_front().unwrap();
            schedule.finish(endpoint);
            let (endpoint, _) = schedule.next().unwrap();
            order.push(endpoint);
            in_flight.push_back(endpoint);
        }
        assert_eq!(order, [eb, ea, eb, ea, eb, ea, eb, ea]);
    }

    #[test]
    fn a_full_endpoint_refuses_claims_then_asks_for_more_once_drained() {
        let mut schedule = Schedule::new(Limits {
            total: 4,
            per_merchant: 4,
            per_endpoint: 1,
            backlog_per_endpoint: 4,
        });
        let (merchant, endpoint) = (Uuid::new_v4(), Uuid::new_v4());
        for job in 0..4 {
            schedule.offer(merchant, endpoint, job).unwrap();
        }
        assert_eq!(schedule.offer(merchant, endpoint, 4), Err(4));
        assert_eq!(schedule.saturated(), [endpoint]);
        assert_eq!(schedule.next(), Some((endpoint, 0)));
        assert!(!schedule.take_wake());
        schedule.finish(endpoint);
        assert_eq!(schedule.next(), Some((endpoint, 1)));
        assert!(schedule.take_wake());
        assert!(schedule.saturated().is_empty());
    }

    #[test]
    fn idle_endpoints_and_merchants_are_forgotten_and_drain_empties_the_queues() {
        let mut schedule = Schedule::new(limits(4, 4, 1));
        let (merchant, endpoint) = (Uuid::new_v4(), Uuid::new_v4());
        schedule.offer(merchant, endpoint, 1).unwrap();
        schedule.offer(merchant, endpoint, 2).unwrap();
        schedule.offer(merchant, endpoint, 3).unwrap();
        assert_eq!(schedule.next(), Some((endpoint, 1)));
        assert_eq!(schedule.drain(), [2, 3]);
        assert!(schedule.next().is_none());
        schedule.finish(endpoint);
        assert!(schedule.endpoints.is_empty());
        assert!(schedule.merchants.is_empty());
        assert!(schedule.ready.is_empty());
    }
}
