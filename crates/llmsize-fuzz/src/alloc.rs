//! A counting global allocator: the bytes in use now and the peak since the last reset, so
//! the fuzzer can tell how much one input made the code under test allocate.
//!
//! It forwards every call to [`System`] and keeps two atomic counters. A hard cap (see
//! [`set_hard_cap`]) stops an allocation that would exhaust the machine. On a thread marked
//! with [`park_on_hard_cap`] (the fuzzer's worker) the allocation never returns: the thread
//! records the request in [`parked`] and sleeps for ever, so the fuzzer can note the finding,
//! abandon that worker and go on with a fresh one. Returning null would make Rust abort the
//! whole run, and an allocator may not unwind. Elsewhere the allocation fails (Rust aborts),
//! and the allocator first writes which iteration was running to stderr (without
//! allocating), so that `llmsize-fuzz --seed S --dump N` can write that input to a file.

// `GlobalAlloc` is an unsafe trait: implementing it is the only unsafe code of the crate,
// and it only forwards to `System` with the caller's own pointers and layouts.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The allocator: [`System`] plus counters.
pub struct Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static HARD_CAP: AtomicUsize = AtomicUsize::new(usize::MAX);
static SEED: AtomicU64 = AtomicU64::new(0);
static ITERATION: AtomicU64 = AtomicU64::new(u64::MAX);
/// The size of the request a parked thread made, 0 when none is parked.
static PARKED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // `const`, `Copy` and without `Drop`: reading it never allocates.
    static PARK: Cell<bool> = const { Cell::new(false) };
}

/// Make the calling thread sleep for ever, instead of failing, when one of its allocations
/// would pass the hard cap.
pub fn park_on_hard_cap() {
    PARK.with(|p| p.set(true));
}

/// The size of the allocation a parked thread asked for, if one is parked since the last
/// call; the next call answers `None` until another thread parks.
pub fn parked() -> Option<usize> {
    let bytes = PARKED.swap(0, Ordering::Relaxed);
    (bytes > 0).then_some(bytes)
}

/// Bytes allocated and not yet freed.
#[must_use]
pub fn current() -> usize {
    CURRENT.load(Ordering::Relaxed)
}

/// Start a new peak at the current level; returns that level.
pub fn reset_peak() -> usize {
    let now = CURRENT.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// The highest level since [`reset_peak`].
#[must_use]
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Fail allocations that would take the bytes in use past `bytes`.
pub fn set_hard_cap(bytes: usize) {
    HARD_CAP.store(bytes, Ordering::Relaxed);
}

/// Record which input runs, for the message written if it hits the hard cap.
pub fn set_running(seed: u64, iteration: u64) {
    SEED.store(seed, Ordering::Relaxed);
    ITERATION.store(iteration, Ordering::Relaxed);
}

fn reserve(bytes: usize) -> bool {
    let now = CURRENT
        .fetch_add(bytes, Ordering::Relaxed)
        .saturating_add(bytes);
    if now > HARD_CAP.load(Ordering::Relaxed) {
        CURRENT.fetch_sub(bytes, Ordering::Relaxed);
        if PARK.try_with(Cell::get).unwrap_or(false) {
            PARKED.store(bytes.max(1), Ordering::Relaxed);
            // `sleep` is a system call: it does not allocate.
            loop {
                std::thread::sleep(Duration::from_hours(1));
            }
        }
        report_hard_cap(bytes);
        return false;
    }
    PEAK.fetch_max(now, Ordering::Relaxed);
    true
}

fn release(bytes: usize) {
    CURRENT.fetch_sub(bytes, Ordering::Relaxed);
}

/// Write `n` in decimal into `out`, returning the digits (no allocation).
fn decimal(mut n: u64, out: &mut [u8; 20]) -> &[u8] {
    let mut i = out.len();
    loop {
        i -= 1;
        if let Some(slot) = out.get_mut(i) {
            *slot = b'0' + u8::try_from(n % 10).unwrap_or(0);
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    out.get(i..).unwrap_or_default()
}

/// Say which input went past the hard cap, without allocating (we are inside the allocator).
fn report_hard_cap(bytes: usize) {
    let (mut a, mut b, mut c) = ([0u8; 20], [0u8; 20], [0u8; 20]);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"\nllmsize-fuzz: FINDING: an allocation of ");
    let _ = err.write_all(decimal(u64::try_from(bytes).unwrap_or(u64::MAX), &mut a));
    let _ = err.write_all(b" bytes goes past the hard cap, in iteration ");
    let _ = err.write_all(decimal(ITERATION.load(Ordering::Relaxed), &mut b));
    let _ = err.write_all(b"; write that input with `llmsize-fuzz --seed ");
    let _ = err.write_all(decimal(SEED.load(Ordering::Relaxed), &mut c));
    let _ = err.write_all(b" --dump ");
    let _ = err.write_all(decimal(ITERATION.load(Ordering::Relaxed), &mut b));
    let _ = err.write_all(b"`\n");
}

// SAFETY (for each method): the pointers and layouts are the caller's, passed to `System`
// unchanged, so `System`'s contract is the caller's contract; the counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            release(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            release(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) };
        release(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !reserve(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if new_size > old {
            if p.is_null() {
                release(new_size - old);
            }
        } else if !p.is_null() {
            release(old - new_size);
        }
        p
    }
}
