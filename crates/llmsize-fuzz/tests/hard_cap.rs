//! A worker thread whose allocation would pass the hard cap sleeps instead of aborting the
//! process, and says how much it asked for. Its own test binary: the cap is process-wide.

use std::time::{Duration, Instant};

use llmsize_fuzz::alloc;

#[test]
fn a_worker_past_the_hard_cap_parks_and_the_process_goes_on() {
    alloc::set_hard_cap(1 << 30);
    let asked = 3usize << 30;
    std::thread::spawn(move || {
        alloc::park_on_hard_cap();
        // `black_box`: an allocation nothing uses may be left out by the optimiser.
        let big: Vec<u8> = std::hint::black_box(Vec::with_capacity(asked));
        // Never reached: the allocation above does not return.
        drop(big);
    });
    let start = Instant::now();
    let parked = loop {
        if let Some(bytes) = alloc::parked() {
            break bytes;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "never parked");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(parked, asked);
    // Asked once: the next look finds none.
    assert_eq!(alloc::parked(), None);
    // This thread allocates on as before.
    let small = vec![1u8; 1 << 20];
    assert_eq!(small.len(), 1 << 20);
}
