//! Loud skips, for every test binary of the workspace (the storage crate's own, and
//! `tests/node` through `#[path]`): a test that cannot find what it needs (a redis-server,
//! Chromium, an interop client) says why on the terminal, past `cargo test`'s capture of
//! its output; and fails instead when the run requires everything (`A2AD_REQUIRE_ALL=1`,
//! which `scripts/test.sh` and so CI set) or that one tool (its `A2AD_REQUIRE_*`). When
//! the binary exits, one more line counts its skips, after the test summary.
//!
//! Only std and libc (`atexit`): the file is compiled into several crates.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

/// How many tests of this binary skipped.
static SKIPPED: AtomicUsize = AtomicUsize::new(0);

/// Registers [`report_skips`] once, at the first skip.
static REPORT_AT_EXIT: Once = Once::new();

/// Whether the variable is set to something other than empty or `0`.
fn set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The calling test skips for want of `missing` (`how`: how to get it); or, when the run
/// requires it (`A2AD_REQUIRE_ALL`, or `require_var`), it fails here saying so. The
/// caller returns at once after this.
pub fn skip_for_want_of(missing: &str, require_var: &str, how: &str) {
    if set("A2AD_REQUIRE_ALL") || set(require_var) {
        panic!("{missing} is missing, and this run requires it (A2AD_REQUIRE_ALL or {require_var} is set): {how}");
    }
    SKIPPED.fetch_add(1, Ordering::Relaxed);
    REPORT_AT_EXIT.call_once(|| {
        // SAFETY: `report_skips` is an `extern "C" fn()` that touches only statics and
        // stderr, as an atexit handler must.
        unsafe { libc::atexit(report_skips) };
    });
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    // Straight to the stderr handle, not `eprintln!`: the test harness captures the
    // macros' output of a passing test, and a skip must be seen.
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: no {missing} ({how}; A2AD_REQUIRE_ALL=1 makes it fail)");
}

/// The skip count, after the harness's summary.
extern "C" fn report_skips() {
    let n = SKIPPED.load(Ordering::Relaxed);
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {n} test(s) for want of a tool; each SKIPPED line above says which and why"
    );
}
