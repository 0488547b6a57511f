//! The managed reconciler: one piece of code for every kind, following
//! crossplane-runtime's order of steps (pause, policy check, deletion,
//! external-name initialisation, create annotations, references, connect,
//! observe, connection details, finalizer, create, late-init, update,
//! conditions). The decisions come from [`crate::policy`] and
//! [`crate::plan`]; this module gathers facts and carries decisions out.

use std::time::Duration;

use crossplane_types::ExternalNameOrigin;
use crossplane_types::condition::{ConditionStatus, TYPE_READY, TYPE_SYNCED, TYPE_UP_TO_DATE};
use crossplane_types::well_known::{
    EXTERNAL_CREATE_FAILED_ANNOTATION, EXTERNAL_CREATE_PENDING_ANNOTATION,
    EXTERNAL_CREATE_SUCCEEDED_ANNOTATION, EXTERNAL_NAME_ANNOTATION, MANAGED_RESOURCE_FINALIZER,
    PAUSED_ANNOTATION, POLL_INTERVAL_ANNOTATION, RECONCILE_REQUESTED_AT_ANNOTATION,
};
use crossplane_types::{CommonSpec, Condition, Managed, ManagedStatus, Scope};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::ResourceExt;
use serde_json::{Map, Value, json};
use tracing::{Instrument, field, info, info_span, warn};

use crate::backoff::Intent;
use crate::changelog::OperationType;
use crate::cluster::{ObjectKey, typed};
use crate::connect::Connect;
use crate::connection::ConnectionSecret;
use crate::context::{CATCH_UP_LIMIT, CONFLICT_RETRY, Context, kind_label};
use crate::drift;
use crate::echo::Lag;
use crate::error::{CreateFailure, ExternalError, ReconcileError, Unreadable};
use crate::events::EventType;
use crate::fields::{late_initialize, merge_init_under, without_keys};
use crate::kind::{CloudKind, Created, ManagedKind, Observation, Readiness, non_cloud_fields};
use crate::lists;
use crate::pacing::{GiveWay, Pacing};
use crate::plan::{
    self, CreateMarks, DeleteStep, Observed, RecordCreated, Step, delete_step, idempotency_key,
    live_step_with,
};
use crate::policy::{self, Actions, Mode, orphans_on_delete};
use crate::rate_limit::{Admission, Lane, Wake};
use crate::references::Resolver;
use crate::requests::{self, pending_request};
use crate::session::{Details, Session};
use crate::tags;

mod create;
mod delete;
mod status;
mod update;
mod writes;

/// The status as JSON-backed generic data, so one code path serves all kinds.
type Status = ManagedStatus<Value>;

/// When a resource is reconciled again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// After this long (a poll, a backoff, a quiet retry).
    After(Duration),
    /// Only when the object changes (paused, or a user error).
    Change,
}

/// How one reconcile ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// When the controller reconciles the resource again.
    pub next: Next,
    /// The `result` label of `reconciles_total` (`success`, `paused`,
    /// `missing`, `conflict`, `error`, `waiting` when the cloud server's pacing
    /// deferred it), or `backoff` when a backoff skipped the
    /// reconcile or `deferred` when the rate cap queued it: those are not
    /// counted, as they did nothing.
    pub result: &'static str,
}

