//! The eval's picture: each configuration a point, its resolve rate across, its mean cost per
//! task up, as a small hand-written SVG (no plotting library) that a browser or GitHub shows.
//! Pure: figures in, text out.
//! Not for: the figures (`eval::rules::summarise`) or the Markdown around it (`eval::report`).

/// One point: a configuration's label, resolve rate (0 to 1) and mean cost per task in USD.
pub struct Point<'a> {
    pub label: &'a str,
    pub resolve_rate: f64,
    pub cost_per_task: f64,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 6] = [
    "#1565c0", "#e65100", "#2e7d32", "#6a1b9a", "#c62828", "#00838f",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round top for the cost axis: 1, 2 or 5 times a power of ten, at least `max`.
fn nice_top(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|top| *top >= max)
        .unwrap_or(10.0 * power)
}

/// Where the `i`th point's label goes: above its point, each next label a line higher (so the
/// labels of points that coincide do not overlap), or below it when that leaves the plot.
fn label_y(py: f64, i: usize) -> f64 {
    let above = py - 12.0 - 14.0 * i as f64;
    if above >= TOP + 12.0 {
        above
    } else {
        py + 22.0 + 14.0 * i as f64
    }
}

pub fn render(points: &[Point<'_>]) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let top = nice_top(points.iter().map(|p| p.cost_per_task).fold(0.0, f64::max));
    let x = |rate: f64| LEFT + rate.clamp(0.0, 1.0) * plot_w;
    let y = |cost: f64| TOP + plot_h - (cost / top).clamp(0.0, 1.0) * plot_h;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">Cost per task against resolve rate, per configuration</text>\n",
        WIDTH / 2.0
    );
    for i in 0..=4 {
        let rate = f64::from(i) / 4.0;
        let cost = top * f64::from(i) / 4.0;
        svg.push_str(&format!(
            "<line x1=\"{x0:.1}\" y1=\"{TOP}\" x2=\"{x0:.1}\" y2=\"{bottom:.1}\" stroke=\"#eeeeee\"/>\n\
             <text x=\"{x0:.1}\" y=\"{tx:.1}\" text-anchor=\"middle\">{pct}%</text>\n\
             <line x1=\"{LEFT}\" y1=\"{y0:.1}\" x2=\"{right:.1}\" y2=\"{y0:.1}\" stroke=\"#eeeeee\"/>\n\
             <text x=\"{lx:.1}\" y=\"{ty:.1}\" text-anchor=\"end\">${cost:.2}</text>\n",
            x0 = x(rate),
            bottom = TOP + plot_h,
            tx = TOP + plot_h + 18.0,
            pct = i * 25,
            y0 = y(cost),
            right = LEFT + plot_w,
            lx = LEFT - 8.0,
            ty = y(cost) + 4.0,
        ));
    }
    svg.push_str(&format!(
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#999999\"/>\n\
         <text x=\"{cx:.1}\" y=\"{by:.1}\" text-anchor=\"middle\">resolve rate (merged and the hidden tests pass)</text>\n\
         <text x=\"16\" y=\"{cy:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {cy:.1})\">mean cost per task (USD)</text>\n",
        cx = LEFT + plot_w / 2.0,
        by = HEIGHT - 10.0,
        cy = TOP + plot_h / 2.0,
    ));
    for (i, p) in points.iter().enumerate() {
        let (px, py) = (x(p.resolve_rate), y(p.cost_per_task));
        // Labels go left of points near the right edge.
        let anchor = if px > LEFT + plot_w * 0.7 {
            "end"
        } else {
            "start"
        };
        let dx = if anchor == "end" { -10.0 } else { 10.0 };
        svg.push_str(&format!(
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"7\" fill=\"{colour}\" fill-opacity=\"0.8\"/>\n\
             <text x=\"{lx:.1}\" y=\"{ly:.1}\" text-anchor=\"{anchor}\" fill=\"{colour}\">{label} ({pct:.0}%, ${cost:.2})</text>\n",
            colour = COLOURS[i % COLOURS.len()],
            lx = px + dx,
            ly = label_y(py, i),
            label = escape(p.label),
            pct = p.resolve_rate * 100.0,
            cost = p.cost_per_task,
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_axis_ends_on_a_round_figure() {
        for (max, top) in [
            (0.0, 1.0),
            (0.3, 0.5),
            (1.0, 1.0),
            (1.2, 2.0),
            (7.0, 10.0),
            (42.0, 50.0),
        ] {
            assert!(
                (nice_top(max) - top).abs() < 1e-9,
                "{max} -> {}",
                nice_top(max)
            );
        }
    }

    #[test]
    fn each_configuration_is_a_point_where_its_figures_say() {
        let svg = render(&[
            Point {
                label: "a<b>.yml",
                resolve_rate: 1.0,
                cost_per_task: 0.5,
            },
            Point {
                label: "wrong.yml",
                resolve_rate: 0.0,
                cost_per_task: 1.0,
            },
        ]);
        assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("a&lt;b&gt;.yml (100%, $0.50)"), "{svg}");
        // 100% is the right edge of the plot; $1.00 is the top of the axis.
        assert!(
            svg.contains(&format!("cx=\"{:.1}\"", WIDTH - RIGHT)),
            "{svg}"
        );
        assert!(
            svg.contains(&format!("cx=\"{LEFT:.1}\" cy=\"{TOP:.1}\"")),
            "{svg}"
        );
    }
}
