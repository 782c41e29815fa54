//! The runtime pieces a `no_std` component provides for itself on
//! wasm32-wasip2, where std would otherwise supply them: a global
//! allocator, a panic handler, the canonical ABI's `cabi_realloc`, and
//! `memcpy`/`memset`/`memcmp` from wasi-libc's static archive.
//!
//! The allocator is a bump allocator, because the host runs every call in
//! a fresh instance and throws it away: freeing is wasted work. It hands
//! out a 256 KiB arena in `.bss` first (no `memory.grow`, and pages the
//! host keeps resident between instances, so no page faults), then grows
//! linear memory. Only the most recent allocation is ever given back or
//! resized in place (what a growing `Vec` or `String` needs).
//!
//! Why bother: std for wasm32-wasip2 makes a component import a dozen WASI
//! interfaces (stdio, environment, clocks, filesystem...) whether or not it
//! uses them. The host links each to a trap, which is safe but costs time
//! on every instantiation, and it blurs what the component really needs. A
//! component built on this crate imports exactly its world.
//!
//! Use: depend on it and write `use guest_rt as _;` in the crate root.
//! On other targets (native unit tests) it is empty.

#![no_std]

#[cfg(target_family = "wasm")]
mod wasm {
    extern crate alloc;

    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::UnsafeCell;
    use core::sync::atomic::{AtomicUsize, Ordering};

    const PAGE: usize = 65536;
    const ARENA: usize = 64 << 10;

    #[repr(align(16))]
    struct Arena(UnsafeCell<[u8; ARENA]>);

    // SAFETY: a component instance is single-threaded.
    unsafe impl Sync for Arena {}

    static ARENA_BYTES: Arena = Arena(UnsafeCell::new([0; ARENA]));

    /// Bump allocation over [next, limit). 0 means "not started": the
    /// first allocation points them at the arena. Atomics only for a safe
    /// `static`: wasm without threads makes them plain loads and stores.
    struct Bump {
        next: AtomicUsize,
        limit: AtomicUsize,
    }

    impl Bump {
        fn region(&self) -> (usize, usize) {
            let next = self.next.load(Ordering::Relaxed);
            if next != 0 {
                return (next, self.limit.load(Ordering::Relaxed));
            }
            let start = ARENA_BYTES.0.get() as usize;
            (start, start + ARENA)
        }

        fn set(&self, next: usize, limit: usize) {
            self.next.store(next, Ordering::Relaxed);
            self.limit.store(limit, Ordering::Relaxed);
        }

        /// A fresh region at the end of linear memory with room for
        /// `layout`; `None` when the host refuses to grow memory.
        fn grow(&self, layout: Layout) -> Option<usize> {
            let pages = (layout.size() + layout.align()).div_ceil(PAGE).max(16);
            let old = core::arch::wasm32::memory_grow(0, pages);
            if old == usize::MAX {
                return None;
            }
            let start = (old * PAGE).next_multiple_of(layout.align());
            self.set(start + layout.size(), old * PAGE + pages * PAGE);
            Some(start)
        }
    }

    unsafe impl GlobalAlloc for Bump {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let (next, limit) = self.region();
            let start = next.next_multiple_of(layout.align());
            match start.checked_add(layout.size()) {
                Some(end) if end <= limit => {
                    self.set(end, limit);
                    start as *mut u8
                }
                _ => self
                    .grow(layout)
                    .map_or(core::ptr::null_mut(), |p| p as *mut u8),
            }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // Only the latest allocation can be taken back.
            let (next, limit) = self.region();
            if ptr as usize + layout.size() == next {
                self.set(ptr as usize, limit);
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let (next, limit) = self.region();
            let p = ptr as usize;
            // The latest allocation grows or shrinks in place when it fits.
            if p + layout.size() == next && p + new_size <= limit {
                self.set(p + new_size, limit);
                return ptr;
            }
            if new_size <= layout.size() {
                return ptr;
            }
            // SAFETY: the layout is valid (same align, a size the caller
            // vouches for); the old block stays readable (nothing is freed).
            unsafe {
                let new = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
                if !new.is_null() {
                    core::ptr::copy_nonoverlapping(ptr, new, layout.size());
                }
                new
            }
        }
    }

    #[global_allocator]
    static ALLOCATOR: Bump = Bump {
        next: AtomicUsize::new(0),
        limit: AtomicUsize::new(0),
    };

    /// A panic is a bug: trap, which fails this call only (the host
    /// discards the instance). No message: formatting it would be wasted
    /// work nobody can read.
    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
        core::arch::wasm32::unreachable()
    }

    // memcpy, memset and memcmp come from wasi-libc's static archive, as
    // they would with std; only those objects are linked, and they import
    // nothing.
    #[link(name = "c")]
    unsafe extern "C" {}

    /// The canonical ABI's allocator export, written as std's is.
    ///
    /// # Safety
    /// Called by the host with the canonical ABI's guarantees: `align` is a
    /// power of two and `old_ptr`/`old_len` describe an earlier allocation.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cabi_realloc(
        old_ptr: *mut u8,
        old_len: usize,
        align: usize,
        new_len: usize,
    ) -> *mut u8 {
        use alloc::alloc::{Layout, alloc, realloc};
        // SAFETY: per the contract above.
        let ptr = unsafe {
            if old_len == 0 {
                if new_len == 0 {
                    return align as *mut u8;
                }
                alloc(Layout::from_size_align_unchecked(new_len, align))
            } else {
                realloc(
                    old_ptr,
                    Layout::from_size_align_unchecked(old_len, align),
                    new_len,
                )
            }
        };
        if ptr.is_null() {
            // Out of memory: trap, which the host reports for this call.
            core::arch::wasm32::unreachable()
        }
        ptr
    }
}
