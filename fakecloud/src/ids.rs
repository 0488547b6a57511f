//! Every generated id and secret comes from here, so that `--seed N` (or
//! `PUT /admin/seed`) makes them reproducible: the same requests in the same
//! order give the same ids, salts, request ids and minted keys.
//!
//! Unseeded, each draw is random. Seeded, a draw is
//! `SHA-256(seed, stream, position)`, the position counting the stream's
//! draws since seeding. A counter rather than a stateful RNG, so that the
//! generator's whole state is two numbers a recording can carry and a replay
//! can set (`PUT /admin/seed {"seed", "position"}`).
//!
//! Streams keep draws that happen in different orders apart: resource ids
//! and password salts are drawn inside write transactions, which run one at
//! a time, so their order is the order of the writes; request ids are drawn
//! as requests arrive, in parallel; keys and tokens once at start. A draw on
//! one stream never moves another's position, so probes, admin calls or a
//! minted dev key cannot shift the ids a replay expects.

use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::model::SeedState;

/// What a draw is for; each stream has its own position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Resource ids and password salts (the ones a replay must reproduce).
    Resource,
    /// `x-request-id` of requests that bring none.
    Request,
    /// The dev key and admin token minted at start.
    Token,
}

impl Stream {
    fn index(self) -> usize {
        match self {
            Stream::Resource => 0,
            Stream::Request => 1,
            Stream::Token => 2,
        }
    }
}

#[derive(Debug)]
enum Mode {
    Random,
    Seeded { seed: u64, positions: [u64; 3] },
}

/// The generator, one per server (held in the shared state).
#[derive(Debug)]
pub struct Ids {
    mode: Mutex<Mode>,
}

impl Ids {
    /// Seeded from the start when `seed` is given, else random.
    pub fn new(seed: Option<u64>) -> Ids {
        let ids = Ids {
            mode: Mutex::new(Mode::Random),
        };
        if let Some(seed) = seed {
            ids.seed(seed, 0);
        }
        ids
    }

    /// From now on, draws are reproducible from `seed`; the resource stream
    /// continues at `position` (a recording's, so that a replay draws what
    /// the recorded server drew), the others at 0.
    pub fn seed(&self, seed: u64, position: u64) {
        *self.lock() = Mode::Seeded {
            seed,
            positions: [position, 0, 0],
        };
    }

    /// Back to random draws.
    pub fn unseed(&self) {
        *self.lock() = Mode::Random;
    }

    /// The seed and the resource stream's position (`None` and 0 unseeded).
    pub fn state(&self) -> SeedState {
        match *self.lock() {
            Mode::Random => SeedState {
                seed: None,
                position: 0,
            },
            Mode::Seeded { seed, positions } => SeedState {
                seed: Some(seed),
                position: positions[Stream::Resource.index()],
            },
        }
    }

    /// `N` (at most 32) bytes from `stream`.
    pub fn bytes<const N: usize>(&self, stream: Stream) -> [u8; N] {
        const { assert!(N <= 32, "one draw is one SHA-256 block") };
        let mut mode = self.lock();
        let Mode::Seeded { seed, positions } = &mut *mode else {
            return rand::random();
        };
        let position = &mut positions[stream.index()];
        let mut hasher = Sha256::new();
        hasher.update(seed.to_le_bytes());
        hasher.update([stream.index() as u8]);
        hasher.update(position.to_le_bytes());
        *position = position.wrapping_add(1);
        let block = hasher.finalize();
        let mut out = [0; N];
        out.copy_from_slice(&block[..N]);
        out
    }

    /// A cloud id: `<prefix>-<17 hex>`.
    pub fn resource_id(&self, prefix: &str) -> String {
        let hex = hex::encode(self.bytes::<9>(Stream::Resource));
        format!("{prefix}-{}", &hex[..17])
    }

    /// A password salt: 32 hex digits.
    pub fn salt(&self) -> String {
        hex::encode(self.bytes::<16>(Stream::Resource))
    }

    /// A request id: a UUID (version 4 layout).
    pub fn request_id(&self) -> String {
        uuid::Builder::from_random_bytes(self.bytes(Stream::Request))
            .into_uuid()
            .to_string()
    }

    /// A minted secret: `prefix` and 32 hex digits.
    pub fn token(&self, prefix: &str) -> String {
        format!("{prefix}{}", hex::encode(self.bytes::<16>(Stream::Token)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Mode> {
        self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_of(ids: &Ids, n: usize) -> Vec<String> {
        (0..n).map(|_| ids.resource_id("vpc")).collect()
    }

    #[test]
    fn the_same_seed_draws_the_same_ids_and_another_seed_others() {
        let (a, b, c) = (Ids::new(Some(7)), Ids::new(Some(7)), Ids::new(Some(8)));
        let first = ids_of(&a, 5);
        assert_eq!(first, ids_of(&b, 5));
        assert_ne!(first, ids_of(&c, 5));
        assert!(first.iter().all(|id| id.len() == "vpc-".len() + 17));
    }

    #[test]
    fn unseeded_draws_differ() {
        let (a, b) = (Ids::new(None), Ids::new(None));
        assert_ne!(ids_of(&a, 3), ids_of(&b, 3));
        assert_eq!(a.state(), SeedState::default());
    }

    #[test]
    fn a_position_resumes_the_resource_stream_where_it_was() {
        let ids = Ids::new(Some(3));
        let first = ids_of(&ids, 4);
        assert_eq!(ids.state().position, 4);
        let resumed = Ids::new(None);
        resumed.seed(3, 2);
        assert_eq!(ids_of(&resumed, 2), first[2..]);
    }

    #[test]
    fn other_streams_do_not_move_the_resource_stream() {
        let (a, b) = (Ids::new(Some(1)), Ids::new(Some(1)));
        a.request_id();
        a.token("fcdev_");
        assert_eq!(a.salt(), b.salt());
        assert_eq!(a.state(), b.state());
    }

    #[test]
    fn request_ids_are_uuids() {
        let id = Ids::new(Some(1)).request_id();
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 4);
    }
}
