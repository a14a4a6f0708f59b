//! Response-time analysis for fixed-priority preemptive scheduling on one CPU
//! (Joseph & Pandya 1986; Audsley et al. 1993; Tindell, Burns & Wellings 1994, with
//! release jitter, blocking and arbitrary deadlines via the level-i busy period of
//! Lehoczky 1990). Pure integer arithmetic in any time unit.
//!
//! For task i with higher-priority set hp(i), for q = 0, 1, …:
//! w(q) = (q+1)·Cᵢ + Bᵢ + Σ_{j∈hp(i)} ⌈(w(q) + Jⱼ)/Tⱼ⌉·Cⱼ (fixed point from (q+1)·Cᵢ + Bᵢ),
//! Rᵢ(q) = w(q) − q·Tᵢ + Jᵢ, until w(q) ≤ (q+1)·Tᵢ; Rᵢ = max_q Rᵢ(q); schedulable iff Rᵢ ≤ Dᵢ.

use serde::{Deserialize, Serialize};

/// A periodic task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Name for reports.
    pub name: String,
    /// Worst-case execution time.
    pub c: u64,
    /// Period (minimum inter-arrival time).
    pub t: u64,
    /// Relative deadline.
    pub d: u64,
    /// Release jitter.
    pub j: u64,
    /// Blocking by lower-priority tasks.
    pub b: u64,
}

impl Task {
    /// A task with D = T and no jitter or blocking.
    pub fn new(name: impl Into<String>, c: u64, t: u64) -> Task {
        Task {
            name: name.into(),
            c,
            t,
            d: t,
            j: 0,
            b: 0,
        }
    }
}

/// The analysis of one task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskResponse {
    /// Worst-case response time; `None` when the busy period does not end (the task and
    /// those above it need more than the whole CPU).
    pub response: Option<u64>,
    /// Whether the response time is within the deadline.
    pub schedulable: bool,
    /// The fixed-point iterates of the first job (q = 0), for showing the work.
    pub iterates: Vec<u64>,
}

/// Analyses `tasks`, given in priority order (highest first).
pub fn response_times(tasks: &[Task]) -> Vec<TaskResponse> {
    (0..tasks.len()).map(|i| analyse(tasks, i)).collect()
}

fn interference(hp: &[Task], w: u64) -> Option<u64> {
    let mut s: u64 = 0;
    for t in hp {
        let n = (w + t.j).div_ceil(t.t.max(1));
        s = s.checked_add(n.checked_mul(t.c)?)?;
    }
    Some(s)
}

fn analyse(tasks: &[Task], i: usize) -> TaskResponse {
    let me = &tasks[i];
    let hp = &tasks[..i];
    let unbounded = TaskResponse {
        response: None,
        schedulable: false,
        iterates: Vec::new(),
    };
    // The busy period ends only if the utilisation of hp(i) and i is at most 1.
    let u: f64 = tasks[..=i]
        .iter()
        .map(|t| t.c as f64 / t.t.max(1) as f64)
        .sum();
    if u > 1.0 + 1e-12 {
        // still report the first job's iterates up to the deadline breach
        let mut w = me.c + me.b;
        let mut it = vec![w];
        for _ in 0..64 {
            match interference(hp, w) {
                Some(x) if me.c + me.b + x != w => {
                    w = me.c + me.b + x;
                    it.push(w);
                    if w + me.j > me.d {
                        break;
                    }
                }
                _ => break,
            }
        }
        return TaskResponse {
            iterates: it,
            ..unbounded
        };
    }
    let limit = tasks
        .iter()
        .map(|t| t.t)
        .max()
        .unwrap_or(1)
        .saturating_mul(1_000_000);
    let mut worst = 0u64;
    let mut first_iterates = Vec::new();
    for q in 0u64.. {
        let base = (q + 1) * me.c + me.b;
        let mut w = base;
        let mut it = vec![w];
        loop {
            let Some(x) = interference(hp, w) else {
                return unbounded;
            };
            let next = base + x;
            if next == w {
                break;
            }
            w = next;
            it.push(w);
            if w > limit {
                return unbounded;
            }
        }
        if q == 0 {
            first_iterates = it;
        }
        let r = w - q * me.t + me.j;
        worst = worst.max(r);
        if w <= (q + 1) * me.t {
            break;
        }
    }
    TaskResponse {
        response: Some(worst),
        schedulable: worst <= me.d,
        iterates: first_iterates,
    }
}

