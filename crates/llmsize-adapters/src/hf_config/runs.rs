//! Per-layer sequences (which layers slide, which are sparse, which carry an indexer) held as
//! runs of equal values.
//!
//! A config says how many layers a model has, and a hostile one says a million; the rules
//! that a `__post_init__` applies to them (every 6th layer global, the first `k` dense, every
//! other layer sparse) are periodic. Built as runs, arithmetically, a sequence costs memory
//! and work in its number of runs, never one entry per layer; a list the config itself
//! carries (`layer_types`) is read entry by entry, which is linear in the input.

use std::collections::HashMap;
use std::hash::Hash;
use std::ops::Range;

use llmsize_core::spec::{Layer, Layers};

/// A sequence of values, as `(value, count)` runs with `count ≥ 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Runs<K> {
    runs: Vec<(K, u64)>,
}

impl<K> Default for Runs<K> {
    fn default() -> Self {
        Runs { runs: Vec::new() }
    }
}

impl<K: Clone + PartialEq> Runs<K> {
    /// `n` copies of `k`.
    pub(crate) fn uniform(k: K, n: u64) -> Self {
        let mut out = Runs::default();
        out.push(k, n);
        out
    }

    /// One run per entry of a list (consecutive equal entries join).
    pub(crate) fn from_list(items: impl IntoIterator<Item = K>) -> Self {
        let mut out = Runs::default();
        for k in items {
            out.push(k, 1);
        }
        out
    }

    /// `n` values following `period` over and over (cut after `n`): `[(a, 5), (b, 1)]` is
    /// "every 6th is `b`". Work in the number of runs made, never in `n` itself; entries of
    /// 0 are skipped, and a period of no values gives no values.
    pub(crate) fn periodic(n: u64, period: &[(K, u64)]) -> Self {
        let mut out = Runs::default();
        if period.iter().all(|(_, c)| *c == 0) {
            return out;
        }
        let mut left = n;
        while left > 0 {
            for (k, c) in period {
                let take = left.min(*c);
                out.push(k.clone(), take);
                left = left.saturating_sub(take);
                if left == 0 {
                    break;
                }
            }
        }
        out
    }

    /// `yes` at the listed indices (any order, repeats allowed; those at or past `n` are
    /// ignored), `no` elsewhere, over `n` values: work in the number of indices.
    pub(crate) fn marked(n: u64, indices: impl IntoIterator<Item = u64>, yes: &K, no: &K) -> Self {
        let mut at: Vec<u64> = indices.into_iter().filter(|i| *i < n).collect();
        at.sort_unstable();
        at.dedup();
        let mut out = Runs::default();
        let mut next = 0u64;
        for i in at {
            // `next ≤ i < n`: both differences are within range.
            out.push(no.clone(), i.saturating_sub(next));
            out.push(yes.clone(), 1);
            // saturates: never, i < n ≤ u64::MAX (above).
            next = i.saturating_add(1);
        }
        out.push(no.clone(), n.saturating_sub(next));
        out
    }

    /// Append `count` copies of `k` (nothing when 0), joining the last run when equal.
    pub(crate) fn push(&mut self, k: K, count: u64) {
        if count == 0 {
            return;
        }
        if let Some((last, c)) = self.runs.last_mut()
            && *last == k
            && let Some(sum) = c.checked_add(count)
        {
            *c = sum;
            return;
        }
        // A sum past 2^64 − 1 stays two runs: the sequence is still exact.
        self.runs.push((k, count));
    }

    /// `other`'s values after these.
    pub(crate) fn append(&mut self, other: Runs<K>) {
        for (k, c) in other.runs {
            self.push(k, c);
        }
    }

