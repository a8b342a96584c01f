//! Trace readers: every format parses, malformed lines name file, line and field, and
//! out-of-range addresses are rejected unless wrapping is asked for.

use sim::{ReqKind, RequestSource, SimError, TraceFormat, TraceReader};
use std::io::Cursor;
use std::path::Path;

fn read_all(
    text: &str,
    format: TraceFormat,
    capacity: u64,
    wrap: bool,
) -> Result<Vec<sim::Request>, SimError> {
    let mut r = TraceReader::from_reader(
        Path::new("t.trace"),
        Box::new(Cursor::new(text.to_string())),
        format,
        capacity,
        wrap,
    );
    let mut out = Vec::new();
    while let Some(x) = r.next_request() {
        out.push(x?);
    }
    Ok(out)
}

const GB: u64 = 1 << 30;

#[test]
fn mqsim_ascii() {
    let t = "1000 0 8 8 0\n3000 1 16 16 1\n";
    let r = read_all(t, TraceFormat::Mqsim, GB, false).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].arrival.0, r[0].kind, r[0].offset, r[0].len),
        (0, ReqKind::Write, 4096, 4096)
    );
    assert_eq!(
        (r[1].arrival.0, r[1].kind, r[1].offset, r[1].len),
        (2000, ReqKind::Read, 8192, 8192)
    );
    let e = read_all(
        "1000 0 8 8 0\n1001 0 x 8 0\n",
        TraceFormat::Mqsim,
        GB,
        false,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.trace:2: field lba: \"x\" is not a valid number"
    );
    let e = read_all("1000 0 8 8 2\n", TraceFormat::Mqsim, GB, false).unwrap_err();
    assert!(e.to_string().contains("t.trace:1: field type"), "{e}");
    let e = read_all("1000 0 8\n", TraceFormat::Mqsim, GB, false).unwrap_err();
    assert!(e.to_string().contains("field size: missing"), "{e}");
}

#[test]
fn msr_csv() {
    let t = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
             128166372003061629,hm,1,Read,383409152,4096,1202\n\
             128166372003071629,hm,1,Write,4096,8192,7\n";
    let r = read_all(t, TraceFormat::Msr, GB, false).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].kind, r[0].offset, r[0].len),
        (ReqKind::Read, 383409152, 4096)
    );
    assert_eq!(r[1].arrival.0, 10000 * 100);
    let e = read_all(
        "128166372003061629,hm,1,Erase,0,4096,1\n",
        TraceFormat::Msr,
        GB,
        false,
    )
    .unwrap_err();
    assert!(e.to_string().contains("t.trace:1: field Type"), "{e}");
    let e = read_all("1,hm,1,Read,0,4096\n", TraceFormat::Msr, GB, false).unwrap_err();
    assert!(
        e.to_string()
            .contains("6 comma-separated fields, expected 7"),
        "{e}"
    );
}

#[test]
fn blkparse_text() {
    let t = "  8,0    3        1     0.000000000  697  Q   W 223490 + 8 [kjournald]\n\
             8,0    3        2     0.000001000  697  G   W 223490 + 8 [kjournald]\n\
             8,0    0        3     0.500000000  11  Q   R 1000 + 16 [cat]\n\
             8,0    0        4     0.600000000  11  Q   DS 2048 + 64 [fstrim]\n\
             8,0    0        5     0.700000000  11  Q  FWS 0 + 0 [sync]\n\
             CPU0 (8,0):\n Reads Queued:           1,        8KiB\n";
    let r = read_all(t, TraceFormat::Blkparse, GB, false).unwrap();
    let kinds: Vec<ReqKind> = r.iter().map(|x| x.kind).collect();
    assert_eq!(
        kinds,
        vec![ReqKind::Write, ReqKind::Read, ReqKind::Trim, ReqKind::Flush]
    );
    assert_eq!((r[0].offset, r[0].len), (223490 * 512, 4096));
    assert_eq!(r[1].arrival.0, 500_000_000);
    let e = read_all(
        "8,0 0 1 0.1 1 Q W abc + 8 [x]\n",
        TraceFormat::Blkparse,
        GB,
        false,
    )
    .unwrap_err();
    assert!(e.to_string().contains("t.trace:1: field sector"), "{e}");
}

