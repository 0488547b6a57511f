//! Throttling: a token bucket per account, switched on by the admin API.
//!
//! One setting is the default for every account (`/admin/throttling`);
//! an account may have its own instead (`/admin/throttling/accounts`), so a
//! test can throttle one account, one ProviderConfig's API key, and leave
//! the others alone. Each account has one bucket, filled by whichever of
//! the two is in force for it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Instant;

use crate::model::{AccountThrottling, Throttling};
use crate::snapshot::format::ThrottlingSettings;

/// `Retry-After` of an account whose rate is 0: no token will come, but a
/// client that retries should not spin (the admin API may lift the rate).
const NO_REFILL_RETRY_SECS: u64 = 60;

#[derive(Default)]
pub struct Throttle {
    inner: Mutex<Settings>,
}

#[derive(Default)]
struct Settings {
    /// In force for every account without its own.
    default: Option<Throttling>,
    /// Accounts' own settings, sorted so that listings are stable.
    accounts: BTreeMap<String, Throttling>,
    buckets: HashMap<String, Bucket>,
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl Settings {
    fn for_account(&self, account: &str) -> Option<Throttling> {
        self.accounts.get(account).copied().or(self.default)
    }
}

impl Throttle {
    /// Sets the default of every account (`None`: no throttling). Refills
    /// the buckets the default fills; accounts with their own setting keep
    /// theirs as they are.
    pub fn set(&self, config: Option<Throttling>) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.default = config;
        let Settings {
            accounts, buckets, ..
        } = &mut *inner;
        buckets.retain(|account, _| accounts.contains_key(account));
    }

    /// The default of every account.
    pub fn get(&self) -> Option<Throttling> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).default
    }

    /// Gives `account` its own setting, in force instead of the default,
    /// and a full bucket; other accounts' buckets are left as they are.
    pub fn set_account(&self, account: &str, config: Throttling) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.accounts.insert(account.to_owned(), config);
        inner.buckets.remove(account);
    }

    /// Puts `account` back on the default, with a full bucket. Whether it
    /// had a setting of its own.
    pub fn clear_account(&self, account: &str) -> bool {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.buckets.remove(account);
        inner.accounts.remove(account).is_some()
    }

    /// Accounts with a setting of their own, by name.
    pub fn accounts(&self) -> Vec<AccountThrottling> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner
            .accounts
            .iter()
            .map(|(account, &throttling)| AccountThrottling {
                account: account.clone(),
                throttling,
            })
            .collect()
    }

    /// Back to start-up: no default, no account's own setting.
    pub fn reset(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *inner = Settings::default();
    }

    /// The default and every account's own setting, for a snapshot.
    pub fn export(&self) -> ThrottlingSettings {
        ThrottlingSettings {
            default: self.get(),
            accounts: self.accounts(),
        }
    }

    /// Replaces every setting by a snapshot's; every bucket starts full.
    pub fn restore(&self, settings: &ThrottlingSettings) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *inner = Settings {
            default: settings.default,
            accounts: own_settings(&settings.accounts),
            buckets: HashMap::new(),
        };
    }

    /// Replaces the own settings of `accounts` by a snapshot's (`own`, of
    /// those accounts): an account the snapshot gives none goes back on the
    /// default. Their buckets start full; other accounts are left alone.
    pub fn restore_accounts(&self, accounts: &[String], own: &[AccountThrottling]) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for account in accounts {
            inner.accounts.remove(account);
            inner.buckets.remove(account);
        }
        inner.accounts.extend(own_settings(own));
    }

    /// Takes a token for `account`; `Err(seconds)` to wait when empty.
    pub fn take(&self, account: &str) -> Result<(), u64> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(config) = inner.for_account(account) else {
            return Ok(());
        };
        if config.rate_per_second == 0.0 {
            return Err(NO_REFILL_RETRY_SECS);
        }
        let now = Instant::now();
        let burst = f64::from(config.burst.max(1));
        let bucket = inner.buckets.entry(account.to_owned()).or_insert(Bucket {
            tokens: burst,
            refilled: now,
        });
        let refill = now.duration_since(bucket.refilled).as_secs_f64() * config.rate_per_second;
        bucket.tokens = (bucket.tokens + refill).min(burst);
        bucket.refilled = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - bucket.tokens) / config.rate_per_second)
                .ceil()
                .max(1.0) as u64)
        }
    }
}