/// One reconcile of `mr`, the copy the caller holds, connecting to its
/// cloud through `connect`. If the rate cap, or its cloud server's pacer,
/// has no slot for it now, it ends at once and `wake` makes what starts the
/// object's next reconcile when the slot comes. The controller calls this; tests of a kind call it
/// directly, on a [`crate::cluster::memory::MemoryCluster`].
pub async fn reconcile_once<K: ManagedKind<C>, C: Connect>(
    mr: &K,
    ctx: &Context,
    connect: &C,
    wake: impl Fn() -> Wake + Send + Sync,
) -> Outcome {
    let key = mr.uid().unwrap_or_default();
    let intent = intent_of(mr);
    if let Some(wait) = ctx.backoff.remaining(&key, &intent) {
        return Outcome {
            next: Next::After(wait),
            result: "backoff",
        };
    }
    let version = mr.resource_version();
    if let Some(lag) = version.as_ref().and_then(|v| ctx.own_writes.lag(&key, v)) {
        // Our cache has not caught up with our own last write: any guarded
        // write from this copy would be refused. Make no call; the watch
        // event of the newer copy wakes the next reconcile.
        ctx.metrics
            .record_reconcile(&kind_label::<K>(), "conflict", Duration::ZERO);
        let wait = match lag {
            Lag::CaughtUp => Duration::ZERO,
            Lag::Waiting => CATCH_UP_LIMIT,
        };
        return Outcome {
            next: Next::After(wait),
            result: "conflict",
        };
    }
    let lane = lane_of(mr);
    // Held to the end of the reconcile: it counts as in flight until then.
    let admission = ctx.limiter.admit(&key, lane, &wake);
    let controller = crate::metrics::controller_name::<K>();
    let admitted = matches!(admission, Admission::Now(_));
    ctx.metrics.standard.arrived(&controller, &key, admitted);
    let Admission::Now(_in_flight) = admission else {
        return Outcome {
            next: Next::Change,
            result: "deferred",
        };
    };
    if let Some(version) = &version {
        ctx.own_writes.reconciling(&key, version);
    }
    let kind = kind_label::<K>();
    if let Some(latency) = ctx.activations.first_reconcile(&kind) {
        ctx.metrics
            .activation_latency
            .get_or_create(&crate::metrics::KindLabels { kind: kind.clone() })
            .observe(latency.as_secs_f64());
    }
    let name = mr.name_any();
    let span = info_span!(
        "reconcile",
        kind = %kind,
        namespace = mr.namespace().unwrap_or_default(),
        name = %name,
        external_name = field::Empty
    );
    if let Some(external) = mr.annotations().get(EXTERNAL_NAME_ANNOTATION) {
        span.record("external_name", external.as_str());
    }
    // Boxed, so that a reconcile the rate cap defers (thousands at once on
    // a cold start) is a small task: this part's state is most of a
    // reconcile's size (about 7 KB), and it is allocated only once admitted.
    Box::pin(
        async move {
            let timer = std::time::Instant::now();
            let mut run = match Run::new(mr.clone(), ctx, connect, &wake) {
                Ok(run) => run,
                Err(error) => {
                    // Nothing can be decided, nor a condition written, from
                    // an object that cannot be read: say so, back off.
                    warn!(error = %error, "cannot read the managed resource");
                    ctx.metrics
                        .record_reconcile(&kind, "error", timer.elapsed());
                    return Outcome {
                        next: Next::After(ctx.backoff.failed(&key, intent)),
                        result: "error",
                    };
                }
            };
            let requested = requested_token(mr).map(str::to_owned);
            let (gvk, created) = (
                crate::metrics::gvk_label::<K>(),
                mr.meta().creation_timestamp.as_ref().map(|t| t.0),
            );
            let synced_set = run.original.condition(TYPE_SYNCED).is_some();
            ctx.metrics
                .standard
                .reconcile_started(&gvk, &key, synced_set, created);
            let result = run.steps().await;
            let deleted = run.gone && result.is_ok();
            let (mut action, mut outcome) = match result {
                Ok(action) => {
                    ctx.backoff.succeeded(&key);
                    let outcome = match (run.paused, run.missing) {
                        (true, _) => "paused",
                        (_, true) => "missing",
                        _ => "success",
                    };
                    (action, outcome)
                }
                Err(error) if error.is_conflict() => {
                    // Our informer's copy was older than a write we just made;
                    // nothing failed, so no condition, no event, no backoff:
                    // look again shortly with a fresh copy.
                    tracing::debug!(error = %error, "stale copy; retrying");
                    run.status = run.original.clone();
                    (Next::After(CONFLICT_RETRY), "conflict")
                }
                Err(ReconcileError::Deferred(deferral)) => {
                    // Not a failure: the cloud server asked to wait. No
                    // event and no backoff; a resource whose change waits
                    // says so in Synced, one that only waits for its next
                    // look waits quietly ([`says_waiting`]).
                    tracing::debug!(after = ?deferral.after, "cloud server busy: deferred");
                    if says_waiting(mr) {
                        run.set(Condition::waiting(deferral.message));
                    }
                    (Next::After(deferral.after), "waiting")
                }
                Err(error) => {
                    warn!(error = %error, "reconcile failed");
                    run.status
                        .set_condition(Condition::reconcile_error(error.to_string()));
                    run.event(EventType::Warning, "ReconcileError", &error.to_string())
                        .await;
                    (Next::After(ctx.backoff.failed(&key, intent)), "error")
                }
            };
            // The reconcile-requested-at token of the copy this reconcile
            // started from is handled, whatever the outcome, unless a stale
            // copy cut it short (the retry handles it).
            if let Some(token) = requested.filter(|_| !matches!(outcome, "conflict" | "waiting")) {
                info!(token = %token, "handled a requested reconcile");
                run.status.last_handled_reconcile_at = Some(token);
            }
            match run.write_status().await {
                Ok(()) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    // Someone wrote since our copy was read (another replica,
                    // the user): this status may be stale, so it is not written;
                    // look again shortly, as for any conflict.
                    tracing::debug!("status computed from a stale copy; retrying");
                    (action, outcome) = (Next::After(CONFLICT_RETRY), "conflict");
                }
                Err(error) => warn!(error = %error, "cannot write status"),
            }
            ctx.metrics
                .record_reconcile(&kind, outcome, timer.elapsed());
            let standard = &ctx.metrics.standard;
            let requeue_after = matches!(action, Next::After(_));
            standard.reconciled(&controller, outcome, requeue_after, timer.elapsed());
            if deleted {
                let deletion = mr.meta().deletion_timestamp.as_ref().map(|t| t.0);
                standard.finalizer_removed(&gvk, &key, deletion);
            } else {
                let state = crate::metrics::standard::ready_synced(Some(&run.original));
                standard.reconcile_ended(&gvk, &key, state, created);
            }
            Outcome {
                next: action,
                result: outcome,
            }
        }
        .instrument(span),
    )
    .await
}

