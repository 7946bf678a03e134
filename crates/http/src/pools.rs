//! The three concurrency pools (`docs/node-http.md` §4) and the short, bounded wait for a slot.
//!
//! A request first takes an *ingress* slot to read and parse its body, gives it back, and then
//! takes a slot from the pool its message class needs: *tool* for `tools/call`, *control* for
//! everything else. Tool calls can therefore fill their pool without touching the slots a ping
//! or a `notifications/cancelled` needs. A slot that is not free within `slot_wait` becomes
//! `503 server busy`: the client retries instead of piling up behind a stuck tool.

use std::sync::Arc;
use std::time::Duration;

use clawmcp_mcp::MessageClass;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::gate::Refusal;
use crate::limits::Limits;

pub(crate) struct Pools {
    ingress: Arc<Semaphore>,
    tool: Arc<Semaphore>,
    control: Arc<Semaphore>,
    /// Declared file envelopes (`X-OpenClaw-File-Command`), held from the body read to the answer.
    file_envelope: Arc<Semaphore>,
    wait: Duration,
}

impl Pools {
    pub(crate) fn new(limits: &Limits) -> Self {
        Pools {
            ingress: Arc::new(Semaphore::new(limits.ingress_readers)),
            tool: Arc::new(Semaphore::new(limits.tool_slots)),
            control: Arc::new(Semaphore::new(limits.control_slots)),
            file_envelope: Arc::new(Semaphore::new(limits.file_envelopes)),
            wait: limits.slot_wait,
        }
    }

    /// A slot for reading and parsing one body.
    pub(crate) async fn ingress(&self) -> Result<OwnedSemaphorePermit, Refusal> {
        self.acquire(&self.ingress).await
    }

    /// A place for one declared file envelope, body and result.
    pub(crate) async fn file_envelope(&self) -> Result<OwnedSemaphorePermit, Refusal> {
        self.acquire(&self.file_envelope).await
    }

    /// A slot for handling one message of `class`.
    pub(crate) async fn handler(&self, class: MessageClass) -> Result<OwnedSemaphorePermit, Refusal> {
        match class {
            MessageClass::Tool => self.acquire(&self.tool).await,
            MessageClass::Control => self.acquire(&self.control).await,
        }
    }

    async fn acquire(&self, pool: &Arc<Semaphore>) -> Result<OwnedSemaphorePermit, Refusal> {
        // A free slot is the common case: taken without arming the wait's timer.
        if let Ok(permit) = pool.clone().try_acquire_owned() {
            return Ok(permit);
        }
        match tokio::time::timeout(self.wait, pool.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The pools are never closed; a closed one would mean "no capacity" all the same.
            Ok(Err(_)) | Err(_) => Err(Refusal::Busy),
        }
    }
}
