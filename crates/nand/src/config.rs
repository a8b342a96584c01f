//! Chip configuration: cell type, pairing layout, geometry, timing and reliability, the
//! presets of the five papers, and (with `std`) TOML files.
//!
//! A TOML chip file either names a `preset` and overrides some of its fields, or gives every
//! field. Unknown keys and bad values are rejected with the key's name:
//!
//! ```toml
//! preset = "k9k8g08u0b"
//! seed = 7
//! [geometry]
//! blocks_per_plane = 256      # a smaller chip for tests
//! [timing]
//! program_lsb_ns = 180000
//! ```

use crate::error::ConfigError;
use crate::geometry::{CellType, Geometry};
use crate::pairing::{BitKind, PairingLayout};
use crate::time::Nanos;
use alloc::format;
use alloc::string::{String, ToString};
use serde::{Deserialize, Serialize};

/// Operation latencies. Program and read latency may differ by bit kind (on SLC, and on
/// blocks in SLC mode, the LSB values apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Array read time of an LSB page (tR).
    pub read_lsb_ns: u64,
    /// Array read time of a CSB page.
    pub read_csb_ns: u64,
    /// Array read time of an MSB page.
    pub read_msb_ns: u64,
    /// Program time of an LSB page (tPROG).
    pub program_lsb_ns: u64,
    /// Program time of a CSB page.
    pub program_csb_ns: u64,
    /// Program time of an MSB page.
    pub program_msb_ns: u64,
    /// Block erase time (tBERS).
    pub erase_ns: u64,
    /// Bus transfer time per byte, in picoseconds (25 ns/B = 25000).
    pub transfer_ps_per_byte: u64,
}

impl Timing {
    /// The same read and program time for every bit kind.
    pub const fn uniform(read_ns: u64, program_ns: u64, erase_ns: u64, ps_per_byte: u64) -> Self {
        Timing {
            read_lsb_ns: read_ns,
            read_csb_ns: read_ns,
            read_msb_ns: read_ns,
            program_lsb_ns: program_ns,
            program_csb_ns: program_ns,
            program_msb_ns: program_ns,
            erase_ns,
            transfer_ps_per_byte: ps_per_byte,
        }
    }

    /// Array read time of a page of `kind`.
    pub fn read(&self, kind: BitKind) -> Nanos {
        Nanos(match kind {
            BitKind::Lsb => self.read_lsb_ns,
            BitKind::Csb => self.read_csb_ns,
            BitKind::Msb => self.read_msb_ns,
        })
    }

    /// Program time of a page of `kind`.
    pub fn program(&self, kind: BitKind) -> Nanos {
        Nanos(match kind {
            BitKind::Lsb => self.program_lsb_ns,
            BitKind::Csb => self.program_csb_ns,
            BitKind::Msb => self.program_msb_ns,
        })
    }

    /// Block erase time.
    pub fn erase(&self) -> Nanos {
        Nanos(self.erase_ns)
    }

    /// Bus time to move `bytes` bytes (rounded up to whole nanoseconds).
    pub fn transfer(&self, bytes: usize) -> Nanos {
        Nanos((bytes as u64 * self.transfer_ps_per_byte).div_ceil(1000))
    }
}

/// Endurance, partial-program limit and failure rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reliability {
    /// Rated program/erase cycles per block.
    pub endurance: u32,
    /// Programs allowed per page between erases on SLC pages (NOP); 1 forbids partial
    /// programs. Multi-level pages always allow exactly one.
    pub nop: u8,
    /// Fraction of blocks that are bad from the factory (drawn from the seed; block 0 is
    /// always good, as datasheets guarantee).
    pub factory_bad_rate: f64,
    /// Probability that one program or erase fails once a block reaches its rated
    /// endurance. Zero turns wear-out failures off.
    pub wear_fail_rate: f64,
    /// How fast that probability grows past endurance: p(pe) = rate + growth · (pe − E) / E
    /// for pe ≥ E (clamped to 1), and 0 below E.
    pub wear_fail_growth: f64,
}

impl Reliability {
    /// Probability that a program or erase of a block with `pe` cycles fails.
    pub fn failure_probability(&self, pe: u32) -> f64 {
        if self.wear_fail_rate <= 0.0 && self.wear_fail_growth <= 0.0 || pe < self.endurance {
            return 0.0;
        }
        let over = (pe - self.endurance) as f64 / self.endurance.max(1) as f64;
        (self.wear_fail_rate + self.wear_fail_growth * over).min(1.0)
    }
}

