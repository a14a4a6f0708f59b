//! Progress on long work: the bar goes to a terminal's stderr only. Here
//! stdout and stderr are pipes, as in a script or CI, so a long-ish simulation must leave
//! no trace of a bar in either, and its result file none either. (On a terminal the bar
//! shows the step and an ETA; that is checked by hand, see docs/cli.md.)

use crate::util::{latlab, text};

/// What a drawn bar leaves behind: carriage returns, escape sequences, its ETA and fill.
fn assert_no_progress(what: &str, out: &str) {
    for needle in ["\r", "\x1b[", "ETA", "[=", "=>", "simulating"] {
        assert!(!out.contains(needle), "{what} holds {needle:?}: {out:?}");
    }
}

#[test]
fn a_simulation_with_piped_output_writes_no_progress_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    for quiet in [false, true] {
        let result = dir.path().join(format!("sim-{quiet}.json"));
        let mut cmd = latlab();
        cmd.args(["dfs", "sim", "--nodes", "64", "--time-slices", "2000", "-o"])
            .arg(&result);
        if quiet {
            cmd.arg("-q");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_no_progress("stderr", &stderr);
        assert_no_progress("stdout", &stdout);
        assert!(
            stderr.is_empty(),
            "nothing but errors on stderr: {stderr:?}"
        );
        assert_eq!(stdout.is_empty(), quiet, "{stdout}");
        if !quiet {
            assert!(stdout.contains("best-effort"), "the summary: {stdout}");
        }
        for f in std::fs::read_dir(dir.path()).unwrap() {
            let body = std::fs::read_to_string(f.unwrap().path()).unwrap();
            assert_no_progress("a result file", &without_histogram_data(&body));
        }
    }
}

/// A result file's text less its histograms' encoded bytes: base64 may spell "ETA" or
/// "=>" by chance, and a bar never writes there.
fn without_histogram_data(body: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(body).expect("a result file is JSON");
    if let Some(hs) = v["histograms"].as_array_mut() {
        for h in hs {
            h["data"] = serde_json::Value::Null;
        }
    }
    v.to_string()
}
