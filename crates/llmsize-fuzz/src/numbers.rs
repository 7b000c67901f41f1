//! The numeric mode: every integer of every model type's config set to the values that
//! break arithmetic, read by the adapters' reader and counted by the core, without the byte
//! stages.
//!
//! Each JSON seed is parsed once. Its integer fields are found structurally (nested objects
//! such as `text_config.num_hidden_layers`, and integers inside arrays: the first
//! [`ARRAY_HEAD`] elements and the last, since a per-layer list's elements are read alike).
//! Input `i` sets one field to one of [`VALUES`], or two fields at once. The order is
//! round-robin over model types first, then over a type's fields (in an order drawn from
//! the run's seed), then over the values: a short run reaches every type's reader in its
//! first few hundred inputs, and [`Plan::total`] inputs set every field of every type to
//! every value. Beyond that, inputs are drawn at random (a third of them set two fields).

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

use fastrand::Rng;
use serde_json::{Map, Value};

use crate::driver::{self, Job, Label, Source};
use crate::seeds::{Kind, Seed};
use crate::targets::StageReport;
use crate::{Options, Summary, mix};

/// The values a field is set to, most hostile first: counts that overflow every width the
/// readers use, a million (a count no model has, that an O(n) reader takes seconds over),
/// zero, the edges of `i32`/`u32`/`i64`, the smallest counts, then the wrong kinds of value
/// (a negative, a fraction, `null`, a boolean, a number as a string, one past `u64`).
pub const VALUES: [&str; 14] = [
    "18446744073709551615",
    "1000000",
    "0",
    "4294967295",
    "9223372036854775807",
    "2147483647",
    "1",
    "2",
    "-1",
    "1.5",
    "null",
    "true",
    "\"7\"",
    "18446744073709551616",
];

/// Inputs per field in the enumeration: each of [`VALUES`], then once with a second field of
/// the same config set too.
pub const SLOTS_PER_FIELD: usize = VALUES.len() + 1;

/// Elements of an array whose integers are mutated: the first this many, and the last.
pub const ARRAY_HEAD: usize = 3;

/// One step of a path into a config.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// An object's key.
    Key(String),
    /// An array's index.
    Index(usize),
}

/// Where an integer sits in a config: `text_config.num_hidden_layers`, `mrope_section[1]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FieldPath(pub Vec<Step>);

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(k) if i == 0 => write!(f, "{k}")?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Where a config seed came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A fixture file.
    File,
    /// Generated: a nested config of this type (a `text_config`) in this fixture, at this
    /// path (no fixture has the type at its top).
    Nested(String, String),
    /// Generated: the built-in preset of this id (no fixture has the type).
    Preset(&'static str),
    /// Generated: `{"model_type": T}` alone, the class defaults filling the rest.
    Bare,
}

/// One parsed config seed.
#[derive(Debug, Clone)]
pub struct ConfigSeed {
    /// The fixture's path, or `preset:ID` / `generated:TYPE`.
    pub name: String,
    /// Its `model_type`.
    pub model_type: String,
    /// Where it came from.
    pub origin: Origin,
    /// The config.
    pub map: Map<String, Value>,
    /// Its integer fields, in document order.
    pub fields: Vec<FieldPath>,
}

/// Every integer field of `map`, in document order.
#[must_use]
pub fn integer_fields(map: &Map<String, Value>) -> Vec<FieldPath> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    for (k, v) in map {
        path.push(Step::Key(k.clone()));
        walk(v, &mut path, &mut out);
        path.pop();
    }
    out
}