/// Everything that defines an emulated chip. Two chips with equal configs (seed included)
/// behave identically under the same sequence of operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChipConfig {
    /// A human-readable name (the preset name, or a user's).
    pub name: String,
    /// Cell type.
    pub cell: CellType,
    /// Page pairing layout (must describe `cell`).
    pub layout: PairingLayout,
    /// Seed of every random choice the chip makes (factory-bad blocks, wear failures,
    /// torn-program contents).
    pub seed: u64,
    /// Organisation.
    pub geometry: Geometry,
    /// Latencies.
    pub timing: Timing,
    /// Endurance and failure model.
    pub reliability: Reliability,
}

/// Names of the built-in presets.
pub const PRESET_NAMES: &[&str] = &[
    "micron-29f64g",
    "mlc-20nm",
    "flares-mlc-3x",
    "k9k8g08u0b",
    "slc-1g-dcr",
    "tiny-mlc",
    "tiny-mlc-4die",
    "tiny-mlc-sp",
    "tiny-slc",
];

fn geometry(
    planes: u32,
    blocks_per_plane: u32,
    pages_per_block: u32,
    page: u32,
    spare: u32,
    subpages: u32,
) -> Geometry {
    Geometry {
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: planes,
        blocks_per_plane,
        pages_per_block,
        page_size: page,
        spare_size: spare,
        subpages_per_page: subpages,
    }
}

const MLC_RELIABILITY: Reliability = Reliability {
    endurance: 3000,
    nop: 1,
    factory_bad_rate: 0.0,
    wear_fail_rate: 1e-4,
    wear_fail_growth: 1e-2,
};

const SLC_RELIABILITY: Reliability = Reliability {
    endurance: 100_000,
    nop: 4,
    factory_bad_rate: 0.0,
    wear_fail_rate: 1e-4,
    wear_fail_growth: 1e-2,
};

impl ChipConfig {
    /// The bus time of one whole page, data and spare (a page read's or program's
    /// transfer).
    pub fn page_transfer(&self) -> Nanos {
        let g = &self.geometry;
        self.timing.transfer((g.page_size + g.spare_size) as usize)
    }

