//! docs/guide/experiment-file.md (written by `scripts/experiment-reference.py` from the
//! configuration types' docs) against the types: every key a configuration serialises is
//! listed under its section, and every listed key is one a configuration has.

use sim::config::ExperimentConfig;
use std::collections::{BTreeMap, BTreeSet};

/// The page's sections (each alias of a `## [a / b]` heading) and their keys.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/guide/experiment-file.md"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = if h == "top level" {
                vec![String::new()]
            } else {
                let inner = h.trim_matches(|c| c == '`' || c == '[' || c == ']');
                inner.split(" / ").map(str::to_string).collect()
            };
        } else if let Some(rest) = line.strip_prefix("| `") {
            let key = rest.split('`').next().unwrap().to_string();
            for s in &current {
                out.entry(s.clone()).or_default().insert(key.clone());
            }
        }
    }
    out
}

/// A configuration with every optional part present.
fn maximal() -> serde_json::Value {
    let text = r#"
        [chip]
        preset = "tiny-mlc"
        [aging]
        pe = 10
        [errors]
        model = "constant"
        [ftl]
        scheme = "page"
        [ftl.page]
        ecc = { flares = {} }
        [ftl.page.wear_leveling]
        spread = 8
        check_every = 8
        [workload]
        requests = 10
        hot = { data_pct = 20, access_pct = 80 }
        idle = { every = 5, seconds = 1.0 }
        metadata = { pct = 5, bytes = 65536 }
    "#;
    let cfg = ExperimentConfig::from_toml_str(text, "maximal.toml").unwrap();
    let mut v = serde_json::to_value(&cfg).unwrap();
    // A trace section beside the workload (a file has one or the other; both serialise).
    let trace: toml::Table = r#"
        path = "t.trace"
        format = "mqsim"
    "#
    .parse()
    .unwrap();
    let t: sim::config::TraceSection = toml::Value::Table(trace).try_into().unwrap();
    v["trace"] = serde_json::to_value(t).unwrap();
    v
}

/// Section aliases the page lists once (one struct, several places).
fn canonical(section: &str) -> String {
    let mut s = section.to_string();
    for (from, to) in [
        ("ftl.combined", "ftl.page"),
        ("ftl.rftl", "ftl.gftl"),
        ("ftl.spftl-log", "ftl.dftl-por"),
        ("ftl.spftl", "ftl.dftl-por"),
        ("ftl.block.wear_leveling", "ftl.page.wear_leveling"),
    ] {
        if s == from || s.starts_with(&format!("{from}.")) {
            s = format!("{to}{}", &s[from.len()..]);
        }
    }
    s
}

#[test]
fn every_key_is_listed_and_every_listed_key_exists() {
    let doc = documented();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut missing = Vec::new();
    fn walk(
        v: &serde_json::Value,
        path: &[String],
        doc: &BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeSet<(String, String)>,
        missing: &mut Vec<String>,
    ) {
        let serde_json::Value::Object(m) = v else {
            return;
        };
        let section = canonical(&path.join("."));
        for (k, x) in m {
            if path.first().is_some_and(|p| p == "chip") {
                return; // a chip file's table (its own reference: `nandlab chip info --toml`)
            }
            match doc.get(&section) {
                Some(keys) if keys.contains(k) => {
                    seen.insert((section.clone(), k.clone()));
                }
                // A value that is a table of its own (an enum's variant: gc_pacing's
                // `incremental`, ecc's `flares`) is covered by the key above it; a
                // section below it may be listed (`[ftl.page.ecc.flares]`).
                _ if !doc.contains_key(&section) => {}
                _ => missing.push(format!("[{section}] {k}")),
            }
            let mut p = path.to_vec();
            p.push(k.clone());
            walk(x, &p, doc, seen, missing);
        }
    }
    walk(&maximal(), &[], &doc, &mut seen, &mut missing);
    assert!(
        missing.is_empty(),
        "keys missing from docs/guide/experiment-file.md (run scripts/experiment-reference.py): {missing:?}"
    );
    let listed: BTreeSet<(String, String)> = doc
        .iter()
        .flat_map(|(s, ks)| ks.iter().map(move |k| (canonical(s), k.clone())))
        .collect();
    let extra: Vec<_> = listed.difference(&seen).collect();
    assert!(
        extra.is_empty(),
        "keys listed in docs/guide/experiment-file.md that no configuration has: {extra:?}"
    );
    assert!(seen.len() > 100, "only {} keys", seen.len());
}
