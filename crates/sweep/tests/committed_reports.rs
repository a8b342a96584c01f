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
