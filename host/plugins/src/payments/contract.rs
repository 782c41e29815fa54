//! One version of the payments contract, as the host calls it: each version's bindings
//! (`current`, `v2_0`) implement [`Contract`], reading their answers into the host's types.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use wasmtime::Store;

use super::types::{
    AdapterInfo, AttachRefusal, AttachedCard, CaptureRequest, CardForm, CardFormRequest,
    EventRefusal, HoldRequest, LookupFailure, Outcome, PaymentPage, PaymentState, ProviderEvent,
    RefundRequest, VoidRequest,
};
use crate::PluginError;
use crate::calls::CallStart;
use crate::engine::{CallState, Runtime, fuel_used};
use crate::outbound::{AdapterHost, CallLog};

/// What `describe` declares, before the host checks it.
pub(crate) type Described = Result<AdapterInfo, String>;

#[async_trait::async_trait]
pub(crate) trait Contract: Send + Sync {
    async fn describe(&self, call: &Caller) -> Result<Described, PluginError>;
    async fn setup_card_form(
        &self,
        call: &Caller,
        request: &CardFormRequest,
    ) -> Result<Result<CardForm, String>, PluginError>;
    async fn attach_card(
        &self,
        call: &Caller,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Result<AttachedCard, AttachRefusal>, PluginError>;
    async fn authorise(&self, call: &Caller, request: &HoldRequest)
    -> Result<Outcome, PluginError>;
    async fn capture(
        &self,
        call: &Caller,
        request: &CaptureRequest,
    ) -> Result<Outcome, PluginError>;
    async fn void(&self, call: &Caller, request: &VoidRequest) -> Result<Outcome, PluginError>;
    async fn refund(&self, call: &Caller, request: &RefundRequest) -> Result<Outcome, PluginError>;
    async fn retrieve(
        &self,
        call: &Caller,
        reference: &str,
    ) -> Result<Result<PaymentState, LookupFailure>, PluginError>;
    async fn list_payments(
        &self,
        call: &Caller,
        since: i64,
        after: Option<&str>,
    ) -> Result<Result<PaymentPage, String>, PluginError>;
    async fn verify_event(
        &self,
        call: &Caller,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Result<Vec<ProviderEvent>, EventRefusal>, PluginError>;
}

/// One call: a fresh instance in a fresh store under the adapter's limits, and what it logged.
pub(crate) struct Caller {
    pub runtime: Arc<Runtime>,
    pub host: Option<Arc<AdapterHost>>,
    pub log: Mutex<CallLog>,
    pub start: CallStart,
    /// The most memory the call's instance had, once it has finished.
    pub memory_peak: AtomicUsize,
    /// The fuel it burnt, once it has finished.
    pub fuel: AtomicU64,
}

impl Caller {
    pub fn new(runtime: Arc<Runtime>, host: Option<Arc<AdapterHost>>) -> Self {
        Caller {
            runtime,
            host,
            log: Mutex::default(),
            start: CallStart::now(),
            memory_peak: AtomicUsize::new(0),
            fuel: AtomicU64::new(0),
        }
    }

    /// The call's store, under every limit; give it back with [`finish`](Self::finish).
    pub fn store(&self) -> Store<CallState> {
        self.runtime
            .store(self.runtime.limits.adapter_deadline, self.host.clone())
    }

    /// Keeps the lines logged, whether or not the call succeeded, and reads a failure.
    pub fn finish<R>(
        &self,
        mut store: Store<CallState>,
        result: wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        *self
            .log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            std::mem::take(&mut store.data_mut().log);
        self.memory_peak
            .store(store.data().memory_peak(), Ordering::Relaxed);
        self.fuel.store(fuel_used(&store), Ordering::Relaxed);
        let deadline = self.runtime.limits.adapter_deadline;
        result.map_err(|e| self.runtime.classify(&store, deadline, e))
    }

    /// What the call logged.
    pub fn take_log(&self) -> CallLog {
        std::mem::take(
            &mut *self
                .log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// Instantiates a version's component in the call's store and calls one of its exports,
/// written once for every version: `$pre` is the version's pre-instantiated component.
macro_rules! call_export {
    ($pre:expr, $caller:expr, $export:ident ( $($arg:expr),* )) => {{
        let caller = $caller;
        let mut store = caller.store();
        let result = async {
            let instance = $pre.instantiate_async(&mut store).await?;
            instance
                .courier_payments_adapter()
                .$export(&mut store $(, $arg)*)
                .await
        }
        .await;
        caller.finish(store, result)
    }};
}
pub(super) use call_export;