    /// A built-in preset by name (see [`PRESET_NAMES`]).
    ///
    /// Values the papers do not give are assumptions, stated here:
    /// - `micron-29f64g` (AP Table 2): 8192+448 B pages, 256 pages/block, 4096 blocks in two
    ///   planes, 75 µs / 1300 µs / 3.8 ms, 3000 P/E. Assumed: `dist3` pairing, the same
    ///   program time for LSB and MSB (the paper gives one typical value), ONFI 2 synchronous
    ///   bus at 200 MT/s (5 ns/B).
    /// - `mlc-20nm` (SPFTL Table I): 8 KiB pages, 128 pages/block, 16384 blocks, 80 µs /
    ///   1.6 ms / 1.5 ms, 25 ns/B. Assumed: 448 B spare, two subpages per page (the paper's
    ///   SP configuration), `dist3` pairing, 3000 P/E, 4 planes.
    /// - `flares-mlc-3x` (FLARES Table Ia): 4096+224 B pages, 75 µs read, 800 µs program,
    ///   10k P/E. Assumed: 128 pages/block and 4096 blocks (DESIGN.md), 3 ms erase,
    ///   `mod2` pairing, 10 ns/B.
    /// - `k9k8g08u0b` (WAO-GC Table II): SLC, 2048+64 B, 64 pages/block, 2048 blocks in each
    ///   of 4 planes, 25 µs / 200 µs / 1.5 ms, 100k P/E, NOP 4 and 25 ns/B (datasheet).
    ///   Four 512 B subpages.
    /// - `slc-1g-dcr` (DCR §4.1): SLC, 2048+64 B, 64 pages/block, 8192 blocks (1 GiB), the
    ///   same timing as `k9k8g08u0b`, one plane.
    /// - `tiny-mlc` / `tiny-slc`: small chips for tests and examples (not from a paper);
    ///   `tiny-mlc-4die` is `tiny-mlc` on 2 channels × 2 dies (multi-die tests);
    ///   `tiny-mlc-sp` is `tiny-mlc` with 64 blocks per plane and two subpages per page
    ///   (SPFTL's tests: a demand-paged map needs room for its metadata partitions).
    pub fn preset(name: &str) -> Option<ChipConfig> {
        let (cell, layout, geometry, timing, reliability) = match name {
            "micron-29f64g" => (
                CellType::Mlc,
                PairingLayout::Dist3,
                geometry(2, 2048, 256, 8192, 448, 1),
                Timing::uniform(75_000, 1_300_000, 3_800_000, 5_000),
                MLC_RELIABILITY,
            ),
            "mlc-20nm" => (
                CellType::Mlc,
                PairingLayout::Dist3,
                geometry(4, 4096, 128, 8192, 448, 2),
                Timing::uniform(80_000, 1_600_000, 1_500_000, 25_000),
                MLC_RELIABILITY,
            ),
            "flares-mlc-3x" => (
                CellType::Mlc,
                PairingLayout::Mod2,
                geometry(1, 4096, 128, 4096, 224, 1),
                Timing::uniform(75_000, 800_000, 3_000_000, 10_000),
                Reliability {
                    endurance: 10_000,
                    ..MLC_RELIABILITY
                },
            ),
            "k9k8g08u0b" => (
                CellType::Slc,
                PairingLayout::Slc,
                geometry(4, 2048, 64, 2048, 64, 4),
                Timing::uniform(25_000, 200_000, 1_500_000, 25_000),
                SLC_RELIABILITY,
            ),
            "slc-1g-dcr" => (
                CellType::Slc,
                PairingLayout::Slc,
                geometry(1, 8192, 64, 2048, 64, 4),
                Timing::uniform(25_000, 200_000, 1_500_000, 25_000),
                SLC_RELIABILITY,
            ),
            "tiny-mlc" | "tiny-mlc-4die" | "tiny-mlc-sp" => (
                CellType::Mlc,
                PairingLayout::Dist3,
                if name == "tiny-mlc" {
                    geometry(2, 16, 16, 4096, 224, 1)
                } else if name == "tiny-mlc-sp" {
                    geometry(2, 64, 16, 4096, 224, 2)
                } else {
                    Geometry {
                        channels: 2,
                        dies_per_channel: 2,
                        ..geometry(2, 16, 16, 4096, 224, 1)
                    }
                },
                Timing {
                    read_lsb_ns: 50_000,
                    read_csb_ns: 50_000,
                    read_msb_ns: 80_000,
                    program_lsb_ns: 500_000,
                    program_csb_ns: 500_000,
                    program_msb_ns: 1_500_000,
                    erase_ns: 3_000_000,
                    transfer_ps_per_byte: 5_000,
                },
                MLC_RELIABILITY,
            ),
            "tiny-slc" => (
                CellType::Slc,
                PairingLayout::Slc,
                geometry(1, 32, 8, 2048, 64, 4),
                Timing::uniform(25_000, 200_000, 1_500_000, 25_000),
                SLC_RELIABILITY,
            ),
            _ => return None,
        };
        Some(ChipConfig {
            name: name.to_string(),
            cell,
            layout,
            seed: 0,
            geometry,
            timing,
            reliability,
        })
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.geometry.validate(self.cell)?;
        crate::pairing::PairingTable::new(self.layout, self.cell, self.geometry.pages_per_block)?;
        let r = &self.reliability;
        if r.endurance == 0 {
            return Err(ConfigError::new(
                "reliability.endurance",
                "must be at least 1",
            ));
        }
        if r.nop == 0 {
            return Err(ConfigError::new("reliability.nop", "must be at least 1"));
        }
        let prob = |field: &'static str, v: f64, max_inclusive: bool| {
            let ok = v.is_finite() && v >= 0.0 && if max_inclusive { v <= 1.0 } else { v < 1.0 };
            if ok {
                Ok(())
            } else {
                Err(ConfigError::new(
                    field,
                    format!("{v} is not a probability in [0, 1)"),
                ))
            }
        };
        prob("reliability.factory_bad_rate", r.factory_bad_rate, false)?;
        prob("reliability.wear_fail_rate", r.wear_fail_rate, true)?;
        if !(r.wear_fail_growth.is_finite() && r.wear_fail_growth >= 0.0) {
            return Err(ConfigError::new(
                "reliability.wear_fail_growth",
                format!(
                    "{} must be a finite non-negative number",
                    r.wear_fail_growth
                ),
            ));
        }
        let t = &self.timing;
        for (field, v) in [
            ("timing.read_lsb_ns", t.read_lsb_ns),
            ("timing.program_lsb_ns", t.program_lsb_ns),
            ("timing.erase_ns", t.erase_ns),
        ] {
            if v == 0 {
                return Err(ConfigError::new(field, "must be greater than zero"));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "std")]
mod toml_file {
    use super::*;
    use std::vec::Vec;

    impl ChipConfig {
        /// Parses a TOML chip file (see the module docs). `preset = NAME` starts from a
        /// preset; other keys override it. The result is validated.
        pub fn from_toml_str(text: &str) -> Result<ChipConfig, ConfigError> {
            let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
                ConfigError::new(error_key(&e, text), e.message().trim())
            })?;
            let config: ChipConfig = match table.remove("preset") {
                Some(toml::Value::String(name)) => {
                    let base = ChipConfig::preset(&name).ok_or_else(|| {
                        ConfigError::new(
                            "preset",
                            format!(
                                "unknown preset {name:?} (known: {})",
                                PRESET_NAMES.join(", ")
                            ),
                        )
                    })?;
                    let mut merged = toml::Table::try_from(&base)
                        .map_err(|e| ConfigError::new("preset", e.to_string()))?;
                    merge(&mut merged, table, &mut Vec::new())?;
                    typed(merged)?
                }
                Some(other) => {
                    return Err(ConfigError::new(
                        "preset",
                        format!("expected a preset name string, found {}", other.type_str()),
                    ))
                }
                None => typed(table)?,
            };
            config.validate()?;
            Ok(config)
        }

