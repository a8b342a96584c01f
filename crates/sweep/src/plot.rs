//! Plots of a matrix's results with `plotters`: a metric over an axis, one line per value of
//! the series axis (and per extra metric), the paper's points overlaid as crosses in the
//! same colour. SVG and PNG of each. Axis titles carry units; a log scale is used where
//! the values span two decades or more (unless the matrix says otherwise).
//!
//! Text is set in DejaVu Sans, embedded in the binary, so a plot looks the same on any
//! machine and no system font library is needed.

use crate::claims::TAIL_QUANTILES;
use crate::matrix::{show, Axis, Matrix, Plot};
use crate::query::{fmt_num, mean_at, points, published_at};
use crate::results::Results;
use crate::SweepError;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;
use std::path::Path;
use toml::Value;

const SIZE: (u32, u32) = (960, 600);

/// One drawn series.
#[derive(Debug, Clone)]
struct Series {
    name: String,
    color: usize,
    points: Vec<(f64, f64)>,
    paper: bool,
}

/// What one figure shows.
#[derive(Debug, Clone)]
struct Figure {
    title: String,
    x_label: String,
    y_label: String,
    /// Tick labels of a categorical x axis.
    categories: Option<Vec<String>>,
    series: Vec<Series>,
    log_x: bool,
    log_y: bool,
}

fn register_font() -> Result<(), SweepError> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| "the embedded DejaVu Sans font does not load".to_string())
    })
    .clone()
    .map_err(|message| SweepError::Io {
        path: "font".into(),
        message,
    })
}

