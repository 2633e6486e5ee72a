//! Charts drawn with plotters' SVG backend: the library places scales, ticks, axes and
//! legends; this file only says what to draw. Each function returns one `<svg>` element.

use plotters::prelude::*;

/// Okabe–Ito: distinguishable with the common colour-vision deficiencies, and in print.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xF0, 0xE4, 0x42),
    RGBColor(0x00, 0x00, 0x00),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

const W: u32 = 720;
const H: u32 = 340;

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

/// One bar: mean, 95% CI half-width, and the text written above it.
pub struct Bar {
    pub mean: f64,
    pub ci95: f64,
    pub note: String,
}

/// Bars across configurations (one colour each), whiskers for the 95% CI, the baseline
/// (first) outlined and labelled, each bar's note (relative difference) above it.
pub fn bars(title: &str, y_desc: &str, labels: &[String], bars: &[Bar]) -> String {
    let mut s = String::new();
    if let Err(e) = draw_bars(&mut s, title, y_desc, labels, bars) {
        return format!("<p class=err>chart failed: {e}</p>");
    }
    s
}

fn draw_bars(
    out: &mut String,
    title: &str,
    y_desc: &str,
    labels: &[String],
    bars: &[Bar],
) -> DrawResult<()> {
    let n = bars.len().max(1);
    let top = bars
        .iter()
        .map(|b| b.mean + b.ci95)
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.18;
    // Legend entries wrap onto a second line at a comma; the chart grows to hold them.
    let legend_lines: Vec<Vec<String>> = labels.iter().take(12).map(|l| wrap2(l, 30)).collect();
    let legend_h = 40
        + legend_lines
            .iter()
            .map(|l| l.len() as u32 * 13 + 5)
            .sum::<u32>();
    let h = H.max(legend_h);
    let root = SVGBackend::with_string(out, (W, h)).into_drawing_area();
    root.fill(&WHITE)?;
    // Up to 12 configurations get a legend in a column of its own (never over the bars);
    // the x axis names them too when there are so few that the names fit.
    let legend = n > 1 && n <= 12;
    let names_fit = n <= 4 && labels.iter().all(|l| l.chars().count() <= 90 / n);
    let (plot_area, legend_area) = if legend {
        let (a, b) = root.split_horizontally(W - 190);
        (a, Some(b))
    } else {
        (root.clone(), None)
    };
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(if names_fit { 40 } else { 24 })
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n as f64, 0f64..top)?;
    let labels_owned: Vec<String> = labels.to_vec();
    let fmt = move |x: &f64| {
        let i = x.floor() as usize;
        if (x - i as f64 - 0.5).abs() < 1e-6 && names_fit {
            labels_owned.get(i).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * n + 1)
        .x_label_formatter(&fmt)
        .x_desc(if names_fit {
            "configuration"
        } else if legend {
            "configuration (colours as listed)"
        } else {
            "configuration (see table)"
        })
        .y_desc(y_desc)
        .draw()?;
    for (i, b) in bars.iter().enumerate() {
        let c = colour(i);
        let x0 = i as f64 + 0.15;
        let x1 = i as f64 + 0.85;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x0, 0.0), (x1, b.mean)],
            c.filled(),
        )))?;
        if i == 0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, 0.0), (x1, b.mean)],
                BLACK.stroke_width(2),
            )))?;
        }
        if b.ci95 > 0.0 {
            let (lo, hi) = ((b.mean - b.ci95).max(0.0), b.mean + b.ci95);
            chart.draw_series(whisker(i as f64 + 0.5, lo, hi))?;
        }
        if n <= 24 && !b.note.is_empty() {
            chart.draw_series(std::iter::once(Text::new(
                b.note.clone(),
                (i as f64 + 0.12, b.mean + b.ci95 + top * 0.05),
                ("sans-serif", if n > 8 { 10 } else { 12 }).into_font(),
            )))?;
        }
    }
    if let Some(area) = legend_area {
        draw_legend(&area, &legend_lines)?;
    }
    root.present()?;
    Ok(())
}

/// An interval's whisker at `x`: a vertical line from `lo` to `hi` and a cap at each end.
fn whisker(x: f64, lo: f64, hi: f64) -> [PathElement<(f64, f64)>; 3] {
    let w = 0.12;
    [
        PathElement::new(vec![(x, lo), (x, hi)], BLACK.stroke_width(1)),
        PathElement::new(vec![(x - w, lo), (x + w, lo)], BLACK.stroke_width(1)),
        PathElement::new(vec![(x - w, hi), (x + w, hi)], BLACK.stroke_width(1)),
    ]
}

/// The configurations' legend in a column of its own: a colour box (the baseline's framed)
/// and the label's lines.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    legend_lines: &[Vec<String>],
) -> DrawResult<()>
where
    DB::ErrorType: 'static,
{
    let font = ("sans-serif", 12).into_font();
    let mut y = 40;
    for (i, lines) in legend_lines.iter().enumerate() {
        let c = colour(i);
        area.draw(&Rectangle::new([(4, y - 6), (16, y + 6)], c.filled()))?;
        if i == 0 {
            area.draw(&Rectangle::new(
                [(4, y - 6), (16, y + 6)],
                BLACK.stroke_width(2),
            ))?;
        }
        for (k, line) in lines.iter().enumerate() {
            area.draw(&Text::new(
                line.clone(),
                (22, y - 7 + k as i32 * 13),
                font.clone(),
            ))?;
        }
        y += lines.len() as i32 * 13 + 5;
    }
    Ok(())
}

