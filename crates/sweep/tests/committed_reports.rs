//! The committed reproductions (`docs/reproduce/NAME/report.md`) say what their shipped
//! matrices' notes say. The matrices are compiled into the binary, so a report regenerated
//! by a binary built before a note changed carries the old note; this catches it.

use std::path::Path;

#[test]
fn committed_reports_carry_their_matrices_notes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = 0;
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(root.join("experiments")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: toml::Value = toml::from_str(&text).unwrap();
        let (Some(name), Some(notes)) = (
            doc.get("name").and_then(|v| v.as_str()),
            doc.get("notes").and_then(|v| v.as_array()),
        ) else {
            continue;
        };
        let report = root.join("docs/reproduce").join(name).join("report.md");
        let Ok(report) = std::fs::read_to_string(&report) else {
            continue;
        };
        for note in notes.iter().filter_map(|n| n.as_str()) {
            checked += 1;
            if !report.contains(note) {
                stale.push(format!(
                    "{name}: {}…",
                    note.chars().take(70).collect::<String>()
                ));
            }
        }
    }
    assert!(checked > 20, "only {checked} notes found");
    assert!(
        stale.is_empty(),
        "reports without their matrix's current note (regenerate with a fresh build):\n{}",
        stale.join("\n")
    );
}

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `docs/reproduce/SUMMARY.md` is what `nandlab reproduce --summary` writes from the
/// committed results: no verdict in it is older than the cells or the matrices.
#[test]
fn the_summary_is_generated_from_the_committed_results() {
    let dir = root().join("docs/reproduce");
    let fresh = sweep::summary::summary(&dir).unwrap();
    let committed = std::fs::read_to_string(dir.join("SUMMARY.md")).unwrap_or_default();
    assert!(
        fresh == committed,
        "docs/reproduce/SUMMARY.md is stale: run `nandlab reproduce --summary` (and re-render \
         the reports: `nandlab reproduce NAME --out docs/reproduce/NAME --resume`)"
    );
}

/// Numbers with a unit of comparison (`2.583×`, `43.0 %`) in `text`, normalised: no space
/// before the unit, ASCII minus.
fn quoted_numbers(text: &str) -> Vec<String> {
    let norm = normalise(text);
    let chars: Vec<char> = norm.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0 || !chars[i - 1].is_ascii_alphanumeric() && chars[i - 1] != '.');
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || (chars[j] == '.' && j + 1 < chars.len() && chars[j + 1].is_ascii_digit()))
        {
            j += 1;
        }
        if j < chars.len() && (chars[j] == '×' || chars[j] == '%') {
            out.push(chars[i..=j].iter().collect());
        }
        i = j.max(i + 1);
    }
    out
}

fn normalise(text: &str) -> String {
    text.replace('−', "-")
        .replace(" %", "%")
        .replace('\u{202f}', "")
        .replace(" ×", "×")
}

/// Every number README.md, ARCHITECTURE.md, a page of the guide (`docs/guide/`) or a design
/// note (`docs/design/`, its decisions too) quotes
/// in a paragraph that cites a committed report (or the summary) is in one of the files
/// that paragraph cites.
#[test]
fn numbers_quoted_for_reproductions_are_in_the_reports_they_cite() {
    let root = root();
    let mut checked = 0;
    let mut wrong = Vec::new();
    let mut docs = vec!["README.md".to_string(), "ARCHITECTURE.md".to_string()];
    for dir in ["docs/guide", "docs/design", "docs/design/decisions"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".md") {
                docs.push(format!("{dir}/{name}"));
            }
        }
    }
    for doc in &docs {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        // A paragraph, or one item of a list: the citations of one claim, as the link
        // targets name them from the document's folder (`docs/reproduce/…` from the root,
        // `../reproduce/…` from the guide).
        for para in text.split("\n\n").flat_map(|p| p.split("\n- ")) {
            let cited: Vec<String> = para
                .match_indices("reproduce/")
                .filter(|(i, _)| para[..*i].ends_with("docs/") || para[..*i].ends_with("../"))
                .filter_map(|(i, _)| {
                    let rest = &para[i..];
                    let end = rest.find([')', ']', ' ', '`', '\n']).unwrap_or(rest.len());
                    let path = &rest[..end];
                    (path.ends_with("report.md") || path.ends_with("SUMMARY.md"))
                        .then(|| format!("docs/{path}"))
                })
                .collect();
            if cited.is_empty() {
                continue;
            }
            let mut sources = String::new();
            for c in &cited {
                let body = std::fs::read_to_string(root.join(c))
                    .unwrap_or_else(|e| panic!("{doc} cites {c}, which cannot be read: {e}"));
                sources.push_str(&normalise(&body));
            }
            for n in quoted_numbers(para) {
                checked += 1;
                if !sources.contains(&n) {
                    wrong.push(format!("{doc}: {n} (cites {})", cited.join(", ")));
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} quoted numbers found");
    assert!(
        wrong.is_empty(),
        "numbers quoted for a reproduction that the cited report does not contain:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn quoted_numbers_are_found_with_their_units() {
    assert_eq!(
        quoted_numbers("by 2.583× (paper −43.0 %), t = 50, 12 of 16, x1.5×"),
        vec!["2.583×", "43.0%"]
    );
}