        /// The config as a complete TOML document (every field, no preset).
        pub fn to_toml_string(&self) -> String {
            toml::to_string(self).expect("a chip config always serialises")
        }
    }

    fn typed(table: toml::Table) -> Result<ChipConfig, ConfigError> {
        // Round-trip through canonical text (one `key = value` per line under `[table]`
        // headers) so that an error's span can be turned back into the key's dotted name.
        let text =
            toml::to_string(&table).map_err(|e| ConfigError::new("(file)", e.to_string()))?;
        toml::from_str::<ChipConfig>(&text).map_err(|e| {
            let at = e.span().map(|s| key_at(&text, s.start));
            let key = match (named_key(e.message()), at) {
                // A missing field's span covers its table: name both.
                (Some(field), Some(table))
                    if e.message().contains("missing field") && !table.is_empty() =>
                {
                    format!("{table}.{field}")
                }
                (Some(field), _) => field,
                (None, Some(k)) => k,
                (None, None) => String::from("(file)"),
            };
            ConfigError::new(key, e.message().trim().to_string())
        })
    }

    /// The field serde names in backquotes (unknown or missing fields).
    fn named_key(msg: &str) -> Option<String> {
        if !(msg.contains("unknown field") || msg.contains("missing field")) {
            return None;
        }
        let start = msg.find('`')?;
        let len = msg[start + 1..].find('`')?;
        Some(msg[start + 1..start + 1 + len].to_string())
    }

    fn error_key(e: &toml::de::Error, text: &str) -> String {
        named_key(e.message()).unwrap_or_else(|| match e.span() {
            Some(span) => {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!("line {line}, column {column}")
            }
            None => String::from("(file)"),
        })
    }

    /// Dotted key of the `key = value` line containing byte `offset` of canonical TOML.
    fn key_at(text: &str, offset: usize) -> String {
        let mut section = String::new();
        let mut pos = 0;
        for line in text.split_inclusive('\n') {
            let t = line.trim();
            if t.starts_with('[') && t.ends_with(']') {
                section = t.trim_matches(|c| c == '[' || c == ']').to_string();
            }
            if offset < pos + line.len() {
                let key = t.split('=').next().unwrap_or("").trim();
                return if section.is_empty() || t.starts_with('[') {
                    key.trim_matches(|c| c == '[' || c == ']').to_string()
                } else {
                    format!("{section}.{key}")
                };
            }
            pos += line.len();
        }
        String::from("(file)")
    }

    fn merge(
        base: &mut toml::Table,
        over: toml::Table,
        path: &mut Vec<String>,
    ) -> Result<(), ConfigError> {
        let mut errs = Vec::new();
        merge_into(base, over, path, &mut errs);
        let mut it = errs.into_iter();
        match it.next() {
            None => Ok(()),
            // Every key problem at once: the first as the error, the others after it.
            Some(mut first) => {
                for e in it {
                    first
                        .message
                        .push_str(&format!("\n{}: {}", e.field, e.message));
                }
                Err(first)
            }
        }
    }

    fn merge_into(
        base: &mut toml::Table,
        over: toml::Table,
        path: &mut Vec<String>,
        errs: &mut Vec<ConfigError>,
    ) {
        for (key, value) in over {
            path.push(key.clone());
            let dotted = path.join(".");
            match (base.get_mut(&key), value) {
                (None, _) => {
                    let known: Vec<&str> = base.keys().map(String::as_str).collect();
                    errs.push(ConfigError::new(
                        dotted,
                        format!("unknown key (valid here: {})", known.join(", ")),
                    ));
                }
                (Some(toml::Value::Table(b)), toml::Value::Table(o)) => {
                    merge_into(b, o, path, errs)
                }
                (Some(toml::Value::Table(_)), other) => {
                    errs.push(ConfigError::new(
                        dotted,
                        format!("expected a table, found {}", other.type_str()),
                    ));
                }
                (Some(slot), value) => {
                    if slot.type_str() != value.type_str() {
                        errs.push(ConfigError::new(
                            dotted,
                            format!(
                                "expected {}, found {} ({value})",
                                slot.type_str(),
                                value.type_str()
                            ),
                        ));
                    } else {
                        *slot = value;
                    }
                }
            }
            path.pop();
        }
    }
}