    /// The runs, in order, as values (for a lazy [`zip_runs`]).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        self.runs.iter().cloned()
    }

    /// The runs, in order.
    pub(crate) fn runs(&self) -> &[(K, u64)] {
        &self.runs
    }

    /// Number of values (`None` past 2^64 − 1, which no reader builds).
    pub(crate) fn len(&self) -> Option<u64> {
        self.runs
            .iter()
            .try_fold(0u64, |acc, (_, c)| acc.checked_add(*c))
    }

    /// True when some value satisfies `f`.
    pub(crate) fn any(&self, mut f: impl FnMut(&K) -> bool) -> bool {
        self.runs.iter().any(|(k, _)| f(k))
    }

    /// Each value mapped by `f` (called once per run).
    pub(crate) fn map<L: Clone + PartialEq>(&self, mut f: impl FnMut(&K) -> L) -> Runs<L> {
        let mut out = Runs::default();
        for (k, c) in &self.runs {
            out.push(f(k), *c);
        }
        out
    }

    /// The values in `range` replaced by `k`: work in the number of runs.
    pub(crate) fn overwrite(&mut self, range: Range<u64>, k: &K) {
        let mut out = Runs::default();
        let mut start = 0u64;
        for (v, c) in std::mem::take(&mut self.runs) {
            // saturates: never, the runs' counts sum to the length, a u64.
            let end = start.saturating_add(c);
            // The parts of this run before, inside and after `range`.
            let before = range.start.clamp(start, end).saturating_sub(start);
            let inside = range
                .end
                .clamp(start, end)
                .saturating_sub(range.start.clamp(start, end));
            let after = end.saturating_sub(range.end.clamp(start, end));
            out.push(v.clone(), before);
            out.push(k.clone(), inside);
            out.push(v, after);
            start = end;
        }
        *self = out;
    }

    /// Pairs of this sequence's and `other`'s values, as long as the shorter of the two:
    /// work in the number of runs of both.
    pub(crate) fn zip<L: Clone + PartialEq>(&self, other: &Runs<L>) -> Runs<(K, L)> {
        let mut out = Runs::default();
        for (k, c) in zip_runs(self.runs.iter().cloned(), other.runs.iter().cloned()) {
            out.push(k, c);
        }
        out
    }

    /// Layers of these values, each distinct value's layer made once by `make`.
    pub(crate) fn layers(&self, make: impl FnMut(&K) -> Layer) -> Layers
    where
        K: Hash + Eq,
    {
        layers_of(|| self.runs.iter().cloned(), make)
    }

    /// [`Runs::zip`] then [`Runs::layers`], without holding the pairs: a stack's windows
    /// with its MoE pattern become layers run by run.
    pub(crate) fn zip_layers<L: Clone + Hash + Eq>(
        &self,
        other: &Runs<L>,
        make: impl FnMut(&(K, L)) -> Layer,
    ) -> Layers
    where
        K: Hash + Eq,
    {
        layers_of(
            || zip_runs(self.runs.iter().cloned(), other.runs.iter().cloned()),
            make,
        )
    }
}

/// Two sequences of runs as the runs of their pairs, as long as the shorter, computed as they
/// are read (nothing is held but the two current runs).
pub(crate) fn zip_runs<K: Clone, L: Clone>(
    mut a: impl Iterator<Item = (K, u64)>,
    mut b: impl Iterator<Item = (L, u64)>,
) -> impl Iterator<Item = ((K, L), u64)> {
    let (mut x, mut y) = (a.next(), b.next());
    std::iter::from_fn(move || {
        loop {
            let ((ka, ca), (kb, cb)) = (x.take()?, y.take()?);
            let take = ca.min(cb);
            let (ra, rb) = (ca.saturating_sub(take), cb.saturating_sub(take));
            let pair = (ka.clone(), kb.clone());
            x = if ra == 0 { a.next() } else { Some((ka, ra)) };
            y = if rb == 0 { b.next() } else { Some((kb, rb)) };
            if take > 0 {
                return Some((pair, take));
            }
        }
    })
}

