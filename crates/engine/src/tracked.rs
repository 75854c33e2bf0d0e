//! A map that remembers which of its entries changed: what lets a durable lab save only what an
//! action touched (the journal's entries) instead of every group, topic and consumer it holds.
//!
//! Reading is the plain [`BTreeMap`] (through `Deref`); every way to change an entry is a
//! method here that notes its key first. There is no way to get `&mut V` without the note, so a
//! change the journal misses cannot compile. A note is cheap and idempotent: an entry noted but
//! not really changed is only saved again, in full.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Deref;

/// A `BTreeMap<String, V>` whose changed keys are noted until [`Tracked::forget_changes`].
#[derive(Debug, Clone)]
pub struct Tracked<V> {
    map: BTreeMap<String, V>,
    changed: BTreeSet<String>,
}

impl<V> Default for Tracked<V> {
    fn default() -> Self {
        Self {
            map: BTreeMap::new(),
            changed: BTreeSet::new(),
        }
    }
}

impl<V> From<BTreeMap<String, V>> for Tracked<V> {
    /// A map as a save left it: nothing changed yet.
    fn from(map: BTreeMap<String, V>) -> Self {
        Self {
            map,
            changed: BTreeSet::new(),
        }
    }
}

impl<V> Deref for Tracked<V> {
    type Target = BTreeMap<String, V>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl<'a, V> IntoIterator for &'a Tracked<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = std::collections::btree_map::Iter<'a, String, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.map.iter()
    }
}

impl<V> Tracked<V> {
    /// The entry to change, noted.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        let value = self.map.get_mut(key)?;
        if !self.changed.contains(key) {
            self.changed.insert(key.to_string());
        }
        Some(value)
    }

    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        self.changed.insert(key.clone());
        self.map.insert(key, value)
    }

    pub fn remove(&mut self, key: &str) -> Option<V> {
        let removed = self.map.remove(key);
        if removed.is_some() {
            self.changed.insert(key.to_string());
        }
        removed
    }

    /// The entry for `key`, made with `make` if absent; noted either way.
    pub fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        self.changed.insert(key.to_string());
        self.map.entry(key.to_string()).or_insert_with(make)
    }

    /// Every value, to change: every key is noted (for rare, lab-wide changes — a topic
    /// deleted, the audit's raw logs switched on).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.changed.extend(self.map.keys().cloned());
        self.map.values_mut()
    }

    /// The keys changed (added, changed or removed) since the last [`Tracked::forget_changes`].
    pub fn changed(&self) -> impl Iterator<Item = &String> {
        self.changed.iter()
    }

    /// What was changed is saved: nothing is noted any more.
    pub fn forget_changes(&mut self) {
        self.changed.clear();
    }

    /// The map as a plain one.
    pub fn into_inner(self) -> BTreeMap<String, V> {
        self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_is_noted_and_reading_notes_nothing() {
        let mut m: Tracked<u32> = BTreeMap::from([("a".into(), 1), ("b".into(), 2)]).into();
        assert_eq!(m.get("a"), Some(&1));
        assert_eq!(m.changed().count(), 0, "reading");
        *m.get_mut("a").expect("a") += 1;
        assert!(m.get_mut("missing").is_none());
        m.insert("c".into(), 3);
        m.remove("b");
        m.remove("never");
        *m.get_or_insert_with("d", || 0) += 4;
        assert_eq!(m.changed().cloned().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        m.forget_changes();
        assert_eq!(m.changed().count(), 0);
        m.values_mut().for_each(|v| *v += 1);
        assert_eq!(m.changed().count(), 3, "a, c and d");
        assert_eq!(
            m.into_inner(),
            BTreeMap::from([("a".into(), 3), ("c".into(), 4), ("d".into(), 5)])
        );
    }
}
