//! `nandlab ecc`: encode/decode round trips through the side file, miscorrections caught by
//! its CRC, mismatched side files refused, bad code parameters named, the UBER calculator.

mod common;

use common::{nandlab, stderr, stdout};
use std::process::Output;

/// `nandlab ecc OP [code options] INPUT --parity SIDE [more]`.
fn ecc(
    op: &str,
    code: &[&str],
    input: &std::path::Path,
    side: &std::path::Path,
    more: &[&str],
) -> Output {
    let (i, s) = (input.to_str().unwrap(), side.to_str().unwrap());
    let mut a = vec!["ecc", op];
    a.extend_from_slice(code);
    a.extend_from_slice(&[i, "--parity", s]);
    a.extend_from_slice(more);
    nandlab(&a)
}

#[test]
fn ecc_encode_decode_round_trip_on_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.bin");
    let parity = dir.path().join("data.ecc");
    let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&input, &data).unwrap();
    let code = ["-t", "4", "--sector", "1024"];
    let o = ecc("encode", &code, &input, &parity, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A 44-byte header, then 5 sectors (the last one short) × (⌈14·4/8⌉ = 7 parity bytes
    // + a 4-byte CRC32C).
    assert_eq!(std::fs::metadata(&parity).unwrap().len(), 44 + 5 * 11);
    // Up to t flips per sector are corrected.
    let mut bad = data.clone();
    for (k, bit) in [3usize, 900, 4000, 8191, 8500, 20000, 39000]
        .iter()
        .enumerate()
    {
        bad[bit / 8] ^= 1 << (k % 8);
    }
    std::fs::write(&input, &bad).unwrap();
    let out = dir.path().join("fixed.bin");
    let o = ecc(
        "decode",
        &code,
        &input,
        &parity,
        &["--output", out.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("7 bits corrected"), "{}", stdout(&o));
    assert_eq!(std::fs::read(&out).unwrap(), data);
    // More than t in one sector: reported, non-zero exit.
    let mut worse = data.clone();
    for bit in 0..6 {
        worse[bit * 10] ^= 0x01;
    }
    std::fs::write(&input, &worse).unwrap();
    let o = ecc("decode", &code, &input, &parity, &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("uncorrectable sectors: [0]"),
        "{}",
        stderr(&o)
    );
}

/// More than t errors can decode to another codeword: with the side file's CRC32C such a
/// sector is reported uncorrectable and left as read; with bare parity (`--no-crc`, Linux's
/// bytes) the same decode would return wrong data with the BCH decoder none the wiser.
#[test]
fn ecc_decode_never_returns_a_miscorrection_as_data() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.bin");
    let side = dir.path().join("data.ecc");
    let bare = dir.path().join("data.par");
    let data: Vec<u8> = (0..64 * 512u32).map(|i| (i * 13 + 5) as u8).collect();
    std::fs::write(&input, &data).unwrap();
    let code = ["-t", "1", "--sector", "512"];
    let enc = |out: &std::path::Path, extra: &[&str]| {
        let o = ecc("encode", &code, &input, out, extra);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    enc(&side, &[]);
    enc(&bare, &["--no-crc"]);
    assert_eq!(std::fs::metadata(&bare).unwrap().len(), 64 * 2);
    // Two flips in every sector (t = 1).
    let mut bad = data.clone();
    let mut x = 0x9E37_79B9u64;
    for s in 0..64 {
        for _ in 0..2 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let bit = s * 4096 + (x % 4096) as usize;
            bad[bit / 8] ^= 0x80 >> (bit % 8);
        }
    }
    std::fs::write(&input, &bad).unwrap();
    let out = dir.path().join("out.bin");
    let o = ecc(
        "decode",
        &[],
        &input,
        &side,
        &["--output", out.to_str().unwrap()],
    );
    assert!(!o.status.success());
    let caught: u64 = stdout(&o)
        .split('(')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    assert!(caught > 10, "{}", stdout(&o));
    assert!(stdout(&o).contains("64 uncorrectable"), "{}", stdout(&o));
    // Every sector left exactly as read: nothing wrong written as corrected.
    assert_eq!(std::fs::read(&out).unwrap(), bad);
    // The bare parity decodes some sectors to wrong data (what the CRC prevents).
    let o = ecc(
        "decode",
        &code,
        &input,
        &bare,
        &["--output", out.to_str().unwrap()],
    );
    assert!(
        stdout(&o).contains("miscorrections cannot be detected"),
        "{}",
        stdout(&o)
    );
    let wrong = std::fs::read(&out)
        .unwrap()
        .chunks(512)
        .zip(data.chunks(512).zip(bad.chunks(512)))
        .filter(|(o, (d, b))| o != d && o != b)
        .count();
    assert!(wrong > 10, "{wrong} miscorrected sectors");
}

/// A side file names its code and its data: wrong options, a truncated side file, a
/// truncated data file, a damaged header and a bare parity file without its code are
/// refused with the mismatch named, never decoded with the wrong code.
#[test]
fn ecc_decode_refuses_a_mismatched_side_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.bin");
    let side = dir.path().join("data.ecc");
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    std::fs::write(&input, &data).unwrap();
    let o = ecc(
        "encode",
        &["-t", "4", "--sector", "1024"],
        &input,
        &side,
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let dec = |code: &[&str]| ecc("decode", code, &input, &side, &[]);
    // The header alone is enough; agreeing options are accepted.
    assert!(dec(&[]).status.success());
    assert!(dec(&["-t", "4", "--sector", "1024"]).status.success());
    for (extra, expected) in [
        (&["-t", "8"][..], "-t 8 (the side file says 4)"),
        (
            &["--sector", "512"][..],
            "--sector 512 (the side file says 1024)",
        ),
        (&["-m", "15"][..], "-m 15 (the side file says 14)"),
    ] {
        let o = dec(extra);
        assert!(!o.status.success(), "{extra:?}");
        assert!(stderr(&o).contains(expected), "{extra:?}: {}", stderr(&o));
    }
    let full = std::fs::read(&side).unwrap();
    std::fs::write(&side, &full[..full.len() - 3]).unwrap();
    let o = dec(&[]);
    assert!(stderr(&o).contains("truncated or padded"), "{}", stderr(&o));
    let mut broken = full.clone();
    broken[16] ^= 4; // t in the header
    std::fs::write(&side, &broken).unwrap();
    let o = dec(&[]);
    assert!(stderr(&o).contains("header is corrupt"), "{}", stderr(&o));
    std::fs::write(&side, &full).unwrap();
    std::fs::write(&input, &data[..2000]).unwrap();
    let o = dec(&[]);
    assert!(
        stderr(&o).contains("is 2000 bytes, but side file") && stderr(&o).contains("protects 3000"),
        "{}",
        stderr(&o)
    );
    std::fs::write(&side, &full[44..44 + 7]).unwrap();
    let o = dec(&[]);
    assert!(stderr(&o).contains("no side-file header"), "{}", stderr(&o));
}

#[test]
fn ecc_bad_parameters_are_named() {
    let cases: [(&[&str], &str); 4] = [
        (&["-t", "0"], "t must be at least 1"),
        (&["-t", "700", "-m", "13"], "t = 700 is too large"),
        (
            &["-t", "8", "--sector", "8192", "-m", "13"],
            "sector of 8192 bytes does not fit",
        ),
        (
            &["-t", "8", "--poly", "0x11b"],
            "not a primitive polynomial",
        ),
    ];
    for (code, expected) in cases {
        let mut args = vec!["ecc", "encode"];
        args.extend_from_slice(code);
        args.extend_from_slice(&["/dev/null", "--parity", "/dev/null"]);
        let o = nandlab(&args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn ecc_uber_calculator() {
    let o = nandlab(&["ecc", "uber", "--ap-table1"]);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o)
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .count(),
        8
    );
    let o = nandlab(&["ecc", "uber", "--bits", "8640", "--rber", "2e-6", "-t", "3"]);
    assert!(stdout(&o).contains("3.66"), "{}", stdout(&o));
    let o = nandlab(&[
        "ecc", "uber", "--bits", "8640", "--rber", "2e-6", "-t", "3", "--sigma", "0.5",
    ]);
    assert!(stdout(&o).contains("2.30"), "{}", stdout(&o));
}
