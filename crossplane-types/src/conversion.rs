//! How a kind's API versions become one another: the fields that moved
//! between neighbouring versions, and the lossless conversion of whole
//! objects that a conversion webhook answers with.
//!
//! A kind's versions differ, release to release, by fields renamed or
//! regrouped: `instanceTenancy` becomes `tenancy`, two booleans become
//! `dns.resolution` and `dns.hostnames`. A [`VersionStep`] lists those moves
//! as JSON pointers into a parameters object; the same moves apply to
//! `spec.forProvider`, `spec.initProvider` and `status.atProvider`, which
//! share their field names (the derive makes the last two from the first).
//! Everything else of the object (metadata, the Crossplane fields, the
//! conditions) is the same in every version and is left as it is.
//!
//! # Lossless both ways
//!
//! A move cannot carry everything: an empty `dns: {}` has no place in a
//! version with two top-level booleans, and a field one version adds has
//! none in the other. Kubernetes' own types keep such values in an
//! annotation, and so does [`KindVersions::convert`]: when a section does
//! not survive the way back unchanged, it is kept whole, in the shape of
//! the version it came from, under `<group>/<version>-fields`; converting
//! back to that version restores it, unless the section changed meanwhile
//! (someone edited the object in the other version), in which case the
//! edit wins and the kept copy is dropped. So a round trip through any
//! version is the identity, and an edit is never undone by a stale copy.

use serde_json::{Map, Value};

/// The sections of an object whose fields a [`VersionStep`] moves: the
/// parameters, the init parameters and the observation.
pub const SECTIONS: [&str; 3] = [
    "/spec/forProvider",
    "/spec/initProvider",
    "/status/atProvider",
];

/// A field's place in the older and the newer of two neighbouring
/// versions: JSON pointers (RFC 6901) into a parameters object, such as
/// `/enableDnsSupport` and `/dns/resolution`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldMove {
    /// The field's pointer in the older version.
    pub older: &'static str,
    /// The field's pointer in the newer version.
    pub newer: &'static str,
}

/// How one version of a kind becomes the next one: the fields that moved.
/// Fields not named keep their place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionStep {
    /// The older version, e.g. `v1alpha1`.
    pub older: &'static str,
    /// The newer version, e.g. `v1beta1`.
    pub newer: &'static str,
    /// The fields that moved, applied in order.
    pub moves: &'static [FieldMove],
}

/// Which way a step is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the older version to the newer.
    Up,
    /// From the newer version to the older.
    Down,
}

impl Direction {
    fn reverse(self) -> Self {
        match self {
            Self::Up => Self::Down,
            Self::Down => Self::Up,
        }
    }
}

impl VersionStep {
    /// `params`, in the older version's shape, in the newer version's.
    pub fn up(&self, params: Value) -> Value {
        self.apply(params, Direction::Up)
    }

    /// `params`, in the newer version's shape, in the older version's.
    pub fn down(&self, params: Value) -> Value {
        self.apply(params, Direction::Down)
    }

    /// Moves every field of `params` the step names, the given way. A
    /// parameters object or a merge patch of one alike: only the fields
    /// present move, and an object on a moved field's path that is empty
    /// afterwards is removed (it only grouped moved fields), so a patch that
    /// touches none of them stays as it is.
    pub fn apply(&self, mut params: Value, direction: Direction) -> Value {
        for step in self.moves {
            let (from, to) = match direction {
                Direction::Up => (step.older, step.newer),
                Direction::Down => (step.newer, step.older),
            };
            if let Some(value) = take(&mut params, from) {
                put(&mut params, to, value);
            } else {
                // An empty group of moved fields (`dns: {}`) has no place on
                // the other side either.
                prune_empty_parents(&mut params, from);
            }
        }
        params
    }
}