/// The state of one reconcile of one managed resource.
struct Run<'a, K: ManagedKind<C>, C: Connect> {
    ctx: &'a Context,
    connect: &'a C,
    mr: K,
    kind: String,
    /// The status as read, to skip a write that would change nothing.
    original: Status,
    status: Status,
    paused: bool,
    /// The object is gone (its finalizer was removed): nothing to write.
    gone: bool,
    /// Its cloud resource is missing and its policies forbid a create.
    missing: bool,
    /// How long after a settled reconcile the resource is polled again:
    /// `--poll-interval`, or its `crossplane.io/poll-interval`.
    poll_interval: Duration,
    /// `mr` as JSON, made once per version of it: the rules read its spec
    /// several times a reconcile.
    json: Value,
    /// Makes what starts the object's next reconcile: its cloud server's
    /// line wakes it when its turn comes.
    wake: &'a (dyn Fn() -> Wake + Send + Sync),
}

impl<'a, K: ManagedKind<C>, C: Connect> Run<'a, K, C> {
    fn new(
        mr: K,
        ctx: &'a Context,
        connect: &'a C,
        wake: &'a (dyn Fn() -> Wake + Send + Sync),
    ) -> Result<Self, Unreadable> {
        let json = as_json(&mr)?;
        // A status that does not parse is reported, never taken as empty:
        // that would forget its conditions and write them over.
        let original: Status = match json.get("status") {
            None | Some(Value::Null) => Status::default(),
            Some(status) => serde_json::from_value(status.clone()).map_err(|error| Unreadable {
                what: "status",
                error,
            })?,
        };
        Ok(Self {
            ctx,
            connect,
            kind: kind_label::<K>(),
            status: original.clone(),
            original,
            mr,
            paused: false,
            gone: false,
            missing: false,
            poll_interval: ctx.settings.poll_interval,
            json,
            wake,
        })
    }

    /// Where the managed resource lives on the API server.
    fn key(&self) -> ObjectKey {
        ObjectKey::of::<K>(self.mr.namespace().as_deref(), &self.mr.name_any())
    }

    fn annotation(&self, key: &str) -> Option<String> {
        self.mr
            .annotations()
            .get(key)
            .cloned()
            .filter(|v| !v.is_empty())
    }

    fn generation(&self) -> i64 {
        self.mr.meta().generation.unwrap_or_default()
    }