fn own_settings(own: &[AccountThrottling]) -> BTreeMap<String, Throttling> {
    own.iter()
        .map(|a| (a.account.clone(), a.throttling))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// So slow that no token comes back while a test runs.
    fn slow(burst: u32) -> Throttling {
        Throttling {
            rate_per_second: 0.001,
            burst,
        }
    }

    /// Calls `account` gets through before its first refusal (at most 100).
    fn allowed(throttle: &Throttle, account: &str) -> usize {
        (0..100)
            .take_while(|_| throttle.take(account).is_ok())
            .count()
    }

    #[test]
    fn without_a_setting_every_call_goes_through() {
        let throttle = Throttle::default();
        assert_eq!(allowed(&throttle, "a"), 100);
    }

    #[test]
    fn an_accounts_own_setting_wins_and_the_default_holds_for_the_others() {
        let throttle = Throttle::default();
        throttle.set(Some(slow(2)));
        throttle.set_account("a", slow(5));
        assert_eq!(allowed(&throttle, "a"), 5);
        assert_eq!(allowed(&throttle, "b"), 2);
        assert_eq!(allowed(&throttle, "c"), 2);
        // With no default, only the account with its own is throttled.
        throttle.set(None);
        assert_eq!(allowed(&throttle, "b"), 100);
        assert_eq!(throttle.take("a"), Err(1000));
    }

    #[test]
    fn rate_zero_refuses_every_call_of_the_account() {
        let throttle = Throttle::default();
        throttle.set_account(
            "a",
            Throttling {
                rate_per_second: 0.0,
                burst: 10,
            },
        );
        assert_eq!(throttle.take("a"), Err(NO_REFILL_RETRY_SECS));
        assert_eq!(allowed(&throttle, "b"), 100);
    }

    #[test]
    fn changing_an_accounts_setting_refills_only_its_bucket() {
        let throttle = Throttle::default();
        throttle.set(Some(slow(1)));
        throttle.set_account("a", slow(2));
        assert_eq!(allowed(&throttle, "a"), 2);
        assert_eq!(allowed(&throttle, "b"), 1);
        throttle.set_account("a", slow(3));
        assert_eq!(allowed(&throttle, "a"), 3);
        assert_eq!(allowed(&throttle, "b"), 0, "b's bucket is still empty");
        // Back on the default, with a full bucket of the default's size.
        assert!(throttle.clear_account("a"));
        assert!(!throttle.clear_account("a"));
        assert_eq!(allowed(&throttle, "a"), 1);
        assert_eq!(allowed(&throttle, "b"), 0);
    }

    #[test]
    fn changing_the_default_refills_only_the_buckets_it_fills() {
        let throttle = Throttle::default();
        throttle.set(Some(slow(1)));
        throttle.set_account("a", slow(1));
        assert_eq!(allowed(&throttle, "a"), 1);
        assert_eq!(allowed(&throttle, "b"), 1);
        throttle.set(Some(slow(1)));
        assert_eq!(allowed(&throttle, "b"), 1);
        assert_eq!(allowed(&throttle, "a"), 0, "a's own bucket is still empty");
    }

    #[test]
    fn retry_after_is_the_wait_for_the_next_token() {
        let throttle = Throttle::default();
        throttle.set_account(
            "a",
            Throttling {
                rate_per_second: 0.5,
                burst: 1,
            },
        );
        assert_eq!(throttle.take("a"), Ok(()));
        assert_eq!(throttle.take("a"), Err(2));
    }

    #[test]
    fn a_snapshots_accounts_replace_only_those_accounts_settings() {
        let throttle = Throttle::default();
        throttle.set(Some(slow(1)));
        throttle.set_account("a", slow(2));
        throttle.set_account("b", slow(3));
        assert_eq!(allowed(&throttle, "c"), 1);
        let own = [AccountThrottling {
            account: "b".into(),
            throttling: slow(4),
        }];
        throttle.restore_accounts(&["a".into(), "b".into()], &own);
        let listed: Vec<_> = throttle
            .accounts()
            .into_iter()
            .map(|a| (a.account, a.throttling.burst))
            .collect();
        assert_eq!(listed, [("b".to_owned(), 4)], "a back on the default");
        assert_eq!(allowed(&throttle, "a"), 1);
        assert_eq!(allowed(&throttle, "c"), 0, "c's bucket left as it was");
        throttle.restore(&ThrottlingSettings::default());
        assert_eq!(throttle.export(), ThrottlingSettings::default());
    }

    #[test]
    fn settings_are_listed_by_account_and_reset_clears_them_all() {
        let throttle = Throttle::default();
        throttle.set(Some(slow(1)));
        throttle.set_account("b", slow(2));
        throttle.set_account("a", slow(3));
        let listed: Vec<_> = throttle
            .accounts()
            .into_iter()
            .map(|a| (a.account, a.throttling.burst))
            .collect();
        assert_eq!(listed, [("a".to_owned(), 3), ("b".to_owned(), 2)]);
        throttle.reset();
        assert_eq!((throttle.get(), throttle.accounts()), (None, Vec::new()));
        assert_eq!(allowed(&throttle, "a"), 100);
    }
}