/// The versions of one kind, oldest first, and the steps between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindVersions {
    /// The API group, e.g. `network.fakecloud.m.crossplane.io`.
    pub group: &'static str,
    /// The kind, e.g. `VPC`.
    pub kind: &'static str,
    /// The oldest version.
    pub oldest: &'static str,
    /// One step per later version, in order: each step's `older` is the
    /// version before it.
    pub steps: &'static [VersionStep],
}

/// Why an object could not be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    /// The object has no `apiVersion` string.
    #[error("the object has no apiVersion")]
    NoApiVersion,
    /// The object is not of this kind's group.
    #[error("apiVersion {api_version} is not in group {group}")]
    OtherGroup {
        /// The object's apiVersion.
        api_version: String,
        /// The kind's group.
        group: &'static str,
    },
    /// A version this kind does not have.
    #[error("{kind} has no version {version} (it has {known})")]
    UnknownVersion {
        /// The kind.
        kind: &'static str,
        /// The version asked for or found.
        version: String,
        /// The versions it has, comma-separated.
        known: String,
    },
    /// The object is not a JSON object.
    #[error("the object is not a JSON object")]
    NotAnObject,
    /// A kept copy of fields could not be read.
    #[error("annotation {annotation} does not hold the fields of a version: {reason}")]
    BadKeptFields {
        /// The annotation.
        annotation: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl KindVersions {
    /// The versions, oldest first.
    pub fn versions(&self) -> Vec<&'static str> {
        std::iter::once(self.oldest)
            .chain(self.steps.iter().map(|s| s.newer))
            .collect()
    }

    /// The newest version: the one stored from now on.
    pub fn newest(&self) -> &'static str {
        self.steps.last().map_or(self.oldest, |s| s.newer)
    }

    /// The annotation that keeps, on an object of another version, the
    /// fields of `version` it cannot hold.
    pub fn kept_fields_annotation(&self, version: &str) -> String {
        format!("{}/{version}-fields", self.group)
    }

    fn index(&self, version: &str) -> Result<usize, ConversionError> {
        self.versions()
            .iter()
            .position(|v| *v == version)
            .ok_or_else(|| ConversionError::UnknownVersion {
                kind: self.kind,
                version: version.to_owned(),
                known: self.versions().join(", "),
            })
    }

    /// `object` (a whole resource of this kind, in any of its versions) in
    /// version `to`, one step at a time, losing nothing (see the module's
    /// documentation).
    pub fn convert(&self, mut object: Value, to: &str) -> Result<Value, ConversionError> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or(ConversionError::NoApiVersion)?;
        let from = api_version
            .strip_prefix(self.group)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(|| ConversionError::OtherGroup {
                api_version: api_version.to_owned(),
                group: self.group,
            })?
            .to_owned();
        let (mut at, target) = (self.index(&from)?, self.index(to)?);
        if !object.is_object() {
            return Err(ConversionError::NotAnObject);
        }
        while at != target {
            let versions = self.versions();
            if at < target {
                self.take_step(&mut object, &self.steps[at], Direction::Up)?;
                at += 1;
            } else {
                self.take_step(&mut object, &self.steps[at - 1], Direction::Down)?;
                at -= 1;
            }
            object["apiVersion"] = Value::String(format!("{}/{}", self.group, versions[at]));
        }
        Ok(object)
    }

    /// One step of [`Self::convert`] on every section of `object`.
    fn take_step(
        &self,
        object: &mut Value,
        step: &VersionStep,
        direction: Direction,
    ) -> Result<(), ConversionError> {
        let (from, to) = match direction {
            Direction::Up => (step.older, step.newer),
            Direction::Down => (step.newer, step.older),
        };
        let restore_key = self.kept_fields_annotation(to);
        let mut restored = match remove_annotation(object, &restore_key) {
            Some(text) => parse_kept(&restore_key, &text)?,
            None => Map::new(),
        };
        let mut kept = Map::new();
        for section in SECTIONS {
            let source = take(object, section);
            let candidate = restored.remove(section);
            let converted = match (&source, candidate) {
                // A kept copy still matching the section: the exact fields.
                (Some(source), Some(candidate))
                    if step.apply(candidate.clone(), direction.reverse()) == *source =>
                {
                    Some(candidate)
                }
                (Some(source), _) => {
                    let converted = step.apply(source.clone(), direction);
                    if step.apply(converted.clone(), direction.reverse()) != *source {
                        kept.insert(section.to_owned(), source.clone());
                    }
                    Some(converted)
                }
                (None, _) => None,
            };
            if let Some(converted) = converted {
                put(object, section, converted);
            }
        }
        if !kept.is_empty() {
            let text = Value::Object(kept).to_string();
            set_annotation(object, &self.kept_fields_annotation(from), text);
        }
        Ok(())
    }
}