    /// The part of the object the kind's rules work on, as JSON.
    fn spec_json(&self, field: &str) -> Value {
        self.json
            .pointer(&format!("/spec/{field}"))
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Takes a newer version of the managed resource.
    fn replace_mr(&mut self, mr: K) -> Result<(), Unreadable> {
        self.json = as_json(&mr)?;
        self.mr = mr;
        Ok(())
    }

    async fn steps(&mut self) -> Result<Next, ReconcileError> {
        let spec = self.mr.resource_spec();
        let deletion_policy = spec.deletion_policy();
        let paused_annotation = self.annotation(PAUSED_ANNOTATION).as_deref() == Some("true");
        let actions = match policy::mode(
            spec.management_policies(),
            paused_annotation,
            self.ctx.settings.management_policies_enabled,
        ) {
            Mode::Paused => {
                self.paused = true;
                self.set(Condition::reconcile_paused().with_message(
                    "reconciliation is paused by the crossplane.io/paused annotation or managementPolicies: []",
                ));
                return Ok(Next::Change);
            }
            Mode::Unsupported(message) => {
                // A user error no retry can fix: report it and wait for an edit.
                self.set(Condition::reconcile_error(message));
                return Ok(Next::Change);
            }
            Mode::Active(actions) => actions,
        };

        if self.mr.meta().deletion_timestamp.is_some() {
            return self
                .delete(orphans_on_delete(actions, &deletion_policy))
                .await;
        }

        // An invalid poll interval stops the reconcile before the cloud is
        // called, until the object changes: see `crate::requests` for why.
        match requests::poll_interval(
            self.annotation(POLL_INTERVAL_ANNOTATION).as_deref(),
            self.ctx.settings.poll_interval,
            self.ctx.settings.min_poll_interval,
        ) {
            Ok(interval) => self.poll_interval = interval,
            Err(invalid) => {
                warn!(error = %invalid, "cannot use the poll interval; waiting for an edit");
                self.set(Condition::reconcile_error(invalid.to_string()));
                return Ok(Next::Change);
            }
        }

        // Whether the external name is this resource's own: named by its
        // annotation (set by the user, or recorded by a create of its own).
        // A legacy resource named by `metadata.name` records that name
        // first, as crossplane-runtime does. A namespaced one only claims
        // it by creating it (see `create`): names are unique per namespace
        // but the cloud has one namespace of names, and another
        // namespace's resource of the same name must not be taken over.
        let mut external_name = self.annotation(EXTERNAL_NAME_ANNOTATION);
        let mut claimed = external_name.is_some();
        if external_name.is_none() && K::EXTERNAL_NAME_ORIGIN == ExternalNameOrigin::MetadataName {
            let name = self.mr.name_any();
            if !<K::Scoped as Scope>::NAMESPACED {
                self.annotate(&[(EXTERNAL_NAME_ANNOTATION, Some(name.clone()))])
                    .await?;
                claimed = true;
            }
            external_name = Some(name);
        }

        let reads = self
            .ctx
            .metrics
            .reference_reads
            .get_or_create(&crate::metrics::KindLabels {
                kind: self.kind.clone(),
            })
            .clone();
        let resolver = Resolver::new(
            &*self.ctx.cluster,
            self.controller_ref(),
            self.mr.namespace(),
            reads,
        );
        if let Some(for_provider) = resolver
            .resolve(&self.spec_json("forProvider"), K::REFERENCES)
            .await?
        {
            self.patch_spec(
                json!({ "spec": { "forProvider": for_provider } }),
                "update spec",
                "spec",
            )
            .await?;
        }

        let mut session = self.connect().await?;
        let seen = self.observe(&session, external_name.as_deref()).await?;
        if !claimed && seen.is_some() {
            return Err(ReconcileError::ExternalNameTaken {
                kind: K::kind(&()).into_owned(),
                name: external_name.unwrap_or_default(),
            });
        }
        let observed = observed_of::<K, C>(seen.as_ref());
        if self.create_marks().settled_by(&observed) {
            // The interrupted create made the resource we just saw.
            info!("external resource of an unrecorded create found; recording it");
            self.annotate_guarded(&[(EXTERNAL_CREATE_SUCCEEDED_ANNOTATION, Some(now()))])
                .await?;
        }

        if let (Some(seen), Observed::Exists { at_provider, .. }) = (&seen, &observed) {
            self.status.at_provider = Some(at_provider.clone());
            let details = self
                .mr
                .for_provider()
                .connection_details(&session, seen)
                .await
                .map_err(ReconcileError::ConnectionDetails)?;
            session.publish(details).await?;
        }

        let non_cloud = non_cloud_fields::<K, C>();
        let desired = without_keys(&self.spec_json("forProvider"), &non_cloud);
        let write_only = match &observed {
            Observed::Exists {
                deleting: false, ..
            } => self
                .mr
                .for_provider()
                .write_only_drift(&session)
                .await
                .map_err(ReconcileError::Observe)?,
            _ => Map::new(),
        };
        // Create-only fields are never sent in an update; status.drift
        // reports them instead.
        let updatable = without_keys(
            &desired,
            <K::ForProvider as CloudKind<C>>::CREATE_ONLY_FIELDS,
        );
        let init = without_keys(&self.spec_json("initProvider"), &non_cloud);
        let drift = |observed| drift::Inputs {
            actions,
            desired: &desired,
            init: &init,
            observed,
            write_only: &write_only,
            create_only: <K::ForProvider as CloudKind<C>>::CREATE_ONLY_FIELDS,
            sensitive: <K::ForProvider as CloudKind<C>>::SENSITIVE_FIELDS,
        };
        let step = live_step_with(
            actions,
            &updatable,
            write_only.clone(),
            &observed,
            lists::for_kind::<K>(),
        );
        if step != Step::Create {
            // A create adds it in its create-pending write: one write less.
            self.ensure_finalizer().await?;
        }
        match step {
            Step::ReportMissing => {
                self.report_drift(drift(None)).await;
                self.report_missing().await;
                Ok(self.requeue_for(Readiness::Available))
            }
            Step::Create => {
                // Being created: no difference to show until it is observed.
                self.status.drift = None;
                self.status
                    .conditions
                    .retain(|c| c.type_ != TYPE_UP_TO_DATE);
                self.create(&mut session, external_name.as_deref(), actions)
                    .await
            }
            step => {
                let (
                    Some(seen),
                    Observed::Exists {
                        at_provider,
                        deleting,
                    },
                ) = (&seen, &observed)
                else {
                    unreachable!("update and up-to-date steps need an observation")
                };
                if actions.late_initialize {
                    self.late_initialize(at_provider).await?;
                }
                if !deleting {
                    self.report_drift(drift(Some(at_provider))).await;
                }
                let readiness = K::ForProvider::readiness(seen);
                let updated = matches!(step, Step::Update(_));
                if let Step::Update(patch) = step {
                    let name = external_name.as_deref().unwrap_or_default();
                    self.update(&mut session, name, patch).await?;
                }
                self.set(Condition::reconcile_success());
                self.set_readiness(readiness);
                let uid = self.mr.uid().unwrap_or_default();
                self.ctx.metrics.standard.observed(
                    &crate::metrics::gvk_label::<K>(),
                    &uid,
                    updated,
                );
                if updated {
                    // The cloud is applying the change (UPDATING, modifying):
                    // look again soon rather than a whole poll later.
                    return Ok(Next::After(self.ctx.settings.pending_poll_interval));
                }
                Ok(self.requeue_for(readiness))
            }
        }
    }

    async fn connect(&self) -> Result<Session<'a, C::Client>, ReconcileError> {
        let connection = self
            .mr
            .resource_spec()
            .connection_secret(self.mr.namespace().as_deref())
            .map(|target| ConnectionSecret {
                target,
                owner: self.owner_ref(),
            });
        let connected = self
            .ctx
            .connector
            .connect(&self.mr, &self.kind, self.connect)
            .await?;
        // Before the connection Secret is read: a reconcile its server
        // cannot take now makes no request at all.
        let key = self.mr.uid().unwrap_or_default();
        let ticket = connected
            .pacer
            .admit(&key, self.wake)
            .map_err(ReconcileError::Deferred)?;
        Ok(Session::open(
            connected.client,
            Pacing::new(connected.pacer, ticket, GiveWay::new(key, self.wake)),
            &*self.ctx.cluster,
            self.mr.namespace(),
            connection,
            self.ctx.metrics.kube_write_counter(&self.kind, "secret"),
        )
        .await?)
    }

