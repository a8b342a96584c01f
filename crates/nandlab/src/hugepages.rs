//! The program's memory: the system allocator, with large blocks (the FTL's maps, the
//! chip's page tables and stored spare areas — tens to hundreds of MiB on a 32 GiB device)
//! marked for transparent huge pages, and the peak resident size the benches report.
//!
//! A simulation touches these tables at random (every host write looks up the map; every
//! GC copy updates it at a random place), so with 4 KiB pages nearly every lookup also
//! misses the TLB. `madvise(MADV_HUGEPAGE)` lets the kernel back them with 2 MiB pages where
//! it is configured to do so on request (`/sys/kernel/mm/transparent_hugepage/enabled` =
//! `madvise`, the common default) and is harmless where it is not. Only the std binary does
//! this; the `no_std` core crates allocate through whatever allocator their host provides.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations at least this large are advised.
const HUGE_MIN: usize = 4 << 20;

/// System allocator + `MADV_HUGEPAGE` on large blocks.
pub struct HugePageAlloc;

fn advise(ptr: *mut u8, size: usize) {
    if ptr.is_null() || size < HUGE_MIN {
        return;
    }
    // madvise wants a page-aligned start: advise the whole pages inside the block.
    let page = 4096usize;
    let start = (ptr as usize).next_multiple_of(page);
    let end = (ptr as usize + size) & !(page - 1);
    if end > start {
        // SAFETY: the range lies inside a block this allocator just handed out; the advice
        // changes only how the kernel backs it, never its contents or validity.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

// SAFETY: every call forwards to `System` with the same arguments; `advise` only adds a hint.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

/// The process's peak resident memory (`VmHWM`), MiB; `None` off Linux. What the benches
/// report beside their rates.
pub(crate) fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