/// The Liu & Layland utilisation bound n(2^{1/n} − 1) (sufficient for rate-monotonic
/// priorities, D = T). Pure.
pub fn liu_layland_bound(n: usize) -> f64 {
    let n = n.max(1) as f64;
    n * (2f64.powf(1.0 / n) - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(tasks: &[Task]) -> Vec<Option<u64>> {
        response_times(tasks)
            .into_iter()
            .map(|r| r.response)
            .collect()
    }

    #[test]
    fn the_papers_task_set_gives_3_and_29() {
        let ms = 1_000_000;
        let set = [
            Task::new("audio", 3 * ms, 8 * ms),
            Task::new("video", 17 * ms, 33 * ms),
        ];
        let r = response_times(&set);
        assert_eq!(r[0].response, Some(3 * ms));
        assert_eq!(r[1].response, Some(29 * ms));
        assert!(r[0].schedulable && r[1].schedulable);
        assert_eq!(r[1].iterates, vec![17 * ms, 26 * ms, 29 * ms]);
        // with 8 ms of release jitter and 19 ms of work: 39 ms, past the 33 ms deadline
        let video = Task {
            j: 8 * ms,
            ..Task::new("video", 19 * ms, 33 * ms)
        };
        let r = response_times(&[set[0].clone(), video]);
        assert_eq!(r[1].response, Some(39 * ms));
        assert!(!r[1].schedulable);
        // 12 ms of work instead: schedulable (12 + 2*3 = 18 -> 12 + 3*3 = 21 -> 21)
        let r = response_times(&[set[0].clone(), Task::new("video", 12 * ms, 33 * ms)]);
        assert_eq!(r[1].response, Some(21 * ms));
    }

    #[test]
    fn textbook_sets() {
        // Notes §8 / Buttazzo: (1,4),(2,6),(3,12), U = 0.833 > LL bound 0.780, yet R = 1, 3, 10
        let s = [
            Task::new("a", 1, 4),
            Task::new("b", 2, 6),
            Task::new("c", 3, 12),
        ];
        assert!(0.833 > liu_layland_bound(3));
        assert_eq!(rs(&s), vec![Some(1), Some(3), Some(10)]);
        assert!(response_times(&s).iter().all(|r| r.schedulable));
        // Burns & Wellings: (3,7),(3,12),(5,20): R = 3, 6, 20 — exactly at the deadline
        let s = [
            Task::new("a", 3, 7),
            Task::new("b", 3, 12),
            Task::new("c", 5, 20),
        ];
        assert_eq!(rs(&s), vec![Some(3), Some(6), Some(20)]);
        assert!(response_times(&s)[2].schedulable);
        // Buttazzo: (2,5),(4,7), U = 0.971: not RM-schedulable, R2 = 8 > 7
        let s = [Task::new("a", 2, 5), Task::new("b", 4, 7)];
        let r = response_times(&s);
        assert_eq!(r[1].response, Some(8));
        assert!(!r[1].schedulable);
        // (1,4),(2,6),(3,8), U = 0.958: R3 = 10 > 8 (the second job's 8 is less)
        let s = [
            Task::new("a", 1, 4),
            Task::new("b", 2, 6),
            Task::new("c", 3, 8),
        ];
        assert_eq!(rs(&s), vec![Some(1), Some(3), Some(10)]);
        assert!(!response_times(&s)[2].schedulable);
    }

    #[test]
    fn overload_is_unbounded_and_blocking_counts() {
        let s = [Task::new("a", 3, 5), Task::new("b", 3, 5)];
        let r = response_times(&s);
        assert_eq!(r[1].response, None);
        assert!(!r[1].schedulable);
        let b = Task {
            b: 2,
            ..Task::new("a", 1, 10)
        };
        assert_eq!(rs(&[b]), vec![Some(3)]);
        assert!((liu_layland_bound(1) - 1.0).abs() < 1e-12);
        assert!((liu_layland_bound(2) - 0.8284).abs() < 1e-4);
    }
}
