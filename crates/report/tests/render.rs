//! End-to-end rendering tests: SVG text, PNG files, panels, errors.

use latlab_report::{
    render, render_panels, render_svg_string, Curve, ImageFormat, PlotError, PlotKind, PlotSpec,
};
use std::path::Path;

/// Log-spaced x from 20 ns to 5 µs.
fn xs() -> impl Iterator<Item = f64> {
    let n = 200;
    (0..n).map(move |i| 20.0 * (5000.0f64 / 20.0).powf(i as f64 / (n - 1) as f64))
}

/// Exponential CCDF (mean 400 ns above 20 ns): reaches ~1e-5 at 5 µs.
fn exp_ccdf() -> Curve {
    Curve {
        label: "exponential, mean 400 ns".into(),
        points: xs().map(|x| (x, (-(x - 20.0) / 400.0).exp())).collect(),
    }
}

/// Heavier-tailed mixture CCDF: reaches ~4e-4 at 5 µs.
fn mixture_ccdf() -> Curve {
    Curve {
        label: "mixture (1% slow path)".into(),
        points: xs()
            .map(|x| {
                let t = x - 20.0;
                (x, 0.99 * (-t / 100.0).exp() + 0.01 * (-t / 1500.0).exp())
            })
            .collect(),
    }
}

/// Log-spaced x from 20 ns to 2 ms with a power-law tail (clock-read gaps
/// on a noisy core), truncated at 1e-6 like real callers do.
fn wide_ccdf(label: &str, tail_weight: f64, alpha: f64) -> Curve {
    let n = 400;
    Curve {
        label: label.into(),
        points: (0..n)
            .map(|i| 20.0 * (1e5f64).powf(i as f64 / (n - 1) as f64))
            .map(|x| {
                let body = (1.0 - tail_weight) * (-(x - 20.0) / 10.0).exp();
                (x, body + tail_weight * (50.0 / (x + 30.0)).powf(alpha))
            })
            .filter(|&(_, y)| y >= 1e-6)
            .collect(),
    }
}

fn as_cdf(c: &Curve) -> Curve {
    Curve {
        label: c.label.clone(),
        points: c.points.iter().map(|&(x, y)| (x, 1.0 - y)).collect(),
    }
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG magic");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

#[test]
fn ccdf_svg_has_labels_axes_and_paths() {
    let spec = PlotSpec {
        title: "synthetic gaps".into(),
        ..PlotSpec::default()
    };
    let svg = render_svg_string(&[exp_ccdf(), mixture_ccdf()], &spec).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
    assert!(svg.contains("<text"));
    for label in [
        "exponential, mean 400 ns",
        "mixture (1% slow path)",
        "synthetic gaps",
    ] {
        assert!(svg.contains(label), "missing text {label}");
    }
    // Legend labels are real <text> elements.
    let text_of = |needle: &str| {
        svg.split("<text")
            .skip(1)
            .any(|t| t.split("</text>").next().unwrap_or("").contains(needle))
    };
    assert!(text_of("exponential, mean 400 ns"));
    assert!(text_of("mixture (1% slow path)"));
    assert!(text_of("latency (µs)"));
    assert!(text_of("fraction of samples &gt; x (CCDF)"));
    assert!(text_of("(p99.9)"), "p99.9 tick label");
    assert!(text_of("(p99.99)"));
    assert!(svg.contains("<polyline") || svg.contains("<path"));
}

#[test]
fn ccdf_percentile_ticks_follow_data_depth() {
    // Data only down to 0.05: axis 1 .. 0.01, so no p99.9 tick.
    let shallow = Curve {
        label: "shallow".into(),
        points: vec![(100.0, 1.0), (200.0, 0.3), (400.0, 0.05)],
    };
    let svg = render_svg_string(&[shallow], &PlotSpec::default()).unwrap();
    assert!(svg.contains("p99)"));
    assert!(!svg.contains("p99.9"));
}

#[test]
fn wide_range_uses_log_x() {
    let curves = [
        wide_ccdf("noisy core", 0.02, 0.9),
        wide_ccdf("isolated core", 1e-3, 1.5),
    ];
    let svg = render_svg_string(&curves, &PlotSpec::default()).unwrap();
    // Log x over 20 ns .. 2 ms: labelled in µs (0.01 .. 1000), not 10^-5 .. 1 ms.
    assert!(svg.contains("latency (µs)"));
    let flat = svg.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("> 0.01 <") && flat.contains("> 1000 <"),
        "x ticks 0.01 .. 1000 µs"
    );
    assert!(svg.contains("(p99.9999)"));
    // Forcing a linear axis still works.
    let spec = PlotSpec {
        x_log: Some(false),
        ..PlotSpec::default()
    };
    let svg = render_svg_string(&curves, &spec).unwrap();
    assert!(!svg.contains("10⁻⁵<") && svg.contains("latency (ms)"));
}

#[test]
fn cdf_svg() {
    let spec = PlotSpec {
        kind: PlotKind::Cdf,
        ..PlotSpec::default()
    };
    let svg = render_svg_string(&[as_cdf(&exp_ccdf()), as_cdf(&mixture_ccdf())], &spec).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("fraction of samples &lt;= x (CDF)"));
    assert!(svg.contains("latency (µs)"));
    assert!(!svg.contains("(p99"));
}

