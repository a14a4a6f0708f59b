//! Golden reports: `latlab report` over the committed result fixtures in
//! `tests/fixtures/report/` must render exactly what is committed in
//! `tests/fixtures/report/golden/`. The goldens were rendered by the code before the
//! report-rendering restructuring, so a branch that moves the document model or
//! the figure drawing can show that its reports are unchanged.
//!
//! Per case (one report per kind, or per group of kinds that belong together):
//! - `golden/<case>.html.golden`: the report, with its generation time replaced by
//!   [`GENERATED`] (the only part of a report that is not a function of its inputs). Not
//!   `.html`: they are rendered data, and tools that scan the tree's code (the duplicate
//!   finder) would read the repeated figure markup in them as repeated code;
//! - `golden/<case>.figures.sha256`: one `sha256sum` line per standalone figure (SVG and
//!   PNG) written by `--figures`, so `cd DIR && sha256sum -c FILE` checks a figure directory
//!   by hand.
//!
//! Every case is rendered twice: both renderings must be identical byte for byte before
//! they are compared with the golden.
//!
//! On a mismatch the test leaves what it rendered in `target/tmp/golden-report/<case>/`
//! (named in the failure) for `diff -u`. To accept a deliberate change, rewrite the goldens
//! and review their diff before committing:
//!
//! ```text
//! LATLAB_BLESS=1 cargo test -p latlab --test it golden_report
//! ```
//!
//! The `dfs.run` and `dfs.bench` cases need the `mpi` feature (their providers exist only
//! with it); without it they are skipped with a printed line.

use crate::util::{fixture, latlab};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What the generation time in a report's header is replaced with.
const GENERATED: &str = "GENERATED_UTC";

/// A golden report: its name and the `latlab report` inputs (paths relative to
/// `tests/fixtures/report/`; a comma-separated argument is a group of runs merged exactly).
struct Case {
    name: &'static str,
    inputs: &'static [&'static str],
    /// Needs the `mpi` feature.
    mpi: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "host-clocks",
        inputs: &[
            "../host-clocks-a.json",
            "../host-clocks-a.json,../host-clocks-b.json",
        ],
        mpi: false,
    },
    Case {
        name: "host-breakdown",
        inputs: &["host-breakdown.json"],
        mpi: false,
    },
    Case {
        name: "where-time",
        inputs: &["where-time.json"],
        mpi: false,
    },
    Case {
        name: "net-probe",
        inputs: &["net-probe.json"],
        mpi: false,
    },
    Case {
        name: "killer-us",
        inputs: &["killer-us.json"],
        mpi: false,
    },
    Case {
        name: "net-load",
        inputs: &["net-load-2krps.json", "net-load-4krps.json"],
        mpi: false,
    },
    Case {
        name: "net-delay",
        inputs: &["net-delay-run.json", "net-delay-check.json"],
        mpi: false,
    },
    Case {
        name: "sched-run",
        inputs: &["sched-run.json"],
        mpi: false,
    },
    Case {
        name: "sched-cache-cost",
        inputs: &["sched-cache-cost.json"],
        mpi: false,
    },
    Case {
        name: "hourglass",
        inputs: &[
            "hourglass/experiment.json",
            "hourglass/5.2-cache-cost.json",
            "hourglass/5.5-native.json",
            "hourglass/5.5-hr.json",
            "hourglass/5.5-12ms.json",
        ],
        mpi: false,
    },
    Case {
        name: "dfs-sim",
        inputs: &["dfs-sim-best-effort.json", "dfs-sim-dfs.json"],
        mpi: false,
    },
    Case {
        name: "dfs-run",
        inputs: &["dfs-run-best-effort.json", "dfs-run-dfs.json"],
        mpi: true,
    },
    Case {
        name: "dfs-bench",
        inputs: &["dfs-bench.json"],
        mpi: true,
    },
    Case {
        name: "dfs-experiment",
        inputs: &["dfs-experiment.json"],
        mpi: false,
    },
];

