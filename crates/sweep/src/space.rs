//! What a matrix is made of: its axes, its cells (points of the axes with a configuration
//! each) and the points trends and tables name, and how a value is shown. Shared by the
//! matrix's loader and the claims checked against it.

use std::collections::BTreeMap;
use toml::Value;

/// One axis of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Column name.
    pub name: String,
    /// The configuration key it sets (dotted path).
    pub key: String,
    /// Axis title for tables and plots.
    pub label: String,
    /// The values of this run (the quick ones under `--quick`).
    pub values: Vec<Value>,
    /// The full-size values (what published values may name).
    pub full_values: Vec<Value>,
    /// A replicate axis: tables and plots show the mean over it.
    pub average: bool,
    /// Profile axes: the dotted keys each value sets (empty: the value goes to `key`).
    pub profiles: BTreeMap<String, Vec<(String, Value)>>,
}

/// One cell: a point of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Position in the expansion (first axis slowest).
    pub index: usize,
    /// Its axis values, in axis order.
    pub axes: Vec<(String, Value)>,
    /// Its complete configuration (base + set + axis values).
    pub config: toml::Table,
    /// CRC-64 of the kind and configuration: a result file belongs to this cell only if
    /// it carries this.
    pub fingerprint: u64,
}

impl Cell {
    /// `victim=greedy op=0.1 seed=1`.
    pub fn label(&self) -> String {
        self.axes
            .iter()
            .map(|(k, v)| format!("{k}={}", show(v)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The result file name: `c0007.json`.
    pub fn file_name(&self) -> String {
        format!("c{:04}.json", self.index)
    }

    /// Its value on axis `name`.
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.axes.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// A value as tables show it: strings without quotes.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Axis values naming one point of the matrix (some axes may be left out).
pub type Point = Vec<(String, Value)>;

/// A value written `1` where the axis has floats (`1.0`) is that float.
pub(crate) fn coerce(v: &Value, values: &[Value]) -> Value {
    match v {
        Value::Integer(i) if values.iter().any(|x| matches!(x, Value::Float(_))) => {
            Value::Float(*i as f64)
        }
        other => other.clone(),
    }
}

/// Whether `cell` has every value of `at` (of an array value, any one).
pub fn matches_at(cell: &Cell, at: &[(String, Value)]) -> bool {
    at.iter().all(|(k, v)| match v {
        // An array: any of its values.
        Value::Array(vs) => cell.value(k).is_some_and(|c| vs.contains(c)),
        v => cell.value(k) == Some(v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `at` value that is an array matches a cell holding any of its values.
    #[test]
    fn an_array_at_matches_any_of_its_values() {
        let cell = Cell {
            index: 0,
            axes: vec![("scheme".into(), Value::String("GFTL".into()))],
            config: toml::Table::new(),
            fingerprint: 0,
        };
        let at = |v: Value| vec![("scheme".to_string(), v)];
        let s = |x: &str| Value::String(x.into());
        assert!(matches_at(&cell, &at(s("GFTL"))));
        assert!(!matches_at(&cell, &at(s("RFTL"))));
        assert!(matches_at(
            &cell,
            &at(Value::Array(vec![s("RFTL"), s("GFTL")]))
        ));
        assert!(!matches_at(
            &cell,
            &at(Value::Array(vec![s("RFTL"), s("WAO")]))
        ));
        assert!(!matches_at(&cell, &at(Value::Array(vec![]))));
    }
}
