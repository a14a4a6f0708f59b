//! Display units for latency axes.

/// A display unit for latencies: divide nanoseconds by `divisor`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeUnit {
    /// Unit symbol: `"ns"`, `"µs"`, `"ms"` or `"s"`.
    pub name: &'static str,
    /// Nanoseconds per unit (1, 1e3, 1e6 or 1e9).
    pub divisor: f64,
}

/// The largest unit in which `max_ns` is at least 1: ns below 1 µs, µs below
/// 1 ms, ms below 1 s, s from there on (and ns for non-finite input).
pub fn choose_unit(max_ns: f64) -> TimeUnit {
    let (name, divisor) = if max_ns >= 1e9 && max_ns.is_finite() {
        ("s", 1e9)
    } else if max_ns >= 1e6 && max_ns.is_finite() {
        ("ms", 1e6)
    } else if max_ns >= 1e3 && max_ns.is_finite() {
        ("µs", 1e3)
    } else {
        ("ns", 1.0)
    };
    TimeUnit { name, divisor }
}
