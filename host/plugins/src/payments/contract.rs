//! One version of the payments contract, as the host calls it: each version's bindings
//! (`current`, `v2_0`) implement [`Contract`], reading their answers into the host's types.

use std::cell::RefCell;
use std::sync::Arc;

use wasmtime::Store;

use super::types::{
    AdapterInfo, AttachRefusal, AttachedCard, CaptureRequest, CardForm, CardFormRequest,
    EventRefusal, HoldRequest, LookupFailure, Outcome, PaymentPage, PaymentState, ProviderEvent,
    RefundRequest, VoidRequest,
};
use crate::PluginError;
use crate::engine::{CallState, Runtime};
use crate::outbound::{AdapterHost, CallLog};

/// What `describe` declares, before the host checks it.
pub(crate) type Described = Result<AdapterInfo, String>;

pub(crate) trait Contract: Send + Sync {
    fn describe(&self, call: &Caller) -> Result<Described, PluginError>;
    fn setup_card_form(
        &self,
        call: &Caller,
        request: &CardFormRequest,
    ) -> Result<Result<CardForm, String>, PluginError>;
    fn attach_card(
        &self,
        call: &Caller,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Result<AttachedCard, AttachRefusal>, PluginError>;
    fn authorise(&self, call: &Caller, request: &HoldRequest) -> Result<Outcome, PluginError>;
    fn capture(&self, call: &Caller, request: &CaptureRequest) -> Result<Outcome, PluginError>;
    fn void(&self, call: &Caller, request: &VoidRequest) -> Result<Outcome, PluginError>;
    fn refund(&self, call: &Caller, request: &RefundRequest) -> Result<Outcome, PluginError>;
    fn retrieve(
        &self,
        call: &Caller,
        reference: &str,
    ) -> Result<Result<PaymentState, LookupFailure>, PluginError>;
    fn list_payments(
        &self,
        call: &Caller,
        since: i64,
        after: Option<&str>,
    ) -> Result<Result<PaymentPage, String>, PluginError>;
    fn verify_event(
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
    pub log: RefCell<CallLog>,
}

impl Caller {
    pub fn new(runtime: Arc<Runtime>, host: Option<Arc<AdapterHost>>) -> Self {
        Caller {
            runtime,
            host,
            log: RefCell::default(),
        }
    }

    /// Instantiates, runs `f`, and keeps the lines logged, whether or not the call succeeded.
    pub fn run<I, R>(
        &self,
        instantiate: impl FnOnce(&mut Store<CallState>) -> wasmtime::Result<I>,
        f: impl FnOnce(&I, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let deadline = self.runtime.limits.adapter_deadline;
        let mut store = self.runtime.store(deadline, self.host.clone());
        let result = instantiate(&mut store).and_then(|instance| f(&instance, &mut store));
        *self.log.borrow_mut() = std::mem::take(&mut store.data_mut().log);
        result.map_err(|e| self.runtime.classify(&store, deadline, e))
    }
}
