//! State shared by every handler.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::audit::AuditLog;
use crate::db::Db;
use crate::faults::Faults;
use crate::ids::Ids;
use crate::metrics::Metrics;
use crate::model::{Kind, Timing, TimingTable};
use crate::recorder::Recorder;
use crate::snapshot;
use crate::throttle::Throttle;

pub type SharedState = Arc<AppState>;

pub struct AppState {
    pub db: Db,
    /// API key -> account.
    pub api_keys: HashMap<String, String>,
    pub admin_token: String,
    pub default_delay_ms: u64,
    delays: Mutex<HashMap<Kind, u64>>,
    pub faults: Faults,
    pub throttle: Throttle,
    pub audit: AuditLog,
    pub metrics: Metrics,
    /// Wakes the transition ticker when a new deadline is stored.
    pub ticker: Notify,
    /// Every generated id and secret (seeded or random).
    pub ids: Arc<Ids>,
    /// Orders snapshot saves and loads.
    pub snapshots: snapshot::Gate,
    pub recorder: Recorder,
}

impl AppState {
    pub fn new(
        db: Db,
        api_keys: HashMap<String, String>,
        admin_token: String,
        default_delay_ms: u64,
        audit: AuditLog,
        ids: Ids,
    ) -> AppState {
        AppState {
            db,
            api_keys,
            admin_token,
            default_delay_ms,
            delays: Mutex::new(HashMap::new()),
            faults: Faults::default(),
            throttle: Throttle::default(),
            audit,
            metrics: Metrics::new(),
            ticker: Notify::new(),
            ids: Arc::new(ids),
            snapshots: snapshot::Gate::default(),
            recorder: Recorder::default(),
        }
    }

    /// Provisioning delay of a kind, in milliseconds (0: immediate).
    pub fn delay_ms(&self, kind: Kind) -> i64 {
        let delays = self.delays.lock().unwrap_or_else(|e| e.into_inner());
        let ms = delays.get(&kind).copied().unwrap_or(self.default_delay_ms);
        i64::try_from(ms).unwrap_or(i64::MAX / 2)
    }

    pub fn set_delay(&self, kind: Kind, ms: u64) {
        let mut delays = self.delays.lock().unwrap_or_else(|e| e.into_inner());
        delays.insert(kind, ms);
    }

    pub fn timing_table(&self) -> TimingTable {
        let timing = |kind| Timing {
            delay_ms: self.delay_ms(kind) as u64,
        };
        TimingTable {
            vpc: timing(Kind::Vpc),
            subnet: timing(Kind::Subnet),
            node_group: timing(Kind::NodeGroup),
            database_instance: timing(Kind::DatabaseInstance),
        }
    }

    /// Every kind's delay as `table` says (a loaded snapshot's).
    pub fn set_timing_table(&self, table: &TimingTable) {
        for (kind, timing) in [
            (Kind::Vpc, table.vpc),
            (Kind::Subnet, table.subnet),
            (Kind::NodeGroup, table.node_group),
            (Kind::DatabaseInstance, table.database_instance),
        ] {
            self.set_delay(kind, timing.delay_ms);
        }
    }

    /// Back to start-up settings: default timing, no faults, no throttling
    /// (of any account).
    pub fn reset_settings(&self) {
        self.delays
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.faults.clear();
        self.throttle.reset();
    }
}
