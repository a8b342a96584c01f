//! What a power cut hit, in words and by class: the chip's record of the cut with the page
//! kind the controller was programming.

use controller::{Controller, PageKind};
use nand::CutTarget;

/// What a power cut hit: the chip's [`nand::CutRecord`] with what the FTL was writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutInfo {
    /// One of [`CutInfo::CLASSES`].
    pub class: &'static str,
    /// The operation, its target and its effect, in words.
    pub text: String,
}

impl CutInfo {
    /// The classes, in report order: a program of a host page, of a GC (or wear-levelling,
    /// relocation) copy, of a checkpoint body page, of a trim-log page, of an MLC padding
    /// page, of another metadata page, of a replica (Meta-Cure's backup copy); an erase of a
    /// checkpoint-region block or of a data block; a read.
    pub const CLASSES: [&'static str; 10] = [
        "user",
        "gc-copy",
        "replica",
        "checkpoint",
        "trim-log",
        "pad",
        "meta",
        "region-erase",
        "data-erase",
        "read",
    ];

    /// Describes the cut `ctl`'s chip recorded; `region` lists the checkpoint region's
    /// blocks (flat indices).
    pub fn of<S: nand::Storage, M: nand::ErrorModel>(
        ctl: &Controller<S, M>,
        region: &[u32],
    ) -> Option<CutInfo> {
        let cut = ctl.chip().last_cut()?;
        let g = ctl.chip().geometry();
        let (class, what) = match cut.target {
            CutTarget::Read(a) => ("read", format!("read of page {a}")),
            CutTarget::Program(a) => {
                let kind = ctl.last_program().filter(|(p, _)| *p == a).map(|(_, k)| k);
                let class = match kind {
                    Some(PageKind::User(_)) => "user",
                    Some(PageKind::GcCopy(_)) => "gc-copy",
                    Some(PageKind::Replica(_)) => "replica",
                    Some(PageKind::Meta(t)) => ftl::meta_tag_name(t).unwrap_or("meta"),
                    None => "meta",
                };
                let bit = ctl.chip().pairing().kind(a.page()).name();
                let block = g.block_index(a.block_addr()).unwrap_or(u32::MAX);
                (
                    class,
                    format!("program of page {a} ({bit} page of block {block}), a {class} page"),
                )
            }
            CutTarget::Erase(b) => {
                let i = g.block_index(b).unwrap_or(u32::MAX);
                if region.contains(&i) {
                    (
                        "region-erase",
                        format!("erase of checkpoint-region block {i}"),
                    )
                } else {
                    ("data-erase", format!("erase of data block {i}"))
                }
            }
        };
        Some(CutInfo {
            class,
            text: format!(
                "cut at chip op {} (counted from format; mode {}): {what}; effect {:?}",
                cut.op,
                cut.mode.name(),
                cut.effect
            ),
        })
    }
}