    async fn observe(
        &self,
        session: &Session<'_, C::Client>,
        external_name: Option<&str>,
    ) -> Result<Option<Observation<K, C>>, ReconcileError> {
        let Some(name) = external_name else {
            return Ok(None);
        };
        self.ctx
            .call(&self.kind, "observe", &session.pacing, || {
                self.mr.for_provider().observe(session, name)
            })
            .await
            .map_err(ReconcileError::Deferred)?
            .map_err(ReconcileError::Observe)
    }

    fn create_marks(&self) -> CreateMarks {
        let stamp = |key| {
            self.annotation(key)
                .and_then(|v| v.parse::<jiff::Timestamp>().ok())
        };
        CreateMarks {
            pending: stamp(EXTERNAL_CREATE_PENDING_ANNOTATION),
            succeeded: stamp(EXTERNAL_CREATE_SUCCEEDED_ANNOTATION),
            failed: stamp(EXTERNAL_CREATE_FAILED_ANNOTATION),
        }
    }

    fn owner_ref(&self) -> OwnerReference {
        self.mr
            .controller_owner_ref(&())
            .expect("a managed resource read from the API server has a name and uid")
    }

    fn controller_ref(&self) -> Option<OwnerReference> {
        self.mr
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))
            .cloned()
    }
}