/// Grouped bars: for each category on the x axis, one bar per series side by side (e.g. a
/// profile's share of files per size bucket beside the aged population's), with a legend.
pub fn grouped(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> String {
    let mut s = String::new();
    if let Err(e) = draw_grouped(&mut s, title, x_desc, y_desc, categories, series) {
        return format!("<p class=err>chart failed: {e}</p>");
    }
    s
}

fn draw_grouped(
    out: &mut String,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> DrawResult<()> {
    let n = categories.len().max(1);
    let top = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.3; // room for the legend above the tallest bar
    let root = SVGBackend::with_string(out, (W, H)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n as f64, 0f64..top)?;
    // Every category named when they fit; otherwise every k-th.
    let every = n.div_ceil(12).max(1);
    let cats: Vec<String> = categories.to_vec();
    let fmt = move |x: &f64| {
        let i = x.floor() as usize;
        if (x - i as f64 - 0.5).abs() < 1e-6 && i.is_multiple_of(every) {
            cats.get(i).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * n + 1)
        .x_label_formatter(&fmt)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()?;
    let k = series.len().max(1) as f64;
    let w = 0.8 / k;
    for (j, (label, values)) in series.iter().enumerate() {
        let c = colour(j);
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                let x0 = i as f64 + 0.1 + j as f64 * w;
                Rectangle::new([(x0, 0.0), (x0 + w * 0.92, *v)], c.filled())
            }))?
            .label(label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// A label on at most two lines of about `width` characters, broken after a comma where
/// possible; what does not fit ends in an ellipsis.
fn wrap2(label: &str, width: usize) -> Vec<String> {
    let cut = |s: &str, n: usize| -> String {
        if s.chars().count() <= n {
            s.to_string()
        } else {
            let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
            t.push('…');
            t
        }
    };
    if label.chars().count() <= width {
        return vec![label.to_string()];
    }
    let head: String = label.chars().take(width).collect();
    let split = head.rfind(", ").map(|i| i + 2).unwrap_or(head.len());
    let (a, b) = label.split_at(split);
    vec![a.trim_end().to_string(), cut(b.trim_start(), width)]
}

/// A line: its label and points; `band` (same length) gives a (low, high) band around it.
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub band: Option<Vec<(f64, f64)>>,
}

/// Lines on shared axes, optionally log-scaled in x; y from `y_range`.
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    log_x: bool,
    lines: &[Line],
    y_range: Option<(f64, f64)>,
) -> String {
    let mut s = String::new();
    let r = if log_x {
        draw_lines_log(&mut s, title, x_desc, y_desc, lines, y_range)
    } else {
        draw_lines_lin(&mut s, title, x_desc, y_desc, lines, y_range)
    };
    if let Err(e) = r {
        return format!("<p class=err>chart failed: {e}</p>");
    }
    s
}

fn extent(lines: &[Line], y_range: Option<(f64, f64)>) -> (f64, f64, f64, f64) {
    let pts = || lines.iter().flat_map(|l| l.points.iter());
    let xmin = pts().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xmax = pts().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let (ymin, ymax) = y_range.unwrap_or_else(|| {
        let hi = lines
            .iter()
            .flat_map(|l| {
                l.points
                    .iter()
                    .map(|p| p.1)
                    .chain(l.band.iter().flatten().map(|b| b.1))
            })
            .fold(0.0f64, f64::max);
        (0.0, hi.max(1e-9) * 1.08)
    });
    let (xmin, xmax) = if xmin.is_finite() && xmax > xmin {
        (xmin, xmax)
    } else if xmin.is_finite() {
        (xmin - 0.5, xmin + 0.5)
    } else {
        (0.0, 1.0)
    };
    (xmin, xmax, ymin, ymax)
}

macro_rules! draw_lines_body {
    ($root:ident, $chart:ident, $lines:ident, $x_desc:ident, $y_desc:ident) => {{
        $chart
            .configure_mesh()
            .x_desc($x_desc)
            .y_desc($y_desc)
            .light_line_style(RGBColor(0xEE, 0xEE, 0xEE))
            .draw()?;
        for (i, l) in $lines.iter().enumerate() {
            let c = colour(i);
            if let Some(b) = &l.band {
                let mut poly: Vec<(f64, f64)> =
                    l.points.iter().zip(b).map(|(p, b)| (p.0, b.1)).collect();
                poly.extend(l.points.iter().zip(b).rev().map(|(p, b)| (p.0, b.0)));
                $chart.draw_series(std::iter::once(Polygon::new(poly, c.mix(0.2).filled())))?;
            }
            $chart
                .draw_series(LineSeries::new(l.points.iter().copied(), c.stroke_width(2)))?
                .label(l.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                });
        }
        $chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        $root.present()?;
        Ok(())
    }};
}

fn draw_lines_lin(
    out: &mut String,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    y_range: Option<(f64, f64)>,
) -> DrawResult<()> {
    let (xmin, xmax, ymin, ymax) = extent(lines, y_range);
    let root = SVGBackend::with_string(out, (W, H)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(xmin..xmax, ymin..ymax)?;
    draw_lines_body!(root, chart, lines, x_desc, y_desc)
}

fn draw_lines_log(
    out: &mut String,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    y_range: Option<(f64, f64)>,
) -> DrawResult<()> {
    let (xmin, xmax, ymin, ymax) = extent(lines, y_range);
    let (xmin, xmax) = (xmin.max(1e-3) * 0.8, xmax.max(xmin.max(1e-3) * 10.0) * 1.25);
    let root = SVGBackend::with_string(out, (W, H)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((xmin..xmax).log_scale(), ymin..ymax)?;
    draw_lines_body!(root, chart, lines, x_desc, y_desc)
}