fn walk(value: &Value, path: &mut Vec<Step>, out: &mut Vec<FieldPath>) {
    match value {
        Value::Number(n) if n.is_u64() || n.is_i64() => out.push(FieldPath(path.clone())),
        Value::Object(map) => {
            for (k, v) in map {
                path.push(Step::Key(k.clone()));
                walk(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            let last = items.len().saturating_sub(1);
            for (i, v) in items.iter().enumerate() {
                if i < ARRAY_HEAD || i == last {
                    path.push(Step::Index(i));
                    walk(v, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// Set the field at `path` of `map` to `value`; false when the path is not there.
pub fn set(map: &mut Map<String, Value>, path: &FieldPath, value: Value) -> bool {
    let Some((Step::Key(first), rest)) = path.0.split_first() else {
        return false;
    };
    let Some(mut target) = map.get_mut(first) else {
        return false;
    };
    for step in rest {
        let next = match (step, target) {
            (Step::Key(k), Value::Object(m)) => m.get_mut(k),
            (Step::Index(i), Value::Array(a)) => a.get_mut(*i),
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        target = next;
    }
    *target = value;
    true
}

/// One model type's share of the enumeration.
#[derive(Debug, Clone)]
pub struct TypePlan {
    /// The `model_type`.
    pub model_type: &'static str,
    /// Its seeds (indices into [`Plan::seeds`]).
    pub seeds: Vec<usize>,
    /// Its fields: (seed, field of that seed), in the order the run's seed drew.
    pub slots: Vec<(usize, usize)>,
}

impl TypePlan {
    /// Inputs of this type in the enumeration: every field at every slot (one, the seed
    /// as it is, when it has no integer field).
    #[must_use]
    pub fn space(&self) -> u64 {
        (self.slots.len() as u64)
            .saturating_mul(SLOTS_PER_FIELD as u64)
            .max(1)
    }
}

/// One numeric input.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Index into [`Plan::types`].
    pub type_index: usize,
    /// Index into [`Plan::seeds`].
    pub seed: usize,
    /// Index into the type's slots of the first field set, if any.
    pub slot: Option<usize>,
    /// Index into [`VALUES`] of the value set to one field, or `VALUES.len()` when two
    /// fields are set; `None` for a seed as it is.
    pub value: Option<usize>,
    /// The fields set and their values.
    pub mutations: Vec<(FieldPath, Value)>,
}

/// The enumeration of a run: seeds, and every supported type's fields.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Config seeds: the fixtures' (of supported types), then the generated ones.
    pub seeds: Vec<ConfigSeed>,
    /// Every supported model type, in registry order.
    pub types: Vec<TypePlan>,
    values: Vec<Value>,
    /// Per type, its [`TypePlan::space`].
    spaces: Vec<u64>,
    /// The spaces in ascending order, and the sums of the first k of them.
    sorted: Vec<u64>,
    prefix: Vec<u64>,
    seed: u64,
}

impl Plan {
    /// The plan of run seed `seed` over the JSON seeds of `files`; every supported model
    /// type without a fixture gets a generated seed.
    #[must_use]
    pub fn new(files: &[Seed], seed: u64) -> Plan {
        let supported = llmsize_adapters::hf_config::supported_model_types();
        let parsed: Vec<(String, Map<String, Value>)> = files
            .iter()
            .filter(|s| s.kind == Kind::Json)
            .filter_map(|s| Some((s.name.clone(), parse(std::str::from_utf8(&s.bytes).ok()?)?)))
            .collect();
        let mut seeds: Vec<ConfigSeed> = parsed
            .iter()
            .filter_map(|(name, map)| config_seed(name.clone(), Origin::File, map.clone()))
            .filter(|c| supported.contains(&c.model_type.as_str()))
            .collect();
        for t in &supported {
            if !seeds.iter().any(|s| s.model_type == *t) {
                seeds.push(generated(&parsed, t));
            }
        }
        let types: Vec<TypePlan> = supported
            .iter()
            .enumerate()
            .map(|(index, t)| type_plan(&seeds, t, mix(seed, index as u64)))
            .collect();
        let values = VALUES
            .iter()
            .map(|v| serde_json::from_str(v).unwrap_or(Value::Null))
            .collect();
        let spaces: Vec<u64> = types.iter().map(TypePlan::space).collect();
        let mut sorted = spaces.clone();
        sorted.sort_unstable();
        let prefix = std::iter::once(0)
            .chain(sorted.iter().scan(0u64, |sum, s| {
                *sum = sum.saturating_add(*s);
                Some(*sum)
            }))
            .collect();
        Plan {
            seeds,
            types,
            values,
            spaces,
            sorted,
            prefix,
            seed,
        }
    }

    /// Inputs of the enumeration: after this many, every field of every type has been set
    /// to every value (and once with a second field).
    #[must_use]
    pub fn total(&self) -> u64 {
        self.spaces.iter().fold(0u64, |a, s| a.saturating_add(*s))
    }

    /// Distinct (model type, field path) pairs.
    #[must_use]
    pub fn distinct_fields(&self) -> usize {
        self.types
            .iter()
            .map(|t| self.paths(t, |_| true).len())
            .sum()
    }

    /// The distinct field paths of `t` whose slot passes `keep`.
    fn paths(&self, t: &TypePlan, keep: impl Fn(usize) -> bool) -> BTreeSet<&FieldPath> {
        t.slots
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .filter_map(|(_, (s, f))| self.seeds.get(*s)?.fields.get(*f))
            .collect()
    }

    /// The generated seeds: (model type, origin).
    #[must_use]
    pub fn generated(&self) -> Vec<(&str, &Origin)> {
        self.seeds
            .iter()
            .filter(|s| s.origin != Origin::File)
            .map(|s| (s.model_type.as_str(), &s.origin))
            .collect()
    }

    /// Input `iteration`.
    #[must_use]
    pub fn case(&self, iteration: u64) -> Option<Case> {
        let total = self.total();
        if iteration < total {
            let (type_index, round) = self.position(iteration)?;
            return self.enumerated(type_index, round, iteration);
        }
        let mut rng = Rng::with_seed(mix(self.seed, iteration));
        let count = self.types.len() as u64;
        let type_index = usize::try_from((iteration - total) % count.max(1)).ok()?;
        let t = self.types.get(type_index)?;
        if t.slots.is_empty() {
            return self.unmutated(type_index);
        }
        let slot = rng.usize(..t.slots.len());
        let value = rng.usize(..self.values.len());
        let pair = rng.u8(..3) == 0;
        self.with_fields(type_index, slot, value, pair.then_some(&mut rng))
    }

    /// The type and round of enumerated input `iteration`: round `r` gives each type whose
    /// space is larger than `r` one input, in registry order.
    fn position(&self, iteration: u64) -> Option<(usize, u64)> {
        // Inputs before round r: Σ min(space, r), the spaces up to r whole and r of each
        // larger one.
        let before = |r: u64| {
            let k = self.sorted.partition_point(|s| *s <= r);
            let larger = (self.sorted.len() - k) as u64;
            self.prefix
                .get(k)
                .copied()
                .unwrap_or(u64::MAX)
                .saturating_add(larger.saturating_mul(r))
        };
        let (mut lo, mut hi) = (0u64, self.sorted.last().copied()?);
        // The last round r with before(r) <= iteration.
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid) <= iteration {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let k = usize::try_from(iteration - before(lo)).ok()?;
        let type_index = self
            .spaces
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > lo)
            .nth(k)?
            .0;
        Some((type_index, lo))
    }

    fn enumerated(&self, type_index: usize, round: u64, iteration: u64) -> Option<Case> {
        let t = self.types.get(type_index)?;
        if t.slots.is_empty() {
            return self.unmutated(type_index);
        }
        let fields = t.slots.len() as u64;
        let slot = usize::try_from(round % fields).ok()?;
        let value_index = usize::try_from(round / fields).ok()?;
        if value_index < self.values.len() {
            return self.with_fields(type_index, slot, value_index, None);
        }
        let mut rng = Rng::with_seed(mix(self.seed, iteration));
        let value = rng.usize(..self.values.len());
        self.with_fields(type_index, slot, value, Some(&mut rng))
    }

    fn unmutated(&self, type_index: usize) -> Option<Case> {
        Some(Case {
            type_index,
            seed: *self.types.get(type_index)?.seeds.first()?,
            slot: None,
            value: None,
            mutations: Vec::new(),
        })
    }

    /// Slot `slot` of the type set to value `value` (an index into [`VALUES`]), and with
    /// `pair` a second field of the same seed set to a value drawn from it.
    fn with_fields(
        &self,
        type_index: usize,
        slot: usize,
        value: usize,
        pair: Option<&mut Rng>,
    ) -> Option<Case> {
        let &(seed, field) = self.types.get(type_index)?.slots.get(slot)?;
        let fields = &self.seeds.get(seed)?.fields;
        let mut mutations = vec![(fields.get(field)?.clone(), self.values.get(value)?.clone())];
        let mut kind = value;
        if let Some(rng) = pair.filter(|_| fields.len() > 1) {
            kind = self.values.len();
            // Another field: shifted by 1..len, so never the same.
            let other = (field + rng.usize(1..fields.len())) % fields.len();
            let value = self.values.get(rng.usize(..self.values.len()))?.clone();
            mutations.push((fields.get(other)?.clone(), value));
        }
        Some(Case {
            type_index,
            seed,
            slot: Some(slot),
            value: Some(kind),
            mutations,
        })
    }

    /// The config of `case`.
    #[must_use]
    pub fn config(&self, case: &Case) -> Map<String, Value> {
        let mut map = self
            .seeds
            .get(case.seed)
            .map(|s| s.map.clone())
            .unwrap_or_default();
        for (path, value) in &case.mutations {
            set(&mut map, path, value.clone());
        }
        map
    }

    /// The fields `case` sets: `` `a.b` = 7 and `c` = null ``.
    #[must_use]
    pub fn describe(case: &Case) -> String {
        if case.mutations.is_empty() {
            return "unmutated".to_owned();
        }
        case.mutations
            .iter()
            .map(|(p, v)| format!("`{p}` = {v}"))
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

/// A seed's object. Python's `json.dump` writes `NaN` and `Infinity`, which JSON does not
/// allow (Mamba-2's `time_step_limit`): a seed that has them is read with `null` in their
/// place, as the reader of the day may or may not accept them, and the integers are what
/// this mode mutates.
fn parse(text: &str) -> Option<Map<String, Value>> {
    let value = serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&non_finite_as_null(text)).ok());
    match value {
        Some(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// `text` with `NaN`, `Infinity` and `-Infinity` outside strings replaced by `null`.
fn non_finite_as_null(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let word = (!in_string)
            .then(|| {
                ["-Infinity", "Infinity", "NaN"]
                    .into_iter()
                    .find(|w| rest.starts_with(w))
            })
            .flatten();
        if let Some(word) = word {
            out.push_str("null");
            rest = rest.get(word.len()..).unwrap_or_default();
            continue;
        }
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => in_string = !in_string,
            _ => {}
        }
        out.push(c);
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
    }
    out
}

/// The first object of type `model_type` nested in `value` (not `value` itself), with its
/// path.
fn nested<'a>(
    value: &'a Map<String, Value>,
    model_type: &str,
) -> Option<(String, &'a Map<String, Value>)> {
    value.iter().find_map(|(k, v)| {
        let Value::Object(inner) = v else {
            return None;
        };
        if inner.get("model_type").and_then(Value::as_str) == Some(model_type) {
            return Some((k.clone(), inner));
        }
        nested(inner, model_type).map(|(p, m)| (format!("{k}.{p}"), m))
    })
}

fn config_seed(name: String, origin: Origin, map: Map<String, Value>) -> Option<ConfigSeed> {
    let model_type = map.get("model_type")?.as_str()?.to_owned();
    let fields = integer_fields(&map);
    Some(ConfigSeed {
        name,
        model_type,
        origin,
        map,
        fields,
    })
}

/// A seed for a type no fixture has at its top: a config of the type nested in a fixture
/// (a composite model's `text_config`), else its built-in preset, else the type alone.
fn generated(parsed: &[(String, Map<String, Value>)], model_type: &str) -> ConfigSeed {
    let inner = parsed.iter().find_map(|(name, map)| {
        let (path, inner) = nested(map, model_type)?;
        Some((name, path, inner.clone()))
    });
    let preset = || {
        llmsize_adapters::presets::PRESETS.iter().find_map(|p| {
            let map = parse(p.config)?;
            (map.get("model_type")?.as_str()? == model_type).then_some((p.id, map))
        })
    };
    let (name, origin, map) = match inner.map(Ok).or_else(|| preset().map(Err)) {
        Some(Ok((file, path, map))) => (
            format!("{file}:{path}"),
            Origin::Nested(file.clone(), path),
            map,
        ),
        Some(Err((id, map))) => (format!("preset:{id}"), Origin::Preset(id), map),
        None => {
            let mut map = Map::new();
            map.insert("model_type".into(), Value::String(model_type.to_owned()));
            (format!("generated:{model_type}"), Origin::Bare, map)
        }
    };
    let fields = integer_fields(&map);
    ConfigSeed {
        name,
        model_type: model_type.to_owned(),
        origin,
        map,
        fields,
    }
}

fn type_plan(seeds: &[ConfigSeed], model_type: &'static str, shuffle: u64) -> TypePlan {
    let mine: Vec<usize> = seeds
        .iter()
        .enumerate()
        .filter(|(_, s)| s.model_type == model_type)
        .map(|(i, _)| i)
        .collect();
    let mut slots: Vec<(usize, usize)> = mine
        .iter()
        .flat_map(|&s| {
            let n = seeds.get(s).map_or(0, |c| c.fields.len());
            (0..n).map(move |f| (s, f))
        })
        .collect();
    Rng::with_seed(shuffle).shuffle(&mut slots);
    TypePlan {
        model_type,
        seeds: mine,
        slots,
    }
}

/// What the run did per model type.
#[derive(Debug, Clone, Default)]
pub struct TypeStats {
    /// Inputs of this type run (its reader reached).
    pub inputs: u64,
    /// Inputs the reader accepted (the core's stages ran).
    pub accepted: u64,
    /// The slowest stage seen: its time, name and the input's mutation.
    pub slowest: Option<(Duration, &'static str, String)>,
    /// The stage with the largest allocation peak: bytes, name and the input's mutation.
    pub largest: Option<(usize, &'static str, String)>,
}

/// The result of a numeric run.
#[derive(Debug, Clone, Default)]
pub struct NumbersSummary {
    /// Inputs, stages and findings, as in the byte mode.
    pub run: Summary,
    /// Per type of [`Plan::types`], in its order.
    pub types: Vec<TypeStats>,
    /// Distinct (type, field path) pairs set at least once.
    pub fields_mutated: usize,
    /// When the enumeration was complete (every field at every value): inputs and time.
    pub covered_at: Option<(u64, Duration)>,
    /// Per value of [`VALUES`] (and last, two fields at once): inputs and the time of all
    /// their stages.
    pub by_value: Vec<(u64, Duration)>,
}

impl NumbersSummary {
    /// Supported types whose reader no input reached.
    #[must_use]
    pub fn unreached<'p>(&self, plan: &'p Plan) -> Vec<&'p str> {
        plan.types
            .iter()
            .zip(&self.types)
            .filter(|(_, s)| s.inputs == 0)
            .map(|(t, _)| t.model_type)
            .collect()
    }
}

struct NumbersSource<'p> {
    plan: &'p Plan,
    types: Vec<TypeStats>,
    hit: Vec<Vec<bool>>,
    current: Option<Case>,
    start: Instant,
    covered_at: Option<(u64, Duration)>,
    by_value: Vec<(u64, Duration)>,
}

impl Source for NumbersSource<'_> {
    fn input(&mut self, iteration: u64) -> Option<(Job, Label)> {
        let case = self.plan.case(iteration)?;
        let seed = self.plan.seeds.get(case.seed)?;
        let label = Label {
            seed_file: seed.name.clone(),
            model_type: Some(seed.model_type.clone()),
            mutation: Some(Plan::describe(&case)),
        };
        let job = Job::Config(self.plan.config(&case));
        self.current = Some(case);
        Some((job, label))
    }

    fn bytes(&self, iteration: u64) -> Vec<u8> {
        self.plan
            .case(iteration)
            .map(|c| self.plan.config(&c))
            .and_then(|m| serde_json::to_vec_pretty(&m).ok())
            .unwrap_or_default()
    }

    fn extension(&self) -> &'static str {
        "json"
    }

    fn replay_hint(&self, path: &str, iteration: u64) -> String {
        format!(
            "llmsize-fuzz --mode numbers --replay {path} (or --mode numbers --seed {} --dump {iteration})",
            self.plan.seed
        )
    }

    fn observe(&mut self, iteration: u64, label: &Label, reports: &[StageReport]) {
        let Some(case) = &self.current else {
            return;
        };
        if let Some(hit) = case
            .slot
            .and_then(|s| self.hit.get_mut(case.type_index)?.get_mut(s))
        {
            *hit = true;
        }
        if let Some(v) = case.value.and_then(|v| self.by_value.get_mut(v)) {
            v.0 += 1;
            v.1 += reports.iter().map(|r| r.elapsed).sum::<Duration>();
        }
        if iteration + 1 == self.plan.total() {
            self.covered_at = Some((iteration + 1, self.start.elapsed()));
        }
        let Some(stats) = self.types.get_mut(case.type_index) else {
            return;
        };
        stats.inputs += 1;
        if reports.iter().any(|r| r.stage.starts_with("core::")) {
            stats.accepted += 1;
        }
        let what = || label.mutation.clone().unwrap_or_default();
        for r in reports {
            if stats
                .slowest
                .as_ref()
                .is_none_or(|(d, _, _)| r.elapsed > *d)
            {
                stats.slowest = Some((r.elapsed, r.stage, what()));
            }
            if stats
                .largest
                .as_ref()
                .is_none_or(|(b, _, _)| r.peak_bytes > *b)
            {
                stats.largest = Some((r.peak_bytes, r.stage, what()));
            }
        }
    }
}

/// Run the numeric mode over `plan`. `progress` receives a line every few seconds.
pub fn run(options: &Options, plan: &Plan, progress: &mut dyn FnMut(&str)) -> NumbersSummary {
    let mut source = NumbersSource {
        plan,
        types: vec![TypeStats::default(); plan.types.len()],
        hit: plan
            .types
            .iter()
            .map(|t| vec![false; t.slots.len()])
            .collect(),
        current: None,
        start: Instant::now(),
        covered_at: None,
        by_value: vec![(0, Duration::ZERO); SLOTS_PER_FIELD],
    };
    let summary = driver::drive(options, &mut source, progress);
    let fields_mutated = plan
        .types
        .iter()
        .zip(&source.hit)
        .map(|(t, hit)| {
            plan.paths(t, |i| hit.get(i).copied().unwrap_or(false))
                .len()
        })
        .sum();
    NumbersSummary {
        run: summary,
        types: source.types,
        fields_mutated,
        covered_at: source.covered_at,
        by_value: source.by_value,
    }
}
