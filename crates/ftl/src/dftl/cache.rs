//! The entry caches of the demand-paged metadata (CPMT and CBIT): a fixed number of
//! entries, least recently used evicted first, each entry clean or dirty. Lookups and
//! updates are O(log n) in a map of at most a few hundred keys; the LRU order is an
//! intrusive list over the slots.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot<V> {
    key: u32,
    val: V,
    dirty: bool,
    prev: u32,
    next: u32,
}

/// An LRU cache of `cap` entries keyed by `u32`.
#[derive(Debug, Clone)]
pub(crate) struct EntryCache<V: Copy> {
    cap: usize,
    slots: Vec<Slot<V>>,
    map: BTreeMap<u32, u32>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    /// Free slots.
    spare: Vec<u32>,
}

impl<V: Copy> EntryCache<V> {
    /// An empty cache of `cap` (≥ 1) entries.
    pub fn new(cap: usize) -> Self {
        EntryCache {
            cap: cap.max(1),
            slots: Vec::new(),
            map: BTreeMap::new(),
            head: NIL,
            tail: NIL,
            spare: Vec::new(),
        }
    }

    /// How many entries it holds at most.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Whether every slot is taken.
    pub fn is_full(&self) -> bool {
        self.map.len() >= self.cap
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.slots[i as usize].prev, self.slots[i as usize].next);
        if p != NIL {
            self.slots[p as usize].next = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.slots[n as usize].prev = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.slots[i as usize].prev = NIL;
        self.slots[i as usize].next = self.head;
        if self.head != NIL {
            self.slots[self.head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// The value of `key` if cached, made most recently used.
    pub fn get(&mut self, key: u32) -> Option<V> {
        let i = *self.map.get(&key)?;
        self.unlink(i);
        self.push_front(i);
        Some(self.slots[i as usize].val)
    }

    /// The value of `key` if cached, without touching the LRU order.
    pub fn peek(&self, key: u32) -> Option<(V, bool)> {
        let i = *self.map.get(&key)?;
        let s = &self.slots[i as usize];
        Some((s.val, s.dirty))
    }

    /// Sets a cached entry's value (most recently used; dirty if `dirty`, else unchanged).
    /// `false` if `key` is not cached.
    pub fn update(&mut self, key: u32, val: V, dirty: bool) -> bool {
        let Some(&i) = self.map.get(&key) else {
            return false;
        };
        self.unlink(i);
        self.push_front(i);
        let s = &mut self.slots[i as usize];
        s.val = val;
        s.dirty |= dirty;
        true
    }

    /// Inserts `key` (not cached) as most recently used. The caller made room first.
    pub fn insert(&mut self, key: u32, val: V, dirty: bool) {
        debug_assert!(!self.map.contains_key(&key) && !self.is_full());
        let slot = Slot {
            key,
            val,
            dirty,
            prev: NIL,
            next: NIL,
        };
        let i = match self.spare.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.map.insert(key, i);
        self.push_front(i);
    }

    /// The least recently used entry: key, value, dirty.
    pub fn lru(&self) -> Option<(u32, V, bool)> {
        (self.tail != NIL).then(|| {
            let s = &self.slots[self.tail as usize];
            (s.key, s.val, s.dirty)
        })
    }

    /// Drops `key` from the cache.
    pub fn remove(&mut self, key: u32) {
        if let Some(i) = self.map.remove(&key) {
            self.unlink(i);
            self.spare.push(i);
        }
    }

    /// Marks `key` clean (its value was written back).
    pub fn clean(&mut self, key: u32) {
        if let Some(&i) = self.map.get(&key) {
            self.slots[i as usize].dirty = false;
        }
    }

    /// Dirty entries with keys in `[lo, hi)`: (key, value), ascending.
    pub fn dirty_in(&self, lo: u32, hi: u32) -> Vec<(u32, V)> {
        self.map
            .range(lo..hi)
            .filter_map(|(&k, &i)| {
                let s = &self.slots[i as usize];
                s.dirty.then_some((k, s.val))
            })
            .collect()
    }

    /// Every dirty key, ascending.
    pub fn dirty_keys(&self) -> Vec<u32> {
        self.map
            .iter()
            .filter_map(|(&k, &i)| self.slots[i as usize].dirty.then_some(k))
            .collect()
    }

    /// Every entry: (key, value, dirty), ascending by key.
    pub fn entries(&self) -> impl Iterator<Item = (u32, V, bool)> + '_ {
        self.map.iter().map(|(&k, &i)| {
            let s = &self.slots[i as usize];
            (k, s.val, s.dirty)
        })
    }

    /// Checks the list against the map: every cached key once in LRU order, no more than
    /// the capacity.
    pub fn check(&self) -> Result<(), alloc::string::String> {
        if self.map.len() > self.cap {
            return Err(alloc::format!(
                "{} entries in a cache of {}",
                self.map.len(),
                self.cap
            ));
        }
        let mut n = 0;
        let mut i = self.head;
        let mut prev = NIL;
        while i != NIL {
            let s = &self.slots[i as usize];
            if s.prev != prev || self.map.get(&s.key) != Some(&i) {
                return Err(alloc::format!("LRU list broken at key {}", s.key));
            }
            n += 1;
            if n > self.map.len() {
                return Err("LRU list longer than the map".into());
            }
            prev = i;
            i = s.next;
        }
        if n != self.map.len() || self.tail != prev {
            return Err(alloc::format!(
                "LRU list holds {n} entries, the map {}",
                self.map.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_and_dirty_tracking() {
        let mut c = EntryCache::new(3);
        c.insert(1, 10u32, false);
        c.insert(2, 20, true);
        c.insert(3, 30, false);
        assert!(c.is_full());
        assert_eq!(c.lru(), Some((1, 10, false)));
        assert_eq!(c.get(1), Some(10));
        assert_eq!(c.lru(), Some((2, 20, true)));
        c.clean(2);
        assert_eq!(c.lru(), Some((2, 20, false)));
        c.remove(2);
        c.insert(7, 70, true);
        assert!(c.update(3, 31, true));
        assert_eq!(c.dirty_in(0, 10), alloc::vec![(3, 31), (7, 70)]);
        assert_eq!(c.dirty_keys(), alloc::vec![3, 7]);
        c.check().unwrap();
        assert_eq!(c.lru(), Some((1, 10, false)));
    }
}