#[test]
fn spc_csv() {
    let t = "0,303567,3584,w,0.000000\n1,55590,3072,r,0.000486\n";
    let r = read_all(t, TraceFormat::Spc, GB, false).unwrap();
    assert_eq!(
        (r[0].kind, r[0].offset, r[0].len),
        (ReqKind::Write, 303567 * 512, 3584)
    );
    assert_eq!((r[1].kind, r[1].arrival.0), (ReqKind::Read, 486_000));
    let e = read_all("0,1,512,x,0.1\n", TraceFormat::Spc, GB, false).unwrap_err();
    assert!(e.to_string().contains("field Opcode"), "{e}");
}

#[test]
fn out_of_range_is_rejected_unless_wrapped() {
    let t = "0 0 2097152 8 0\n"; // byte 1 GiB, past a 1 GiB device
    let e = read_all(t, TraceFormat::Mqsim, GB, false).unwrap_err();
    assert!(
        e.to_string().contains("t.trace:1: field offset") && e.to_string().contains("wrap"),
        "{e}"
    );
    let r = read_all(t, TraceFormat::Mqsim, GB, true).unwrap();
    assert!(r[0].offset + r[0].len <= GB);
    assert_eq!(r[0].offset % 512, 0);
}

#[test]
fn the_mqsim_tpcc_trace_parses_and_replays() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tpcc-small.trace");
    let mut r = TraceReader::open(&path, TraceFormat::Mqsim, 256 << 20, true).unwrap();
    let mut n = 0;
    let mut writes = 0;
    while let Some(x) = r.next_request() {
        let x = x.unwrap();
        n += 1;
        writes += (x.kind == ReqKind::Write) as u64;
    }
    assert_eq!(n, 6999);
    assert_eq!(writes, 2618);
    // Without wrapping, its addresses do not fit a small device.
    let mut r = TraceReader::open(&path, TraceFormat::Mqsim, 256 << 20, false).unwrap();
    let e = std::iter::from_fn(|| r.next_request())
        .find_map(Result::err)
        .unwrap();
    assert!(e.to_string().contains("tpcc-small.trace:"), "{e}");
    // Replay it through the whole stack.
    let cfg = format!(
        "[chip]\npreset = \"mlc-20nm\"\n[chip.geometry]\nblocks_per_plane = 16\n[controller]\nmode = \"digest\"\n[ftl.page]\nover_provisioning = 0.2\n[precondition]\nenabled = false\n[trace]\npath = \"{}\"\nformat = \"mqsim\"\nwrap = true\n[load]\nmode = \"open\"\n",
        path.display()
    );
    let mut exp = sim::ExperimentConfig::from_toml_str(&cfg, "replay.toml")
        .unwrap()
        .build(Path::new("."))
        .unwrap();
    let rep = exp.run(&mut |_| {}).unwrap();
    assert_eq!(rep.host.requests, 6999);
    assert!(rep.latency["read"].count > 4000);
}

/// Regression: an LBA or size whose byte value does not fit 64 bits was multiplied by 512
/// unchecked (wrapping in release builds to a small, valid-looking offset). Every format
/// must report the field instead, with or without wrapping.
#[test]
fn sector_overflow_names_the_field() {
    let huge = 1u64 << 55;
    let cases = [
        (
            format!("1000 0 {huge} 8 0\n"),
            TraceFormat::Mqsim,
            "field lba",
        ),
        (
            format!("1000 0 8 {huge} 0\n"),
            TraceFormat::Mqsim,
            "field size",
        ),
        (
            format!("8,0 0 1 0.5 10 Q W {huge} + 8 [x]\n"),
            TraceFormat::Blkparse,
            "field sector",
        ),
        (
            format!("8,0 0 1 0.5 10 Q W 8 + {huge} [x]\n"),
            TraceFormat::Blkparse,
            "field count",
        ),
        (
            format!("0,{huge},4096,w,0.5\n"),
            TraceFormat::Spc,
            "field LBA",
        ),
    ];
    for (text, format, field) in cases {
        for wrap in [false, true] {
            let e = read_all(&text, format, GB, wrap).unwrap_err().to_string();
            assert!(
                e.contains("t.trace:1") && e.contains(field),
                "{format:?}: {e}"
            );
            assert!(e.contains("overflow"), "{e}");
        }
    }
    // Offset + size past u64 (MSR gives bytes directly).
    let text = format!("1,h,0,Write,{},4096,1\n", u64::MAX - 100);
    let e = read_all(&text, TraceFormat::Msr, GB, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("field offset") && e.contains("overflow"), "{e}");
}
