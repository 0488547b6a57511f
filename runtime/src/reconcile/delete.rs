//! The deletion branch: orphan, or delete in the cloud and wait until it
//! is gone, then remove the finalizer.

use super::*;

impl<'a, K: ManagedKind<C>, C: Connect> Run<'a, K, C> {
    /// The deletion branch: orphan, or delete and wait until gone, then drop
    /// the finalizer.
    pub(super) async fn delete(&mut self, orphan: bool) -> Result<Next, ReconcileError> {
        self.set(Condition::deleting());
        let external_name = self.annotation(EXTERNAL_NAME_ANNOTATION);
        let (session, observed) = match (orphan, &external_name) {
            (true, _) | (false, None) => (None, Observed::Missing),
            (false, Some(name)) => {
                let session = self.connect().await?;
                let seen = self.observe(&session, Some(name)).await?;
                (Some(session), observed_of::<K, C>(seen.as_ref()))
            }
        };
        match (delete_step(orphan, &observed), session) {
            (DeleteStep::Orphan | DeleteStep::Finished, _) => {
                info!(orphan, "external resource released; removing finalizer");
                self.remove_finalizer().await?;
                Ok(Next::Change)
            }
            (DeleteStep::AwaitGone, _) => Ok(Next::After(self.ctx.settings.pending_poll_interval)),
            (DeleteStep::Delete, Some(session)) => {
                let name = external_name.unwrap_or_default();
                info!("deleting external resource");
                let result = self
                    .ctx
                    .mutate(
                        &self.kind,
                        "delete",
                        &session.pacing,
                        self.mr.meta(),
                        || self.mr.for_provider().delete(&session, &name),
                    )
                    .await
                    .map_err(ReconcileError::Deferred)?;
                self.change_log(OperationType::Delete, Some(&name), &result);
                result.map_err(ReconcileError::Delete)?;
                self.event(
                    EventType::Normal,
                    "DeletedExternalResource",
                    "Successfully requested deletion of external resource",
                )
                .await;
                self.set(Condition::reconcile_success());
                Ok(Next::After(self.ctx.settings.pending_poll_interval))
            }
            (DeleteStep::Delete, None) => {
                unreachable!("a delete step follows an observation, which connected")
            }
        }
    }

    pub(super) async fn remove_finalizer(&mut self) -> Result<(), ReconcileError> {
        self.gone = true;
        if !self
            .mr
            .finalizers()
            .iter()
            .any(|f| f == MANAGED_RESOURCE_FINALIZER)
        {
            return Ok(());
        }
        let finalizers: Vec<String> = self
            .mr
            .finalizers()
            .iter()
            .filter(|f| *f != MANAGED_RESOURCE_FINALIZER)
            .cloned()
            .collect();
        self.patch_spec(
            json!({ "metadata": { "finalizers": finalizers } }),
            "update finalizers",
            "metadata",
        )
        .await?;
        // Nothing of ours is left to echo.
        if let Some(uid) = self.mr.uid() {
            self.ctx.own_writes.forget(&uid);
        }
        Ok(())
    }
}
