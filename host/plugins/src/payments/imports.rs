//! What every version's imports do: outbound HTTP under the adapter's policy (noted when
//! watched), and its configuration.

use crate::engine::CallState;
use crate::outbound::{HttpFailure, HttpRequest, HttpResponse};

impl CallState {
    /// Sends an adapter's request under its policy; none while `describe` or `verify-event`
    /// runs.
    pub(crate) fn send_outbound(
        &mut self,
        request: HttpRequest,
    ) -> Result<HttpResponse, HttpFailure> {
        let Some(http) = self.adapter.as_ref().and_then(|a| a.http.clone()) else {
            return Err(HttpFailure::Forbidden("no network for this call".into()));
        };
        match self.adapter.as_ref().filter(|a| a.exchanges.is_some()) {
            // Copied for the exchange's record only when watched; the service never watches.
            Some(host) => {
                let started = std::time::Instant::now();
                let kept = request.clone();
                let answer = http.send(request, self.deadline);
                host.note(&kept, &answer, started.elapsed());
                answer
            }
            None => http.send(request, self.deadline),
        }
    }

    /// The operator's setting `key`, if set.
    pub(crate) fn configured(&self, key: &str) -> Option<String> {
        self.adapter.as_ref()?.config.get(key).cloned()
    }
}