/// A rendered case: the normalised HTML and the figure manifest.
#[derive(PartialEq)]
struct Rendered {
    html: String,
    figures: String,
}

/// Renders `case` into `out` (report `out/<case>.html`, figures in `out/<case>-figures/`),
/// running in the fixture directory so that the paths the report prints are relative.
fn render(case: &Case, out: &Path) -> Rendered {
    std::fs::create_dir_all(out).unwrap();
    let html = out.join(format!("{}.html", case.name));
    let figures = out.join(format!("{}-figures", case.name));
    let o = latlab()
        .current_dir(fixture("report"))
        .arg("report")
        .args(case.inputs)
        .arg("-o")
        .arg(&html)
        .arg("--figures")
        .arg(&figures)
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        case.name,
        String::from_utf8_lossy(&o.stderr)
    );
    let text = normalise(&std::fs::read_to_string(&html).unwrap());
    std::fs::write(&html, &text).unwrap();
    let manifest = figure_manifest(&figures);
    std::fs::write(out.join(format!("{}.figures.sha256", case.name)), &manifest).unwrap();
    Rendered {
        html: text,
        figures: manifest,
    }
}

/// Replaces the generation time in the header (`Generated by latlab V at TIME from result
/// files only.`) with [`GENERATED`].
fn normalise(html: &str) -> String {
    let head = "<p>Generated by latlab ";
    let tail = " from result files only.</p>";
    let start = html
        .find(head)
        .expect("the report names its generation time")
        + head.len();
    let end = start
        + html[start..]
            .find(tail)
            .expect("end of the generation line");
    let at = start + html[start..end].find(" at ").expect("' at TIME'") + " at ".len();
    format!("{}{GENERATED}{}", &html[..at], &html[end..])
}

/// `sha256sum` lines of every file in `dir`, sorted by name.
fn figure_manifest(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|n| {
            let digest = Sha256::digest(std::fs::read(dir.join(n)).unwrap());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}  {n}\n")
        })
        .collect()
}

/// Where a case's renderings are kept: `target/tmp/golden-report/<case>/{1,2}/`.
fn scratch(case: &Case) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("golden-report")
        .join(case.name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn reports_on_the_fixtures_match_the_goldens() {
    let bless = std::env::var_os("LATLAB_BLESS").is_some_and(|v| v == "1");
    let golden = fixture("report").join("golden");
    let mut failures = Vec::new();
    for case in CASES {
        if case.mpi && !cfg!(feature = "mpi") {
            latlab_testutil::print_skip(
                latlab_testutil::test_name!(),
                &format!("case {}: needs the mpi feature", case.name),
            );
            continue;
        }
        let dir = scratch(case);
        let first = render(case, &dir.join("1"));
        let second = render(case, &dir.join("2"));
        assert!(
            first == second,
            "{}: two renderings differ: diff -ru {0}/1 {0}/2",
            dir.display()
        );
        let html = golden.join(format!("{}.html.golden", case.name));
        let figs = golden.join(format!("{}.figures.sha256", case.name));
        if bless {
            std::fs::create_dir_all(&golden).unwrap();
            std::fs::write(&html, &first.html).unwrap();
            std::fs::write(&figs, &first.figures).unwrap();
            continue;
        }
        let want_html = std::fs::read_to_string(&html).unwrap_or_default();
        let want_figs = std::fs::read_to_string(&figs).unwrap_or_default();
        if want_html != first.html {
            failures.push(format!(
                "{}: HTML differs: diff -u {} {}",
                case.name,
                html.display(),
                dir.join("1").join(format!("{}.html", case.name)).display()
            ));
        }
        if want_figs != first.figures {
            failures.push(format!(
                "{}: figures differ: diff -u {} {}",
                case.name,
                figs.display(),
                dir.join("1")
                    .join(format!("{}.figures.sha256", case.name))
                    .display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "reports differ from the goldens (LATLAB_BLESS=1 rewrites them):\n{}",
        failures.join("\n")
    );
}