/// A merge patch setting (or, for `None`, removing) annotations.
fn annotations_patch(annotations: &[(&str, Option<String>)]) -> Value {
    let map: Map<String, Value> = annotations
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    json!({ "metadata": { "annotations": map } })
}

/// The kind's typed observation as the plain data the decisions in
/// [`crate::plan`] work on: `status.atProvider` JSON and whether the cloud
/// is deleting it.
fn observed_of<K: ManagedKind<C>, C: Connect>(seen: Option<&Observation<K, C>>) -> Observed {
    match seen {
        None => Observed::Missing,
        Some(seen) => Observed::Exists {
            deleting: K::ForProvider::readiness(seen) == Readiness::Deleting,
            at_provider: serde_json::to_value(seen).expect("the cloud's models serialize"),
        },
    }
}

/// The parts of a resource that, when the user changes them, end a backoff.
fn intent_of<K: Managed>(mr: &K) -> Intent {
    let annotation = |key| mr.annotations().get(key).cloned();
    Intent {
        generation: mr.meta().generation,
        paused: annotation(PAUSED_ANNOTATION),
        external_name: annotation(EXTERNAL_NAME_ANNOTATION),
        deleting: mr.meta().deletion_timestamp.is_some(),
        reconcile_requested_at: annotation(RECONCILE_REQUESTED_AT_ANNOTATION),
    }
}

/// The limiter lane of a reconcile of `mr`: the routine look at a settled
/// resource (Ready and Synced at its current generation, not being
/// deleted, no reconcile-requested-at token pending) is a poll; anything
/// else is work. Read from the object, since the controller does not say
/// why it reconciles.
pub(crate) fn lane_of<K: Managed>(mr: &K) -> Lane {
    lane_for(mr.meta().generation, due(mr), conditions_of(mr))
}

/// `mr`'s status conditions (none before its first status).
fn conditions_of<K: Managed>(mr: &K) -> &[Condition] {
    mr.managed_status()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default()
}

/// Whether a deferred reconcile of `mr` says so in `Synced` (reason
/// `Waiting`): only when the change it holds back is one the resource has
/// not made yet (new, edited since its last successful reconcile, failing,
/// deleting, or asked to reconcile). A resource whose last reconcile
/// succeeded at its generation (`Synced=True`) waits for nothing but its
/// next look (one still provisioning, or a settled one's poll), and waits
/// quietly: its `Ready` condition already says where it is. Saying it each
/// time cost two status writes per deferred look (`Waiting`, then back to
/// `True` at the next look that got through): with 60 VPCs in a 5/s
/// account's line, 10 to 25 % more API writes beside another account's
/// batches, on an API server both accounts share.
fn says_waiting<K: Managed>(mr: &K) -> bool {
    waiting_is_news(mr.meta().generation, due(mr), conditions_of(mr))
}

/// [`says_waiting`] of a resource at `generation` with these `conditions`,
/// `due` or not.
fn waiting_is_news(generation: Option<i64>, due: bool, conditions: &[Condition]) -> bool {
    due || !holds_for(generation, conditions, TYPE_SYNCED)
}

/// Whether a reconcile of `mr` is due now, whatever its conditions: it is
/// being deleted, or a reconcile-requested-at token waits.
fn due<K: Managed>(mr: &K) -> bool {
    mr.meta().deletion_timestamp.is_some() || requested_token(mr).is_some()
}

