//! `latlab explain`: the attribution a result carries, as text or JSON.

use crate::args::host_noise::ExplainArgs;
use crate::exit::usage;
use latlab_explain::render;

/// What records an attribution for a result of `kind`, for the error when it has none.
fn how_to_record(kind: &str) -> &'static str {
    match kind {
        "net.probe" => "run `latlab net probe` with --explain",
        "net.nf" => "run `latlab net reflect` or `latlab net forward` with --explain",
        "net.delay" => "run `latlab net delay` with --explain",
        "host.clocks" => "run `latlab host clocks` with --explain",
        "sched.run" => "run `latlab sched` with --explain",
        "net.calibrate" | "net.killer_us" | "sched.hourglass_experiment" => {
            "an experiment's summary: give `latlab explain` the run files written beside it"
        }
        _ => {
            "its command records none: `latlab host noise` does, and `net probe`, \
             `net reflect`, `net forward`, `net delay`, `sched` and `host clocks` with --explain"
        }
    }
}

pub fn run(a: ExplainArgs) -> anyhow::Result<()> {
    let loaded = crate::inputs::load_results(&a.results)?;
    // Every file is checked before anything is printed.
    let mut found = Vec::with_capacity(loaded.len());
    for (path, r) in &loaded {
        let attribution = r.explain.as_ref().ok_or_else(|| {
            usage(format!(
                "{}: this {} result carries no attribution ({})",
                path.display(),
                r.kind,
                how_to_record(&r.kind)
            ))
        })?;
        found.push((path, r, attribution));
    }
    if a.json {
        let mut docs = Vec::new();
        for (path, r, attribution) in &found {
            let mut v = serde_json::to_value(attribution)?;
            if let Some(o) = v.as_object_mut() {
                o.insert("result".into(), path.display().to_string().into());
                o.insert("kind".into(), r.kind.clone().into());
            }
            docs.push(v);
        }
        let doc = if docs.len() == 1 {
            docs.remove(0)
        } else {
            serde_json::Value::Array(docs)
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    for (i, (path, r, attribution)) in found.iter().enumerate() {
        if i > 0 {
            println!();
        }
        println!(
            "{} ({}): {} windows",
            path.display(),
            r.kind,
            attribution.windows
        );
        print!("{}", render::causes_table(attribution));
        if a.advise {
            println!("what removes the top causes (share of the excess, runtime or boot-only):");
            print!("{}", render::advice_text(attribution));
        }
        if !attribution.bands.is_empty() {
            println!("by percentile band of the windows' lengths:");
            print!("{}", render::bands_text(attribution));
        }
        if !attribution.worst.is_empty() {
            println!("worst:");
            print!("{}", render::worst_text(attribution));
        }
    }
    Ok(())
}
