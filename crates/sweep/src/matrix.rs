//! Matrix files: parse, expand into cells, validate every cell before anything runs.
//!
//! ```toml
//! name = "waf"
//! title = "Write amplification against over-provisioning"
//! kind = "experiment"              # or "ap-table1", "recovery"
//! base = "waf-base.toml"           # the experiment every cell starts from (experiment kind)
//! metrics = ["waf"]                # the report's columns (every metric is in results.*)
//!
//! [set]                            # config keys set in every cell
//! "workload.requests" = 200000
//! [quick.set]                      # ... and under --quick
//! "workload.requests" = 20000
//! [quick.last]                     # under --quick, after the axis values (which would
//! "workload.requests" = 20000      # otherwise win over [quick.set])
//!
//! [[axis]]
//! name = "victim"                  # column name; also the config key unless `key` is given
//! key = "ftl.page.victim"
//! label = "GC victim policy"
//! values = ["greedy", "cost-benefit"]
//!
//! [[axis]]
//! name = "seed"
//! values = [1, 2, 3]
//! quick = [1]                      # the values under --quick
//! average = true                   # a replicate axis: tables show the mean over it
//!
//! [[published]]
//! at = { victim = "greedy", op = 0.1 }
//! metric = "waf"
//! value = 5.6
//! source = "Paper, Table 2, p. 5"
//!
//! [[trend]]
//! claim = "greedy writes no more than cost-benefit under uniform random writes"
//! kind = "wins"                    # also "beats", "monotone", "matches", "consistent"
//! metric = "waf"
//! axis = "victim"
//! winner = "greedy"
//! loser = "cost-benefit"
//! better = "lower"
//!
//! [[plot]]
//! metric = "waf"
//! x = "op"
//! series = "victim"
//! y_label = "write amplification (NAND programs / host writes)"
//! ```
//!
//! Cells are the cartesian product of the axes, first axis slowest. Each cell's
//! configuration is the base, then `[set]` (and `[quick.set]` under `--quick`), then the
//! cell's axis values, then (under `--quick`) `[quick.last]`, each a dotted key path into
//! the configuration; the kind parses it with unknown keys rejected, so a misspelled axis
//! or key is an error naming it.

pub use crate::claims::{Better, Direction, Limit, Plot, Published, Trend, TrendKind};
use crate::claims::{PlotFile, PublishedFile, TrendFile};
use crate::kinds::Kind;
pub use crate::space::{matches_at, show, Axis, Cell, Point};
use crate::SweepError;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use toml::Value;

/// Where a matrix comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file; its base experiment (and the traces that names) are relative to it.
    File(PathBuf),
    /// A matrix shipped in the binary (`experiments/NAME.toml`).
    Builtin(String),
}