/// Layers of the values `runs()` yields (called twice: once to make each distinct value's
/// layer, once to place them), each made once by `make`.
///
/// With a few distinct layers, [`Layers::from_pattern`] is handed each layer's index among
/// them (a `usize`, found among at most [`FEW`] values), so the per-layer work is that
/// comparison and memory is the stack's own runs; with more (a config's own list of per-layer
/// widths), each run is pushed with its layer, which costs a clone per run — and such a stack
/// has about as many runs as distinct layers, each built anyway.
pub(crate) fn layers_of<K: Clone + Hash + Eq, I: Iterator<Item = (K, u64)>>(
    runs: impl Fn() -> I,
    mut make: impl FnMut(&K) -> Layer,
) -> Layers {
    let mut keys: Vec<K> = Vec::new();
    let mut made: Vec<Layer> = Vec::new();
    let mut index: HashMap<K, usize> = HashMap::new();
    let find = |keys: &[K], index: &HashMap<K, usize>, k: &K| {
        if keys.len() <= FEW {
            keys.iter().position(|m| m == k)
        } else {
            index.get(k).copied()
        }
    };
    for (k, _) in runs() {
        if find(&keys, &index, &k).is_none() {
            made.push(make(&k));
            index.insert(k.clone(), keys.len());
            keys.push(k);
        }
    }
    if made.len() <= FEW {
        let at = runs().flat_map(|(k, c)| {
            let i = find(&keys, &index, &k).unwrap_or(0);
            std::iter::repeat_n(i, usize::try_from(c).unwrap_or(0))
        });
        return Layers::from_pattern(at, |i| made.get(*i).cloned().unwrap_or_else(absent_layer));
    }
    let mut out = Layers::new();
    for (k, c) in runs() {
        if let Some(layer) = find(&keys, &index, &k).and_then(|i| made.get(i)) {
            out.push_run(layer.clone(), c);
        }
    }
    out
}

/// Distinct values found by comparing one by one (beyond, by hashing), and the most layers
/// a stack is built from one index per layer: [`Layers::from_pattern`] compares each layer's
/// index with those seen, so a layer costs at most this many `usize` comparisons.
const FEW: usize = 32;

impl Runs<bool> {
    /// Values `true` from index `from` on (`false` before), over `n`.
    pub(crate) fn from_index(n: u64, from: u64) -> Self {
        let mut out = Runs::default();
        out.push(false, from.min(n));
        out.push(true, n.saturating_sub(from));
        out
    }

    /// `i % period == offset` for each index `i < n` (never, when `offset ≥ period`).
    pub(crate) fn at_offset(n: u64, period: u64, offset: u64) -> Self {
        match period.checked_sub(offset).and_then(|r| r.checked_sub(1)) {
            Some(after) => Runs::periodic(n, &[(false, offset), (true, 1), (false, after)]),
            None => Runs::uniform(false, n),
        }
    }

    /// The number of `true` values (`None` past 2^64 − 1).
    pub(crate) fn count_true(&self) -> Option<u64> {
        self.runs
            .iter()
            .filter(|(k, _)| *k)
            .try_fold(0u64, |acc, (_, c)| acc.checked_add(*c))
    }

    /// `(i + 1) % every == 0` for each index `i < n` (`every ≥ 1`): `every − 1` false, then
    /// one true, repeated.
    pub(crate) fn every(n: u64, every: u64) -> Self {
        Runs::periodic(n, &[(false, every.saturating_sub(1)), (true, 1)])
    }
}

/// A layer with nothing in it (stands for a kind index that is never out of range).
fn absent_layer() -> Layer {
    Layer {
        attention: llmsize_core::spec::Attention::Absent,
        cross_attention: None,
        ffn: llmsize_core::spec::Ffn::Absent,
        norms: Vec::new(),
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    }
}