#[test]
fn many_curves_and_odd_points() {
    let curves: Vec<Curve> = (0..12)
        .map(|i| Curve {
            label: format!("run {i}"),
            points: vec![
                (f64::NAN, 0.5),
                (-5.0, 0.5),
                (10.0 + i as f64, 1.0),
                (50.0 + 10.0 * i as f64, 0.2),
                (90.0, 0.0),
            ],
        })
        .collect();
    let svg = render_svg_string(&curves, &PlotSpec::default()).unwrap();
    for i in 0..12 {
        assert!(svg.contains(&format!("run {i}")));
    }
    // Linear x in ns for a narrow range.
    assert!(svg.contains("latency (ns)"));
}

#[test]
fn png_file_has_requested_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ccdf.PNG");
    let spec = PlotSpec {
        width: 800,
        height: 500,
        ..PlotSpec::default()
    };
    render(&[exp_ccdf(), mixture_ccdf()], &spec, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(png_size(&bytes), (800, 500));
}

#[test]
fn svg_file_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ccdf.svg");
    render(&[exp_ccdf()], &PlotSpec::default(), &path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("<svg"));
    assert!(text.contains("exponential, mean 400 ns"));
}

#[test]
fn unknown_format_and_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let jpg = dir.path().join("x.jpg");
    let err = render(&[exp_ccdf()], &PlotSpec::default(), &jpg).unwrap_err();
    assert!(matches!(err, PlotError::UnknownFormat { .. }), "{err}");
    assert!(err.to_string().contains("x.jpg"));
    assert!(!jpg.exists());
    assert!(matches!(
        ImageFormat::from_path(Path::new("a.jpeg")),
        Err(PlotError::UnknownFormat { .. })
    ));

    let png = dir.path().join("x.png");
    let empty = Curve {
        label: "empty".into(),
        points: vec![],
    };
    assert!(matches!(
        render(&[], &PlotSpec::default(), &png),
        Err(PlotError::NoData)
    ));
    assert!(matches!(
        render(&[empty.clone(), empty], &PlotSpec::default(), &png),
        Err(PlotError::NoData)
    ));
    assert!(matches!(
        render_svg_string(&[], &PlotSpec::default()),
        Err(PlotError::NoData)
    ));
    // CCDF with only zero probabilities has nothing to show on a log axis.
    let zeros = Curve {
        label: "z".into(),
        points: vec![(10.0, 0.0), (20.0, 0.0)],
    };
    assert!(matches!(
        render_svg_string(&[zeros], &PlotSpec::default()),
        Err(PlotError::NoData)
    ));
    assert!(!png.exists());
}

#[test]
fn io_error_names_path() {
    let dir = tempfile::tempdir().unwrap();
    // A missing directory is created; a path through a regular file cannot be.
    let made = dir.path().join("new-dir").join("x.svg");
    render(&[exp_ccdf()], &PlotSpec::default(), &made).unwrap();
    assert!(made.exists());
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    let path = blocker.join("x.svg");
    let err = render(&[exp_ccdf()], &PlotSpec::default(), &path).unwrap_err();
    assert!(matches!(err, PlotError::Io { .. }), "{err}");
    assert!(err.to_string().contains("a-file"));
}

#[test]
fn panels_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("panels.png");
    let cdf = PlotSpec {
        kind: PlotKind::Cdf,
        title: "CDF".into(),
        width: 700,
        height: 500,
        x_log: None,
    };
    let ccdf = PlotSpec {
        kind: PlotKind::Ccdf,
        title: "CCDF".into(),
        width: 900,
        height: 550,
        x_log: None,
    };
    let panels = vec![
        (cdf, vec![as_cdf(&exp_ccdf()), as_cdf(&mixture_ccdf())]),
        (ccdf, vec![exp_ccdf(), mixture_ccdf()]),
    ];
    render_panels(&panels, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(png_size(&bytes), (1600, 550));

    let svg_path = dir.path().join("panels.svg");
    render_panels(&panels, &svg_path).unwrap();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.contains("(CDF)") && svg.contains("(CCDF)"));

    assert!(matches!(render_panels(&[], &path), Err(PlotError::NoData)));
}

/// Writes sample figures for eyeballing when `LATLAB_REPORT_SAMPLE_DIR` is set.
#[test]
fn sample_figures() {
    let Some(dir) = std::env::var_os("LATLAB_REPORT_SAMPLE_DIR") else {
        return;
    };
    let dir = Path::new(&dir);
    let spec = PlotSpec {
        title: "clock read gaps (synthetic)".into(),
        ..PlotSpec::default()
    };
    let curves = [
        wide_ccdf("noisy core", 0.02, 0.9),
        wide_ccdf("isolated core", 1e-3, 1.5),
        exp_ccdf(),
    ];
    render(&curves, &spec, &dir.join("ccdf.png")).unwrap();
    render(&curves, &spec, &dir.join("ccdf.svg")).unwrap();
    let cdf = PlotSpec {
        kind: PlotKind::Cdf,
        ..spec.clone()
    };
    let cdfs: Vec<Curve> = curves.iter().map(as_cdf).collect();
    render(&cdfs, &cdf, &dir.join("cdf.png")).unwrap();
    let small = PlotSpec {
        title: String::new(),
        width: 480,
        height: 320,
        ..PlotSpec::default()
    };
    render(&curves, &small, &dir.join("small.png")).unwrap();
    render_panels(
        &[(cdf, cdfs), (spec, curves.to_vec())],
        &dir.join("panels.png"),
    )
    .unwrap();
}