impl Source {
    /// How errors and plans name it: the file path or `builtin:NAME`.
    pub fn label(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Builtin(n) => format!("builtin:{n}"),
        }
    }

    /// The command that reproduces a run of it, the same wherever the file lives (reports
    /// name it; a local and a Slurm run of one matrix write the same report).
    pub fn command(&self, quick: bool) -> String {
        let q = if quick { " --quick" } else { "" };
        match self {
            Source::File(p) => format!(
                "nandlab sweep {}{q}",
                p.file_name().map_or_else(
                    || p.display().to_string(),
                    |f| f.to_string_lossy().into_owned()
                )
            ),
            Source::Builtin(n) => format!("nandlab reproduce {n}{q}"),
        }
    }

    /// Parses a [`Source::label`] back.
    pub fn from_label(s: &str) -> Source {
        match s.strip_prefix("builtin:") {
            Some(n) => Source::Builtin(n.to_string()),
            None => Source::File(PathBuf::from(s)),
        }
    }

    /// The text of the matrix and of a file it names (`rel`, relative to the matrix).
    fn read(&self, rel: Option<&str>) -> Result<(String, String), SweepError> {
        match self {
            Source::File(p) => {
                let path = match rel {
                    None => p.clone(),
                    Some(r) => p.parent().unwrap_or(Path::new("")).join(r),
                };
                let text = std::fs::read_to_string(&path).map_err(|e| SweepError::Io {
                    path: path.display().to_string(),
                    message: format!("cannot read: {e}"),
                })?;
                Ok((text, path.display().to_string()))
            }
            Source::Builtin(n) => {
                let file = match rel {
                    None => format!("{n}.toml"),
                    Some(r) => r.to_string(),
                };
                let text = crate::builtin::file(&file).ok_or_else(|| SweepError::Matrix {
                    file: self.label(),
                    message: match rel {
                        None => format!(
                            "no shipped matrix named {n:?} (shipped: {})",
                            crate::builtin::names().join(", ")
                        ),
                        Some(r) => format!("base = {r:?}: no such shipped file"),
                    },
                })?;
                Ok((text.to_string(), format!("experiments/{file}")))
            }
        }
    }

    /// The directory relative paths inside the base experiment resolve against.
    fn base_dir(&self) -> PathBuf {
        match self {
            Source::File(p) => p.parent().map(Path::to_path_buf).unwrap_or_default(),
            // The `experiments/` folder of the source tree the binary was built from: a
            // shipped matrix's relative paths (trace files) resolve there from any
            // directory.
            Source::Builtin(_) => {
                PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments"))
            }
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFile {
    name: String,
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    kind: Kind,
    base: Option<String>,
    #[serde(default)]
    set: toml::Table,
    #[serde(default)]
    quick: QuickFile,
    #[serde(default, rename = "axis")]
    axes: Vec<AxisFile>,
    #[serde(default)]
    metrics: Vec<String>,
    #[serde(default)]
    published: Vec<PublishedFile>,
    #[serde(default, rename = "trend")]
    trends: Vec<TrendFile>,
    #[serde(default, rename = "plot")]
    plots: Vec<PlotFile>,
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuickFile {
    #[serde(default)]
    set: toml::Table,
    /// Keys set after the axis values under `--quick` (where an axis profile would
    /// otherwise win: a smaller load for every scheme of a profile axis).
    #[serde(default)]
    last: toml::Table,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AxisFile {
    name: String,
    key: Option<String>,
    label: Option<String>,
    values: Vec<Value>,
    quick: Option<Vec<Value>>,
    #[serde(default)]
    average: bool,
    /// Named settings: each value of the axis names one, whose dotted keys a cell sets
    /// (a scheme and its baselines differ in several keys at once).
    #[serde(default)]
    profiles: BTreeMap<String, toml::Table>,
}

/// A profile's settings as dotted keys: `{ ftl = { page = { victim = "greedy" } } }` and
/// `{ "ftl.page.victim" = "greedy" }` both give `ftl.page.victim`. A table whose keys are
/// dotted paths is kept as one value only where it is a leaf (not a table).
fn flatten_keys(prefix: &str, t: &toml::Table, out: &mut Vec<(String, Value)>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(inner) => flatten_keys(&key, inner, out),
            _ => out.push((key, v.clone())),
        }
    }
}

/// An expanded, validated matrix.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// Short name (`waf`).
    pub name: String,
    /// Title of the report.
    pub title: String,
    /// What it reproduces and how.
    pub description: String,
    /// Notes shown in the report (differences from the paper, explained).
    pub notes: Vec<String>,
    /// What a cell runs.
    pub kind: Kind,
    /// Where it came from.
    pub source: Source,
    /// Whether this is the `--quick` expansion.
    pub quick: bool,
    /// Relative paths in cell configurations resolve against this.
    pub base_dir: PathBuf,
    /// Axes in order.
    pub axes: Vec<Axis>,
    /// The report's metric columns.
    pub metrics: Vec<String>,
    /// Published values present in this expansion.
    pub published: Vec<Published>,
    /// Published values whose cells are not in this (`--quick`) expansion.
    pub published_skipped: usize,
    /// Trend claims.
    pub trends: Vec<Trend>,
    /// Plots.
    pub plots: Vec<Plot>,
    /// The cells.
    pub cells: Vec<Cell>,
    /// Policies of your own the cells' `[ftl]` may name ([`Matrix::load_with`]).
    pub registry: ftl::policy::Registry,
    /// CRC-64 over the name, the quick flag and every cell's fingerprint.
    pub fingerprint: u64,
}

const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_ECMA_182);