/// A stack's layers rebuilt from each layer's kind and its value in `keys` (layer `i` with
/// value `i`): each distinct (kind, value) is built once by `build`, so the work is in the
/// number of runs. Layers past the end of `keys` are kept as they are.
pub(crate) fn remap<K: Clone + Hash + Eq, E>(
    layers: &Layers,
    keys: &Runs<K>,
    mut build: impl FnMut(&Layer, &K) -> Result<Layer, E>,
) -> Result<Layers, E> {
    let kinds = layers.kinds();
    let (have, want) = (keys.len().unwrap_or(u64::MAX), layers.len());
    let padded = || {
        let keyed = keys.runs.iter().map(|(k, c)| (Some(k.clone()), *c));
        let rest = std::iter::once((None, want.saturating_sub(have)));
        keyed.chain(rest)
    };
    let stack = || layers.runs().iter().map(|r| (r.kind, r.count));
    let mut err = None;
    let out = layers_of(
        || zip_runs(stack(), padded()),
        |(kind, k)| {
            let Some(layer) = kinds.get(*kind) else {
                return absent_layer();
            };
            let Some(k) = k else {
                return layer.clone();
            };
            match build(layer, k) {
                Ok(l) => l,
                Err(e) => {
                    err.get_or_insert(e);
                    layer.clone()
                }
            }
        },
    );
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand<K: Clone + PartialEq>(r: &Runs<K>) -> Vec<K> {
        r.runs()
            .iter()
            .flat_map(|(k, c)| std::iter::repeat_n(k.clone(), usize::try_from(*c).unwrap()))
            .collect()
    }

    #[test]
    fn periodic_rules_match_their_per_layer_definitions() {
        for n in [0u64, 1, 5, 6, 7, 13, 100] {
            for every in [1u64, 2, 3, 6, 1000] {
                let by_rule: Vec<bool> = (0..n).map(|i| (i + 1) % every == 0).collect();
                assert_eq!(expand(&Runs::every(n, every)), by_rule, "{n} {every}");
            }
            for from in [0u64, 1, 3, 200] {
                let by_rule: Vec<bool> = (0..n).map(|i| i >= from).collect();
                assert_eq!(expand(&Runs::from_index(n, from)), by_rule, "{n} {from}");
            }
        }
        for n in [0u64, 1, 9, 20] {
            for (period, offset) in [(1u64, 0u64), (4, 1), (6, 5), (3, 3), (8, 4)] {
                let by_rule: Vec<bool> = (0..n).map(|i| i % period == offset).collect();
                let r = Runs::at_offset(n, period, offset);
                assert_eq!(expand(&r), by_rule, "{n} {period} {offset}");
                let count = by_rule.iter().filter(|x| **x).count() as u64;
                assert_eq!(r.count_true(), Some(count));
            }
        }
        // A period of 2^64 − 1 over a million layers: one run, made at once.
        let r = Runs::every(1_000_000, u64::MAX);
        assert_eq!(r.runs(), &[(false, 1_000_000)]);
        // A million layers of period 6: 166,666 periods of two runs, then 4 more layers.
        assert_eq!(Runs::every(1_000_000, 6).runs().len(), 333_333);
    }

    #[test]
    fn marks_overwrites_and_zips() {
        let m = Runs::marked(8, [5, 1, 1, 9], &'y', &'n');
        assert_eq!(expand(&m), "nynnnynn".chars().collect::<Vec<_>>());
        let mut o = Runs::uniform('a', 6);
        o.overwrite(2..4, &'b');
        o.overwrite(5..100, &'c');
        assert_eq!(expand(&o), "aabbac".chars().collect::<Vec<_>>());
        let z = Runs::every(6, 2).zip(&Runs::from_index(6, 3));
        let by_rule: Vec<(bool, bool)> = (0..6u64).map(|i| ((i + 1) % 2 == 0, i >= 3)).collect();
        assert_eq!(expand(&z), by_rule);
        assert_eq!(z.len(), Some(6));
        assert_eq!(Runs::<u8>::default().len(), Some(0));
    }
}
