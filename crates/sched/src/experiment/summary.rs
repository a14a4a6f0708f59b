//! The summary of `latlab experiment hourglass`: one schema, written by the experiment
//! and read by its report sections, and its text.

use serde::{Deserialize, Serialize};

/// The result kind of the experiment's summary.
pub const KIND: &str = "sched.hourglass_experiment";

/// One scenario of the `latlab experiment hourglass` summary, as its `data` holds it:
/// the experiment writes it and the report reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    /// Paper section, e.g. `5.1`.
    pub id: String,
    /// Title.
    pub title: String,
    /// The command lines run (latlab syntax).
    #[serde(default)]
    pub commands: Vec<String>,
    /// Result files, relative to the experiment directory.
    #[serde(default)]
    pub results: Vec<String>,
    /// Figures, relative to the experiment directory.
    #[serde(default)]
    pub figures: Vec<String>,
    /// What was found, one line each.
    #[serde(default)]
    pub findings: Vec<String>,
    /// Where Linux 6.x on this machine differs from the paper, and why.
    #[serde(default)]
    pub linux_note: String,
}

/// The `data` of the experiment's summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSummary {
    /// The scenarios run, in order.
    pub scenarios: Vec<ScenarioSummary>,
    /// Which CPU stood in for the paper's uniprocessor, and why (as asked, or the
    /// quietest by a spin probe of each CPU); empty in older files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub placement: String,
}

impl ScenarioSummary {
    /// A scenario with nothing run yet.
    pub fn new(id: &str, title: &str, linux_note: &str) -> ScenarioSummary {
        ScenarioSummary {
            id: id.into(),
            title: title.into(),
            commands: vec![],
            results: vec![],
            figures: vec![],
            findings: vec![],
            linux_note: linux_note.into(),
        }
    }
}

/// The summary as text. Pure.
pub fn summary_text(scenarios: &[ScenarioSummary]) -> String {
    let mut s = String::new();
    for sc in scenarios {
        s.push_str(&format!("== {} {}\n", sc.id, sc.title));
        for c in &sc.commands {
            s.push_str(&format!("  $ {c}\n"));
        }
        for f in &sc.findings {
            s.push_str(&format!("  - {f}\n"));
        }
        s.push_str(&format!("  Linux 6.x: {}\n", sc.linux_note));
        if !sc.figures.is_empty() {
            s.push_str(&format!("  figures: {}\n", sc.figures.join(", ")));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_reads_back_what_it_wrote_and_prints_each_scenario() {
        let mut sc = ScenarioSummary::new("5.1", "Direct cost", "EEVDF");
        sc.commands.push("latlab sched -n 10".into());
        sc.findings.push("n 12".into());
        sc.figures.push("5.1-cpu.svg".into());
        let s = ExperimentSummary {
            placement: String::new(),
            scenarios: vec![sc],
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v["scenarios"][0]["linux_note"], "EEVDF",
            "the field names are the file's"
        );
        assert_eq!(serde_json::from_value::<ExperimentSummary>(v).unwrap(), s);
        assert_eq!(
            summary_text(&s.scenarios),
            "== 5.1 Direct cost\n  $ latlab sched -n 10\n  - n 12\n  Linux 6.x: EEVDF\n  figures: 5.1-cpu.svg\n"
        );
    }
}
