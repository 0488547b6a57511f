//! What a reconcile reports: its conditions, when it comes back (the
//! jittered poll, the pending poll), the status write guarded by the
//! version it read, and Events.

use super::*;

impl<'a, K: ManagedKind<C>, C: Connect> Run<'a, K, C> {
    pub(super) fn set(&mut self, condition: Condition) {
        let generation = self.generation();
        self.status
            .set_condition(condition.with_observed_generation(generation));
    }

    pub(super) fn set_readiness(&mut self, readiness: Readiness) {
        let was_ready = self
            .original
            .condition(TYPE_READY)
            .is_some_and(Condition::is_true);
        let condition = match readiness {
            Readiness::Available => Condition::available(),
            Readiness::Creating => Condition::creating(),
            Readiness::Deleting => Condition::deleting(),
            Readiness::Unavailable => Condition::unavailable(),
        };
        if readiness == Readiness::Available
            && !was_ready
            && let Some(created) = &self.mr.meta().creation_timestamp
        {
            let age = jiff::Timestamp::now().duration_since(created.0);
            self.ctx
                .metrics
                .record_time_to_ready(&self.kind, age.as_secs_f64());
        }
        self.set(condition);
    }

    pub(super) fn requeue_for(&self, readiness: Readiness) -> Next {
        match readiness {
            Readiness::Available => Next::After(self.next_poll()),
            _ => Next::After(self.ctx.settings.pending_poll_interval),
        }
    }

    /// A cloud resource that is missing while the policies forbid creating
    /// it: `Synced=False` with what to check, looked at again on the poll
    /// interval. For an observer that is an expected state, not a failure
    /// (crossplane-runtime v2.4 stopped taking the error backoff for it), so
    /// it is no error in the metrics, and its Warning event is emitted once
    /// when it becomes missing, not on every poll while it stays so.
    pub(super) async fn report_missing(&mut self) {
        self.missing = true;
        let message = ReconcileError::ExternalMissing.to_string();
        let reported = self
            .original
            .condition(TYPE_SYNCED)
            .is_some_and(|c| !c.is_true() && c.message.as_deref() == Some(message.as_str()));
        self.set(Condition::reconcile_error(message.clone()));
        if !reported {
            warn!("external resource missing; policies forbid creating it");
            self.event(EventType::Warning, "ReconcileError", &message)
                .await;
        }
    }

    /// The poll interval of this resource, jittered.
    pub(super) fn next_poll(&self) -> Duration {
        let settings = &self.ctx.settings;
        requests::jittered(
            self.poll_interval,
            settings.poll_jitter,
            settings.min_poll_interval,
            rand::random(),
        )
    }

    /// Applies the status through the status subresource when it changed,
    /// guarded by the resourceVersion this reconcile last saw: a status
    /// computed from a stale copy (two replicas, a lagging cache) must not
    /// overwrite a newer one, or replicas undo each other's conditions and
    /// every undo wakes them all again.
    pub(super) async fn write_status(&mut self) -> Result<(), kube::Error> {
        if self.gone || self.status == self.original {
            return Ok(());
        }
        let body = json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "metadata": { "resourceVersion": self.mr.resource_version() },
            "status": self.status,
        });
        let written = self.ctx.cluster.apply(&self.key(), body, true).await?;
        self.remember_write(
            written
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str),
        );
        self.ctx.metrics.kube_write(&self.kind, "status");
        self.original = self.status.clone();
        Ok(())
    }

    pub(super) async fn event(&self, type_: EventType, reason: &str, message: &str) {
        if self.gone {
            return;
        }
        let regarding = self.mr.object_ref(&());
        match self
            .ctx
            .recorder
            .publish(regarding, type_, reason, message)
            .await
        {
            Ok(()) => self.ctx.metrics.kube_write(&self.kind, "event"),
            Err(error) => warn!(error = %error, "cannot publish event"),
        }
    }
}
