//! Progress of long work, as libraries report it: a library calls [`Progress::step`] as
//! each step starts; whoever called the library decides what to show (the CLI draws a
//! bar on a terminal's stderr, tests record the steps, `NoProgress` shows nothing).
//! Libraries never print progress themselves and never depend on a terminal library.

/// Told as each step of long work starts.
pub trait Progress {
    /// Step `name` starts; `done` steps of `total` are finished (so `done < total`, or
    /// `done == total` for a closing step such as writing the results).
    fn step(&mut self, name: &str, done: u64, total: u64);
}

/// Shows nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn step(&mut self, _name: &str, _done: u64, _total: u64) {}
}

/// Any `FnMut(name, done, total)` is a [`Progress`].
impl<F: FnMut(&str, u64, u64)> Progress for F {
    fn step(&mut self, name: &str, done: u64, total: u64) {
        self(name, done, total);
    }
}

/// Counts steps for a library that knows how many it will take: each
/// [`Steps::next`] reports the next step with the number done so far.
pub struct Steps<'a> {
    progress: &'a mut dyn Progress,
    done: u64,
    total: u64,
}

impl<'a> Steps<'a> {
    /// `total` steps, reported to `progress`.
    pub fn new(progress: &'a mut dyn Progress, total: u64) -> Steps<'a> {
        Steps {
            progress,
            done: 0,
            total,
        }
    }

    /// Step `name` starts (the previous one, if any, is done).
    pub fn next(&mut self, name: &str) {
        self.progress
            .step(name, self.done.min(self.total), self.total);
        self.done += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_count_from_zero_and_never_pass_the_total() {
        let mut seen = Vec::new();
        let mut rec = |n: &str, d: u64, t: u64| seen.push((n.to_owned(), d, t));
        {
            let mut s = Steps::new(&mut rec, 2);
            s.next("a");
            s.next("b");
            s.next("writing");
        }
        assert_eq!(
            seen,
            vec![
                ("a".to_owned(), 0, 2),
                ("b".to_owned(), 1, 2),
                ("writing".to_owned(), 2, 2)
            ]
        );
        NoProgress.step("x", 0, 1);
    }
}