fn ensure_key_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// Sets dotted `path` in `table` to `value`, creating tables on the way.
pub fn set_path(table: &mut toml::Table, path: &str, value: Value) -> Result<(), String> {
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().expect("split yields one part");
    let mut t = table;
    let mut walked = String::new();
    for p in parts {
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(p);
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| Value::Table(toml::Table::new()));
        t = match entry {
            Value::Table(x) => x,
            other => {
                return Err(format!(
                    "{walked} is {} {}, not a table",
                    other.type_str(),
                    other
                ))
            }
        };
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// Parses TOML text into `T`, errors as `file:line:col: message`.
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &str,
) -> Result<T, SweepError> {
    toml::from_str(text).map_err(|e| SweepError::Matrix {
        file: match sim::config::toml_error_at(&e, text) {
            Some((line, col)) => format!("{file}:{line}:{col}"),
            None => file.to_string(),
        },
        message: e.message().trim().to_string(),
    })
}

impl Matrix {
    /// Loads, expands and validates the matrix at `source` (the `--quick` expansion when
    /// `quick`). Every cell's configuration is checked by its kind; nothing runs.
    pub fn load(source: &Source, quick: bool) -> Result<Matrix, SweepError> {
        Self::load_with(source, quick, ftl::policy::Registry::default())
    }

    /// [`load`](Matrix::load) for a program that registers victim or placement policies
    /// of its own: the cells may name them (an axis `victim = ["greedy", "mine"]`), and
    /// they are checked and run with them.
    pub fn load_with(
        source: &Source,
        quick: bool,
        registry: ftl::policy::Registry,
    ) -> Result<Matrix, SweepError> {
        let (text, file) = source.read(None)?;
        let f: MatrixFile = parse_toml(&text, &file)?;
        let err = |message: String| SweepError::Matrix {
            file: file.clone(),
            message,
        };
        if f.name.is_empty() || !ensure_key_name(&f.name) || f.name.contains('.') {
            return Err(err(format!(
                "name = {:?}: use letters, digits, '-' and '_'",
                f.name
            )));
        }
        let base = load_base(source, &f, &err)?;
        let axes = load_axes(&f, quick, &err)?;
        let (set, last) = overrides(&f, quick, &err)?;
        let cells = expand(&f, &base, &axes, &set, &last, &err)?;
        let base_dir = source.base_dir();
        // Every cell's configuration must be valid for its kind.
        for c in &cells {
            f.kind
                .check(&c.config, &base_dir, &registry)
                .map_err(|m| err(format!("cell {} ({}): {m}", c.index, c.label())))?;
        }
        let scope = crate::claims::Scope {
            file: &file,
            kind: f.kind,
            known: f.kind.metric_names(),
            axes: &axes,
            cells: &cells,
        };
        for m in &f.metrics {
            scope.metric("metrics", m)?;
        }
        let (published, skipped) = scope.published(&f.published)?;
        let trends = scope.trends(&f.trends)?;
        let plots = scope.plots(&f.plots, &f.title)?;
        let mut fp = format!("{}\n{quick}\n", f.name);
        for c in &cells {
            fp.push_str(&format!("{:016x}\n", c.fingerprint));
        }
        Ok(Matrix {
            name: f.name,
            title: f.title,
            description: f.description,
            notes: f.notes,
            kind: f.kind,
            source: source.clone(),
            quick,
            base_dir,
            axes,
            metrics: f.metrics,
            published,
            published_skipped: skipped,
            trends,
            plots,
            fingerprint: CRC64.checksum(fp.as_bytes()),
            cells,
            registry,
        })
    }

    /// An axis by name.
    pub fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.name == name)
    }
}

