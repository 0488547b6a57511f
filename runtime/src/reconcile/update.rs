//! The update step and what precedes it on a live resource: late
//! initialisation of unset fields, the drift report (`status.drift`,
//! `UpToDate`), and the update call with only the drifted fields.

use super::*;

impl<'a, K: ManagedKind<C>, C: Connect> Run<'a, K, C> {
    /// `forProvider` with its unset fields filled from the observation, or
    /// `None` when there is nothing to fill. The candidate goes through the
    /// kind's own type, which drops what is not a `forProvider` field (ids,
    /// states, timestamps).
    pub(super) fn late_initialized(&self, at_provider: &Value) -> Option<Value> {
        let current = self.spec_json("forProvider");
        let candidate = late_initialize(&current, at_provider);
        if candidate == current {
            // Nothing to fill: the steady state, spared the typed round trip.
            return None;
        }
        let mut object = self.json.clone();
        object["spec"]["forProvider"] = candidate;
        let Ok(typed) = serde_json::from_value::<K>(object) else {
            warn!("late-initialised forProvider does not fit the kind's type; skipping");
            return None;
        };
        let filtered = serde_json::to_value(&typed)
            .ok()
            .and_then(|v| v.pointer("/spec/forProvider").cloned())
            .unwrap_or(Value::Null);
        (filtered != current).then_some(filtered)
    }

    /// Fills unset `forProvider` fields from the observation
    /// ([`Self::late_initialized`]), in a write guarded by the
    /// resourceVersion.
    pub(super) async fn late_initialize(
        &mut self,
        at_provider: &Value,
    ) -> Result<(), ReconcileError> {
        if let Some(filled) = self.late_initialized(at_provider) {
            info!("late-initialising forProvider");
            self.patch_spec(
                json!({ "spec": { "forProvider": filled } }),
                "update spec",
                "spec",
            )
            .await?;
        }
        Ok(())
    }

    /// Writes `status.drift` and `UpToDate` for this observation, with an
    /// event where drift started or ended (not on every poll: only when the
    /// set of drifted fields changes) and the correction time of each field
    /// an update corrected.
    pub(super) async fn report_drift(&mut self, inputs: drift::Inputs<'_>) {
        let now = jiff::Timestamp::now();
        let previous = self.status.drift.take();
        let report = drift::status(
            drift::differences_with(&inputs, lists::for_kind::<K>()),
            previous.as_ref(),
            &Time(now),
        );
        let changes = drift::changes(previous.as_ref(), &report);
        for ended in changes.ended.iter().filter(|e| e.corrected) {
            let took = now.duration_since(ended.since.0).as_secs_f64().max(0.0);
            self.ctx
                .metrics
                .drift_correction
                .get_or_create(&crate::metrics::KindLabels {
                    kind: self.kind.clone(),
                })
                .observe(took);
        }
        for (reason, message) in [changes.detected_event(), changes.cleared_event()]
            .into_iter()
            .flatten()
        {
            info!(reason, message = %message, "drift changed");
            self.event(EventType::Normal, reason, &message).await;
        }
        self.set(drift::condition(&report));
        self.status.drift = Some(report);
    }

    /// Sends `patch`, the drifted fields only, and records the connection
    /// details the cloud now holds.
    pub(super) async fn update(
        &mut self,
        session: &mut Session<'a, C::Client>,
        name: &str,
        patch: Map<String, Value>,
    ) -> Result<(), ReconcileError> {
        info!(fields = ?patch.keys().collect::<Vec<_>>(), "updating external resource");
        let result = self
            .ctx
            .mutate(
                &self.kind,
                "update",
                &session.pacing,
                self.mr.meta(),
                || self.mr.for_provider().update(session, name, patch.clone()),
            )
            .await
            .map_err(ReconcileError::Deferred)?;
        self.change_log(OperationType::Update, Some(name), &result);
        let accepted = result.map_err(ReconcileError::Update)?;
        session.record(accepted).await?;
        self.event(
            EventType::Normal,
            "UpdatedExternalResource",
            "Successfully requested update of external resource",
        )
        .await;
        Ok(())
    }
}
