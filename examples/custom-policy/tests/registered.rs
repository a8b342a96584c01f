//! The example's policies as a user sees them: named in a sweep, they run only when
//! registered; registered, they run beside the built-in ones and make a difference.

use std::path::PathBuf;
use sweep::matrix::{Matrix, Source};

fn sweep_file() -> Source {
    Source::File(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sweep.toml"))
}

#[test]
fn unregistered_names_are_a_clear_error() {
    let e = Matrix::load(&sweep_file(), true).unwrap_err().to_string();
    assert!(e.contains("is neither built in nor registered"), "{e}");
    assert!(
        e.contains("by-address") || e.contains("oldest-first"),
        "{e}"
    );
}

#[test]
fn names_cannot_shadow_built_in_policies() {
    let mut r = ftl::policy::Registry::new();
    let e = r
        .register_victim("greedy", || Box::new(custom_policy::OldestFirst))
        .unwrap_err();
    assert!(e.to_string().contains("taken"), "{e}");
    assert!(r
        .register_placement("Bad Name", || Box::new(custom_policy::ByAddress))
        .is_err());
}

#[test]
fn registered_policies_run_and_differ_from_the_built_in_ones() {
    let registry = custom_policy::registry().unwrap();
    let m = Matrix::load_with(&sweep_file(), true, registry).unwrap();
    assert_eq!(m.cells.len(), 6);
    let dir = tempfile::tempdir().unwrap();
    let s = sweep::run::run_cells(&m, dir.path(), None, 2, false, &|_| {}).unwrap();
    assert_eq!(s.failed, 0);
    let r = sweep::results::Results::collect(&m, dir.path()).unwrap();
    let copies = |victim: &str| {
        r.cells
            .iter()
            .filter(|c| c.cell.label().contains(&format!("victim={victim} ")))
            .map(|c| c.metrics().expect("ran")["nand.valid_copies"])
            .sum::<f64>()
    };
    // FIFO cleaning copies more than greedy on hot/cold writes.
    assert!(copies("oldest-first") > 1.1 * copies("greedy"));
    // The placement policy changes where pages go, so the results change with it.
    let iops: Vec<f64> = r
        .cells
        .iter()
        .map(|c| c.metrics().expect("ran")["iops"])
        .collect();
    assert!(iops.windows(2).any(|w| w[0] != w[1]));
}