/// The matrix's base configuration: the experiment file `base` names (kind `experiment`
/// only), or an empty table.
fn load_base(
    source: &Source,
    f: &MatrixFile,
    err: &dyn Fn(String) -> SweepError,
) -> Result<toml::Table, SweepError> {
    Ok(match (&f.base, f.kind) {
        (Some(b), Kind::Experiment) => {
            let (btext, bfile) = source.read(Some(b)).map_err(|e| match e {
                SweepError::Io { path, message } => err(format!("base = {b:?}: {path}: {message}")),
                other => other,
            })?;
            parse_toml(&btext, &bfile)?
        }
        (None, Kind::Experiment) => {
            return Err(err(
                "kind = \"experiment\" needs base = \"FILE\" (an experiment file)".into(),
            ))
        }
        (Some(b), k) => {
            return Err(err(format!(
                "base = {b:?}: kind = \"{}\" takes no base experiment; set its parameters in [set]",
                k.name()
            )))
        }
        (None, _) => toml::Table::new(),
    })
}

/// The axes, each checked: a key path or profiles, values (the `--quick` ones when
/// `quick`) not empty and not repeated.
fn load_axes(
    f: &MatrixFile,
    quick: bool,
    err: &dyn Fn(String) -> SweepError,
) -> Result<Vec<Axis>, SweepError> {
    if f.axes.is_empty() {
        return Err(err(
            "no [[axis]]: a matrix needs at least one axis (a single cell is an axis with one value)"
                .into(),
        ));
    }
    let mut axes = Vec::new();
    let mut names = BTreeSet::new();
    for (i, a) in f.axes.iter().enumerate() {
        let here = format!("axis[{i}] (name = {:?})", a.name);
        if !ensure_key_name(&a.name) || a.name.contains('.') {
            return Err(err(format!(
                "{here}: name must be letters, digits, '-' and '_'"
            )));
        }
        if !names.insert(a.name.clone()) {
            return Err(err(format!("{here}: a second axis of that name")));
        }
        let key = a
            .key
            .clone()
            .unwrap_or_else(|| f.kind.alias(&a.name).unwrap_or(&a.name).to_string());
        if !ensure_key_name(&key) {
            return Err(err(format!(
                "{here}: key = {key:?} is not a dotted key path"
            )));
        }
        if a.values.is_empty() {
            return Err(err(format!(
                "{here}: values = [] expands the matrix to zero cells"
            )));
        }
        let mut profiles = BTreeMap::new();
        if !a.profiles.is_empty() {
            if a.key.is_some() {
                return Err(err(format!(
                    "{here}: key and profiles exclude each other (a profile names its keys)"
                )));
            }
            for v in &a.values {
                let name = v.as_str().unwrap_or_default();
                if !a.profiles.contains_key(name) {
                    return Err(err(format!(
                        "{here}: value {v} names no profile (have: {})",
                        a.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
                    )));
                }
            }
            for (name, t) in &a.profiles {
                let mut keys = Vec::new();
                flatten_keys("", t, &mut keys);
                for (k, _) in &keys {
                    if !ensure_key_name(k) {
                        return Err(err(format!(
                            "{here}: profile {name}: key {k:?} is not a dotted key path"
                        )));
                    }
                }
                profiles.insert(name.clone(), keys);
            }
        }
        let values = match (&a.quick, quick) {
            (Some(q), true) => {
                if q.is_empty() {
                    return Err(err(format!(
                        "{here}: quick = [] expands the --quick matrix to zero cells"
                    )));
                }
                q.clone()
            }
            _ => a.values.clone(),
        };
        for (j, v) in values.iter().enumerate() {
            if values[..j].contains(v) {
                return Err(err(format!("{here}: value {v} appears twice")));
            }
            if matches!(v, Value::Table(_) | Value::Array(_)) && f.kind != Kind::Experiment {
                return Err(err(format!("{here}: value {v} must be a number or string")));
            }
        }
        axes.push(Axis {
            name: a.name.clone(),
            key,
            label: a.label.clone().unwrap_or_else(|| a.name.clone()),
            values,
            full_values: a.values.clone(),
            average: a.average,
            profiles,
        });
    }
    Ok(axes)
}