/// The `crossplane.io/reconcile-requested-at` token of this copy of `mr`,
/// if no reconcile has handled it yet: it puts the reconcile in the work
/// lane, and the reconcile records it as handled.
fn requested_token<K: Managed>(mr: &K) -> Option<&str> {
    pending_request(
        mr.annotations()
            .get(RECONCILE_REQUESTED_AT_ANNOTATION)
            .map(String::as_str),
        mr.managed_status()
            .and_then(|s| s.last_handled_reconcile_at.as_deref()),
    )
}

/// The lane of a resource at `generation` with these `conditions`: only a
/// settled one (nothing `due`: not deleting nor asked to reconcile now;
/// `Ready` and `Synced` true for this generation) waits in the poll lane.
fn lane_for(generation: Option<i64>, due: bool, conditions: &[Condition]) -> Lane {
    let holds = |type_| holds_for(generation, conditions, type_);
    if !due && holds(TYPE_READY) && holds(TYPE_SYNCED) {
        Lane::Poll
    } else {
        Lane::Work
    }
}

/// Whether condition `type_` is true among `conditions`, computed at
/// `generation`.
fn holds_for(generation: Option<i64>, conditions: &[Condition], type_: &str) -> bool {
    conditions.iter().any(|c| {
        c.type_ == type_ && c.status == ConditionStatus::True && c.observed_generation == generation
    })
}

/// Attempts at recording a create's result before leaving it to the next
/// reconcile (client-go's `retry.DefaultRetry` makes five too).
const RECORD_ATTEMPTS: u32 = 5;

/// `mr` as JSON, which the field rules work on. The kinds' types derive
/// `Serialize`, so this fails only for a type that cannot be JSON (a map
/// with keys that are not strings): a clear error, never an empty object
/// that would read as a spec with nothing set.
fn as_json<K: serde::Serialize>(mr: &K) -> Result<Value, Unreadable> {
    serde_json::to_value(mr).map_err(|error| Unreadable {
        what: "managed resource",
        error,
    })
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conditions(ready: &str, synced: &str, observed: i64) -> Vec<Condition> {
        let condition = |type_: &str, status: &str| {
            serde_json::from_value(json!({
                "type": type_, "status": status, "reason": "R",
                "lastTransitionTime": "2026-11-23T00:00:00Z", "observedGeneration": observed,
            }))
            .expect("a valid condition")
        };
        vec![condition("Ready", ready), condition("Synced", synced)]
    }

    #[test]
    fn only_a_settled_resource_waits_in_the_poll_lane() {
        let lane = |generation, due, conditions: Vec<Condition>| {
            lane_for(Some(generation), due, &conditions)
        };
        assert_eq!(lane(2, false, conditions("True", "True", 2)), Lane::Poll);
        assert_eq!(
            lane(3, false, conditions("True", "True", 2)),
            Lane::Work,
            "an edit not yet observed"
        );
        assert_eq!(
            lane(2, false, conditions("False", "True", 2)),
            Lane::Work,
            "not Ready"
        );
        assert_eq!(
            lane(2, false, conditions("True", "False", 2)),
            Lane::Work,
            "failing"
        );
        assert_eq!(
            lane(2, true, conditions("True", "True", 2)),
            Lane::Work,
            "deleting, or a reconcile-requested-at token not yet handled"
        );
        assert_eq!(lane(1, false, Vec::new()), Lane::Work, "new");
    }

    #[test]
    fn only_a_change_not_yet_made_says_it_waits() {
        let says = |generation, due, conditions: Vec<Condition>| {
            waiting_is_news(Some(generation), due, &conditions)
        };
        assert!(says(1, false, Vec::new()), "new: its create waits");
        assert!(says(3, false, conditions("True", "True", 2)), "an edit");
        assert!(says(2, false, conditions("False", "False", 2)), "failing");
        assert!(
            says(2, true, conditions("True", "True", 2)),
            "deleting, or asked to reconcile"
        );
        assert!(
            !says(2, false, conditions("False", "True", 2)),
            "created, provisioning: its next look waits quietly"
        );
        assert!(
            !says(2, false, conditions("True", "True", 2)),
            "settled: its poll waits quietly"
        );
    }
}