fn numeric(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn span_decades(vals: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    // Zeros and negatives have no place on a log axis; they are left out of the decision
    // (and of the drawing, when the axis is logarithmic).
    for v in vals.filter(|&v| v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    lo < f64::MAX && hi / lo >= 100.0
}

fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

/// The figures of one plot spec: one per point of the other non-averaged axes.
fn figures(r: &Results, p: &Plot) -> Vec<(String, Figure)> {
    if p.tail {
        return tail_figures(r, p);
    }
    let m = &r.matrix;
    let x_axis: &Axis = m.axis(&p.x).expect("validated");
    let series_axis = p.series.as_deref().map(|s| m.axis(s).expect("validated"));
    let categorical = !x_axis.values.iter().all(|v| numeric(v).is_some());
    let xs: Vec<(f64, &Value)> = x_axis
        .values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            (
                if categorical {
                    i as f64
                } else {
                    numeric(v).expect("numeric")
                },
                v,
            )
        })
        .collect();
    let mut skip = vec![p.x.as_str()];
    if let Some(s) = &p.series {
        skip.push(s);
    }
    let mut out = Vec::new();
    for rest in points(m, &skip, &[]) {
        let mut series = Vec::new();
        let svals: Vec<Option<&Value>> = match series_axis {
            Some(a) => a.values.iter().map(Some).collect(),
            None => vec![None],
        };
        let metrics: Vec<&String> = std::iter::once(&p.metric).chain(&p.extra).collect();
        let mut color = 0;
        for metric in &metrics {
            for sv in &svals {
                let mut at = rest.clone();
                if let (Some(a), Some(v)) = (series_axis, sv) {
                    at.push((a.name.clone(), (*v).clone()));
                }
                let name = match (sv, metrics.len()) {
                    (Some(v), 1) => show(v),
                    (Some(v), _) => format!("{metric} ({})", show(v)),
                    (None, _) => metric.to_string(),
                };
                let mut ours = Vec::new();
                let mut paper = Vec::new();
                for &(x, xv) in &xs {
                    let mut a = at.clone();
                    a.push((x_axis.name.clone(), xv.clone()));
                    if let (Some(y), _, _) = mean_at(r, &a, metric) {
                        ours.push((x, y));
                    }
                    if let Some(y) = published_at(m, &a, metric) {
                        paper.push((x, y));
                    }
                }
                let repeat = series.iter().any(|s: &Series| s.paper && s.points == paper);
                if !paper.is_empty() && !repeat {
                    series.push(Series {
                        name: format!("published: {name}"),
                        color,
                        points: paper,
                        paper: true,
                    });
                }
                series.push(Series {
                    name,
                    color,
                    points: ours,
                    paper: false,
                });
                color += 1;
            }
        }
        let ys = || series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let log_y = p.log_y.unwrap_or_else(|| span_decades(ys()));
        let log_x = !categorical
            && p.log_x
                .unwrap_or_else(|| span_decades(xs.iter().map(|x| x.0)));
        let suffix = if rest.is_empty() {
            String::new()
        } else {
            format!(
                "-{}",
                slug(
                    &rest
                        .iter()
                        .map(|(k, v)| format!("{k}-{}", show(v)))
                        .collect::<Vec<_>>()
                        .join("-")
                )
            )
        };
        let title = if rest.is_empty() {
            p.title.clone()
        } else {
            format!(
                "{} ({})",
                p.title,
                rest.iter()
                    .map(|(k, v)| format!("{k} = {}", show(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        out.push((
            format!("{}-{}{suffix}", m.name, slug(&p.metric)),
            Figure {
                title,
                x_label: x_axis.label.clone(),
                y_label: p.y_label.clone(),
                categories: categorical.then(|| x_axis.values.iter().map(show).collect()),
                series,
                log_x,
                log_y,
            },
        ));
    }
    out
}

/// A latency distribution per value of `p.x` (see [`Plot::tail`]): for each series, the
/// share of requests slower than each quantile (and 1/count at the maximum), log-log; each
/// `extra` metric of the series as a vertical line in its colour.
fn tail_figures(r: &Results, p: &Plot) -> Vec<(String, Figure)> {
    let m = &r.matrix;
    let x_axis: &Axis = m.axis(&p.x).expect("validated");
    let series_axis = p.series.as_deref().map(|s| m.axis(s).expect("validated"));
    let mut skip = vec![p.x.as_str()];
    if let Some(s) = &p.series {
        skip.push(s);
    }
    let metric = |q: &str| format!("{}.{q}", p.metric);
    let mut out = Vec::new();
    for rest in points(m, &skip, &[]) {
        for xv in &x_axis.values {
            let mut at = rest.clone();
            at.push((x_axis.name.clone(), xv.clone()));
            let svals: Vec<Option<&Value>> = match series_axis {
                Some(a) => a.values.iter().map(Some).collect(),
                None => vec![None],
            };
            let mut series = Vec::new();
            let mut floor = 1e-4f64;
            let mut lines = Vec::new();
            for (color, sv) in svals.iter().enumerate() {
                let mut a = at.clone();
                if let (Some(ax), Some(v)) = (series_axis, sv) {
                    a.push((ax.name.clone(), (*v).clone()));
                }
                let mut pts: Vec<(f64, f64)> = TAIL_QUANTILES
                    .iter()
                    .filter_map(|(q, share)| mean_at(r, &a, &metric(q)).0.map(|v| (v, *share)))
                    .collect();
                if let (Some(max), Some(n)) = (
                    mean_at(r, &a, &metric("max_us")).0,
                    mean_at(r, &a, &metric("count")).0,
                ) {
                    if n > 0.0 {
                        pts.push((max, 1.0 / n));
                        floor = floor.min(1.0 / n);
                    }
                }
                pts.retain(|&(v, _)| v > 0.0);
                let name = sv.map_or_else(|| p.metric.clone(), show);
                for e in &p.extra {
                    if let Some(b) = mean_at(r, &a, e).0.filter(|&b| b > 0.0) {
                        lines.push((format!("{e} ({name})"), color, b));
                    }
                }
                series.push(Series {
                    name,
                    color,
                    points: pts,
                    paper: false,
                });
            }
            for (name, color, b) in lines {
                series.push(Series {
                    name,
                    color,
                    points: vec![(b, 1.0), (b, floor)],
                    paper: false,
                });
            }
            let mut label = rest
                .iter()
                .map(|(k, v)| format!("{k} = {}", show(v)))
                .collect::<Vec<_>>();
            label.push(format!("{} = {}", x_axis.name, show(xv)));
            let slugged = label.join("-").replace(" = ", "-");
            out.push((
                format!("{}-{}-tail-{}", m.name, slug(&p.metric), slug(&slugged)),
                Figure {
                    title: format!("{} ({})", p.title, label.join(", ")),
                    x_label: "latency (µs)".into(),
                    y_label: p.y_label.clone(),
                    categories: None,
                    series,
                    log_x: true,
                    log_y: true,
                },
            ));
        }
    }
    out
}

fn range(vals: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    for v in vals {
        if log && v <= 0.0 {
            continue;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return if log { (0.1, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else if lo == hi {
        (lo - 0.5 * lo.abs().max(1.0), hi + 0.5 * hi.abs().max(1.0))
    } else {
        let pad = (hi - lo) * 0.06;
        (
            if lo >= 0.0 {
                (lo - pad).max(0.0)
            } else {
                lo - pad
            },
            hi + pad,
        )
    }
}

fn draw_on<DB: DrawingBackend, X, Y>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    f: &Figure,
    x: X,
    y: Y,
) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let e = |x: &dyn std::fmt::Debug| format!("{x:?}");
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&f.title, ("sans-serif", 24))
        .margin(18)
        .x_label_area_size(56)
        .y_label_area_size(86)
        .build_cartesian_2d(x, y)
        .map_err(|x| e(&x))?;
    let cats = f.categories.clone();
    let (log_x, log_y) = (f.log_x, f.log_y);
    let x_fmt = move |v: &f64| match &cats {
        Some(c) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                c[i as usize].clone()
            } else {
                String::new()
            }
        }
        None => tick(*v, log_x),
    };
    let y_fmt = |v: &f64| tick(*v, log_y);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(f.x_label.as_str())
        .y_desc(f.y_label.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .light_line_style(WHITE.mix(0.0));
    if let Some(c) = &f.categories {
        mesh.x_labels(c.len());
    }
    mesh.draw().map_err(|x| e(&x))?;
    for s in &f.series {
        let color = Palette99::pick(s.color).to_rgba();
        let keep = |p: &&(f64, f64)| (!f.log_x || p.0 > 0.0) && (!f.log_y || p.1 > 0.0);
        let pts: Vec<(f64, f64)> = s.points.iter().filter(keep).copied().collect();
        if s.paper {
            chart
                .draw_series(pts.iter().map(|&p| Cross::new(p, 7, color.stroke_width(2))))
                .map_err(|x| e(&x))?
                .label(s.name.as_str())
                .legend(move |(x, y)| Cross::new((x + 10, y), 6, color.stroke_width(2)));
        } else {
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(|x| e(&x))?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .position(legend_corner(f))
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// A tick label; on a log axis only at 1, 2 and 5 times a power of ten (the others would
/// crowd each other).
fn tick(v: f64, log: bool) -> String {
    if log && v > 0.0 {
        let m = v / 10f64.powf(v.log10().floor());
        if ![1.0, 2.0, 5.0, 10.0]
            .iter()
            .any(|k| (m - k).abs() < 1e-6 * k)
        {
            return String::new();
        }
    }
    fmt_num(v)
}

/// The upper corner whose quarter of the x range holds the lower data (in the plot's
/// scale), so the legend covers as little as possible.
fn legend_corner(f: &Figure) -> SeriesLabelPosition {
    let pts: Vec<(f64, f64)> = f
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    let tx = |x: f64| if f.log_x { x.max(1e-300).ln() } else { x };
    let ty = |y: f64| if f.log_y { y.max(1e-300).ln() } else { y };
    let (x0, x1) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
        (a.min(tx(p.0)), b.max(tx(p.0)))
    });
    let quarter = (x1 - x0) / 4.0;
    let top = |left: bool| {
        pts.iter()
            .filter(|p| {
                if left {
                    tx(p.0) <= x0 + quarter
                } else {
                    tx(p.0) >= x1 - quarter
                }
            })
            .map(|p| ty(p.1))
            .fold(f64::MIN, f64::max)
    };
    if top(true) < top(false) {
        SeriesLabelPosition::UpperLeft
    } else {
        SeriesLabelPosition::UpperRight
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    f: &Figure,
) -> Result<(), String> {
    let xs = f.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x0, x1) = match &f.categories {
        Some(c) => (-0.5, c.len() as f64 - 0.5),
        None => range(xs, f.log_x),
    };
    let (y0, y1) = range(
        f.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        f.log_y,
    );
    match (f.log_x, f.log_y) {
        (false, false) => draw_on(root, f, x0..x1, y0..y1),
        (true, false) => draw_on(root, f, (x0..x1).log_scale(), y0..y1),
        (false, true) => draw_on(root, f, x0..x1, (y0..y1).log_scale()),
        (true, true) => draw_on(root, f, (x0..x1).log_scale(), (y0..y1).log_scale()),
    }
}

/// Draws every plot of the matrix into `dir` as SVG and PNG; returns `(title, png file
/// name)` of each figure, for the report.
pub fn draw_all(r: &Results, dir: &Path) -> Result<Vec<(String, String)>, SweepError> {
    let m: &Matrix = &r.matrix;
    if m.plots.is_empty() {
        return Ok(Vec::new());
    }
    register_font()?;
    std::fs::create_dir_all(dir).map_err(|e| SweepError::io(dir, e))?;
    let mut out = Vec::new();
    for p in &m.plots {
        for (name, f) in figures(r, p) {
            let svg = dir.join(format!("{name}.svg"));
            let png = dir.join(format!("{name}.png"));
            draw(SVGBackend::new(&svg, SIZE).into_drawing_area(), &f)
                .map_err(|e| SweepError::io(&svg, e))?;
            draw(BitMapBackend::new(&png, SIZE).into_drawing_area(), &f)
                .map_err(|e| SweepError::io(&png, e))?;
            out.push((f.title.clone(), format!("{name}.png")));
        }
    }
    Ok(out)
}