/// The `[set]` and `[quick.set]` overrides (applied before the axis values) and the
/// `[quick.last]` ones (after them), each with its section's name.
#[allow(clippy::type_complexity)]
fn overrides(
    f: &MatrixFile,
    quick: bool,
    err: &dyn Fn(String) -> SweepError,
) -> Result<
    (
        Vec<(String, Value, &'static str)>,
        Vec<(String, Value, &'static str)>,
    ),
    SweepError,
> {
    let mut set = Vec::new();
    for (k, v) in &f.set {
        set.push((k.clone(), v.clone(), "set"));
    }
    if quick {
        for (k, v) in &f.quick.set {
            set.push((k.clone(), v.clone(), "quick.set"));
        }
    }
    // [quick.last]: after the axis values.
    let mut last = Vec::new();
    if quick {
        for (k, v) in &f.quick.last {
            last.push((k.clone(), v.clone(), "quick.last"));
        }
    }
    for (k, _, sec) in set.iter().chain(&last) {
        if !ensure_key_name(k) {
            return Err(err(format!("[{sec}] key {k:?} is not a dotted key path")));
        }
    }
    Ok((set, last))
}

/// Every cell of the matrix (first axis slowest): the base with the overrides and the
/// cell's axis values (or profiles) set, and its fingerprint.
fn expand(
    f: &MatrixFile,
    base: &toml::Table,
    axes: &[Axis],
    set: &[(String, Value, &'static str)],
    last: &[(String, Value, &'static str)],
    err: &dyn Fn(String) -> SweepError,
) -> Result<Vec<Cell>, SweepError> {
    let total: usize = axes.iter().map(|a| a.values.len()).product();
    const MAX_CELLS: usize = 100_000;
    if total > MAX_CELLS {
        return Err(err(format!(
            "{total} cells: more than {MAX_CELLS}; split the matrix"
        )));
    }
    let mut cells = Vec::with_capacity(total);
    let mut idx = vec![0usize; axes.len()];
    for index in 0..total {
        let mut rest = index;
        for (d, a) in axes.iter().enumerate().rev() {
            idx[d] = rest % a.values.len();
            rest /= a.values.len();
        }
        let mut config = base.clone();
        for (k, v, sec) in set {
            set_path(&mut config, k, v.clone())
                .map_err(|m| err(format!("[{sec}] {k} = {v}: {m}")))?;
        }
        let cell_axes: Vec<(String, Value)> = axes
            .iter()
            .zip(&idx)
            .map(|(a, &i)| (a.name.clone(), a.values[i].clone()))
            .collect();
        for (a, (_, v)) in axes.iter().zip(&cell_axes) {
            match a.profiles.get(v.as_str().unwrap_or_default()) {
                Some(keys) => {
                    for (k, pv) in keys {
                        set_path(&mut config, k, pv.clone())
                            .map_err(|m| err(format!("axis {} = {v}: {k} = {pv}: {m}", a.name)))?;
                    }
                }
                None => set_path(&mut config, &a.key, v.clone())
                    .map_err(|m| err(format!("axis {} = {v}: {m}", a.name)))?,
            }
        }
        for (k, v, sec) in last {
            set_path(&mut config, k, v.clone())
                .map_err(|m| err(format!("[{sec}] {k} = {v}: {m}")))?;
        }
        let canon = format!(
            "{}\n{}",
            f.kind.name(),
            toml::to_string(&config).map_err(|e| err(format!("cell {index}: {e}")))?
        );
        cells.push(Cell {
            index,
            axes: cell_axes,
            config,
            fingerprint: CRC64.checksum(canon.as_bytes()),
        });
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_path_creates_tables_and_refuses_scalars() {
        let mut t = toml::Table::new();
        set_path(&mut t, "a.b.c", Value::Integer(1)).unwrap();
        assert_eq!(t["a"]["b"]["c"], Value::Integer(1));
        let e = set_path(&mut t, "a.b.c.d", Value::Integer(2)).unwrap_err();
        assert!(e.contains("a.b.c is integer"), "{e}");
    }
}