/// The sections kept under `annotation`, by pointer.
fn parse_kept(annotation: &str, text: &str) -> Result<Map<String, Value>, ConversionError> {
    let bad = |reason: String| ConversionError::BadKeptFields {
        annotation: annotation.to_owned(),
        reason,
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            if let Some(other) = map.keys().find(|k| !SECTIONS.contains(&k.as_str())) {
                return Err(bad(format!("{other} is not a converted section")));
            }
            Ok(map)
        }
        Ok(_) => Err(bad("not a JSON object".to_owned())),
        Err(error) => Err(bad(error.to_string())),
    }
}

fn remove_annotation(object: &mut Value, key: &str) -> Option<String> {
    let metadata = object.get_mut("metadata")?.as_object_mut()?;
    let annotations = metadata.get_mut("annotations")?.as_object_mut()?;
    let value = annotations.remove(key)?;
    if annotations.is_empty() {
        metadata.remove("annotations");
    }
    value.as_str().map(str::to_owned)
}

fn set_annotation(object: &mut Value, key: &str, value: String) {
    put(
        object,
        &format!("/metadata/annotations/{}", escape(key)),
        Value::String(value),
    );
}

/// `key` as one token of a JSON pointer.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Removes and returns the value at `pointer`, then removes the objects on
/// its path that this left empty.
fn take(root: &mut Value, pointer: &str) -> Option<Value> {
    let (parent, last) = pointer.rsplit_once('/')?;
    let taken = root
        .pointer_mut(parent)?
        .as_object_mut()?
        .remove(&unescape(last))?;
    prune_empty_parents(root, pointer);
    Some(taken)
}

/// Removes the objects on the path to `pointer` that are empty or null,
/// innermost first.
fn prune_empty_parents(root: &mut Value, pointer: &str) {
    let Some((mut at, _)) = pointer.rsplit_once('/') else {
        return;
    };
    while !at.is_empty() {
        // A null group is as empty as `{}`: the API server's field
        // manager sends partial objects with their emptied objects null.
        let emptied = root
            .pointer(at)
            .is_some_and(|v| v.is_null() || v.as_object().is_some_and(Map::is_empty));
        if !emptied {
            break;
        }
        let (up, name) = at
            .rsplit_once('/')
            .expect("a non-empty pointer has a slash");
        if let Some(parent) = root.pointer_mut(up).and_then(Value::as_object_mut) {
            parent.remove(&unescape(name));
        }
        at = up;
    }
}

/// Sets `pointer` to `value`, making the objects on its path (a null on
/// it becomes one). A path through another value that is not an object
/// leaves `root` as it is.
fn put(root: &mut Value, pointer: &str, value: Value) {
    let mut at = root;
    let mut tokens = pointer.split('/').skip(1).map(unescape).peekable();
    while let Some(token) = tokens.next() {
        if at.is_null() {
            *at = Value::Object(Map::new());
        }
        let Some(map) = at.as_object_mut() else {
            return;
        };
        if tokens.peek().is_none() {
            map.insert(token, value);
            return;
        }
        at = map
            .entry(token)
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests;
