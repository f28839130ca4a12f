//! The charts, drawn as SVG on the server: a row's samples as a strip, a change with its
//! interval against the ±minimum-effect band, and one metric across runs.

use std::fmt::Write;

use super::html::esc;

/// A linear map of [lo, hi] onto [x0, x1].
#[derive(Clone, Copy)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub x0: f64,
    pub x1: f64,
}

impl Scale {
    /// The scale over `values`, padded so that no point sits on an edge.
    pub fn over(values: impl Iterator<Item = f64>, x0: f64, x1: f64) -> Scale {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        let pad = if hi > lo {
            (hi - lo) * 0.05
        } else {
            lo.abs().max(1.0) * 0.05
        };
        Scale {
            lo: lo - pad,
            hi: hi + pad,
            x0,
            x1,
        }
    }

    pub fn at(&self, v: f64) -> f64 {
        let t = ((v - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0);
        self.x0 + t * (self.x1 - self.x0)
    }
}

pub const STRIP_W: f64 = 180.0;
const STRIP_H: f64 = 22.0;

/// A row's samples as dots on the table's common scale (one path: dots are zero-length
/// round-capped segments, a few bytes each), the centre as a tick.
pub fn strip(values: &[f64], centre: f64, scale: &Scale, label: &str) -> String {
    let mut path = String::new();
    for (i, v) in values.iter().enumerate() {
        // A fixed jitter by position, so that equal values stay visible and the picture is
        // the same on every load.
        let y = 5.0 + ((i * 7) % 13) as f64;
        let _ = write!(path, "M{:.1} {:.0}h0", scale.at(*v), y);
    }
    let c = scale.at(centre);
    format!(
        "<svg class=\"strip\" viewBox=\"0 0 {STRIP_W} {STRIP_H}\" width=\"{STRIP_W}\" height=\"{STRIP_H}\" role=\"img\">\
<title>{}</title><line x1=\"{c:.1}\" x2=\"{c:.1}\" y1=\"1\" y2=\"21\" class=\"centre\"/>\
<path d=\"{path}\" class=\"dots\"/></svg>",
        esc(label)
    )
}

pub const BAR_W: f64 = 160.0;

/// An interval of a change (unbounded when `None`) and its level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub bounds: Option<(f64, f64)>,
    pub level: f64,
}

/// A row's change bar: its change, the interval shown (the report's level), and, where a
/// change is at stake, the interval at the change test's own level, drawn thin and dashed
/// under it.
pub fn comparison_bar(c: &crate::stats::Comparison, min_effect: f64, reach: f64, class: &str) -> String {
    let test = c.ci_test.map(|t| Interval {
        bounds: t,
        level: c.ci_test_level.unwrap_or(f64::NAN),
    });
    let shown = Interval {
        bounds: c.ci,
        level: c.ci_level,
    };
    change_bar(c.change, shown, test, min_effect, reach, class)
}

/// A change (fraction) with its interval (and that interval's level), on a symmetric scale
/// of ±`reach`, over the band of changes too small to matter (±`min_effect`); `test`, the
/// interval at the change test's level, thin and dashed under it. An unbounded side runs to
/// the edge.
pub fn change_bar(
    change: f64,
    shown: Interval,
    test: Option<Interval>,
    min_effect: f64,
    reach: f64,
    class: &str,
) -> String {
    let s = Scale {
        lo: -reach,
        hi: reach,
        x0: 4.0,
        x1: BAR_W - 4.0,
    };
    let (bl, bh) = (s.at(-min_effect), s.at(min_effect));
    let ends = |ci: Option<(f64, f64)>| match ci {
        Some((l, h)) => (
            if l.is_finite() { s.at(l) } else { s.x0 },
            if h.is_finite() { s.at(h) } else { s.x1 },
        ),
        None => (s.x0, s.x1),
    };
    let (ci, level) = (shown.bounds, shown.level);
    let (l, h) = ends(ci);
    let named = |ci: Option<(f64, f64)>, level: f64| match ci {
        Some((l, h)) => format!("{}% interval {} … {}", level_pct(level), pct(l), pct(h)),
        None => format!("{}% interval unbounded", level_pct(level)),
    };
    let mut title = format!("change {:+.2}% ({}", 100.0 * change, named(ci, level));
    let mut under = String::new();
    if let Some(Interval { bounds: t, level: tl }) = test {
        let (x, y) = ends(t);
        title.push_str(&format!("; {}, the change test's level", named(t, tl)));
        under = format!("<line class=\"ci-test\" x1=\"{x:.1}\" x2=\"{y:.1}\" y1=\"15\" y2=\"15\"/>");
    }
    title.push_str(&format!("); band ±{:.1}%", 100.0 * min_effect));
    format!(
        "<svg class=\"bar {class}\" viewBox=\"0 0 {BAR_W} 18\" width=\"{BAR_W}\" height=\"18\" role=\"img\">\
<title>{}</title><rect class=\"band\" x=\"{bl:.1}\" y=\"1\" width=\"{:.1}\" height=\"16\"/>\
<line class=\"zero\" x1=\"{z:.1}\" x2=\"{z:.1}\" y1=\"0\" y2=\"18\"/>{under}\
<line class=\"ci\" x1=\"{l:.1}\" x2=\"{h:.1}\" y1=\"9\" y2=\"9\"/><circle class=\"pt\" cx=\"{:.1}\" cy=\"9\" r=\"3\"/></svg>",
        esc(&title),
        bh - bl,
        s.at(change),
        z = s.at(0.0),
    )
}

/// A level (0.9) as the drawings name it: "90", "99.5"; "?" when unknown.
fn level_pct(level: f64) -> String {
    if level.is_finite() {
        crate::stats::verdict::level_text(level)
    } else {
        "?".into()
    }
}

/// The % axis under a table's change bars (drawn on the same ±`reach` scale): ticks at 0 and
/// at round values each side, labelled, and the ±`min_effect` band's edges.
pub fn change_axis(min_effect: f64, reach: f64) -> String {
    let s = Scale {
        lo: -reach,
        hi: reach,
        x0: 4.0,
        x1: BAR_W - 4.0,
    };
    // The largest of 1, 2, 5 × 10^k (in %) that fits within 90% of the reach.
    let most = 100.0 * reach * 0.9;
    let step = [1.0, 2.0, 5.0]
        .iter()
        .flat_map(|m| (-3..6).map(move |k| m * 10f64.powi(k)))
        .filter(|v| *v <= most)
        .fold(0.0, f64::max);
    let mut ticks = String::new();
    let mut labels = String::new();
    let mut tick = |v: f64, label: bool| {
        let x = s.at(v / 100.0);
        let _ = write!(ticks, "M{x:.1} 0v5");
        if label {
            let text = if v == 0.0 { "0".to_string() } else { format!("{v:+}%") };
            let anchor = if x < 20.0 {
                "start"
            } else if x > BAR_W - 20.0 {
                "end"
            } else {
                "middle"
            };
            let _ = write!(
                labels,
                "<text x=\"{x:.1}\" y=\"15\" text-anchor=\"{anchor}\">{text}</text>"
            );
        }
    };
    tick(0.0, true);
    if step > 0.0 {
        for v in [-step, step] {
            tick(v, true);
            tick(v / 2.0, false);
        }
    }
    let (bl, bh) = (s.at(-min_effect), s.at(min_effect));
    format!(
        "<svg class=\"axis\" viewBox=\"0 0 {BAR_W} 18\" width=\"{BAR_W}\" height=\"18\" role=\"img\">\
<title>change in % of the baseline; band ±{:.1}% (the minimum effect)</title>\
<rect class=\"band\" x=\"{bl:.1}\" y=\"0\" width=\"{:.1}\" height=\"4\"/><path d=\"M4 0H{:.1}{ticks}\" class=\"ticks\"/>{labels}</svg>",
        100.0 * min_effect,
        bh - bl,
        BAR_W - 4.0
    )
}

fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:+.2}%", 100.0 * v)
    } else {
        "unbounded".into()
    }
}

/// One series of the history chart: per run, (run id, centre, low, high).
pub struct Series {
    pub name: String,
    pub points: Vec<(i64, f64, f64, f64)>,
}

const PALETTE: [&str; 6] = ["#1f6fb2", "#c2410c", "#15803d", "#7e22ce", "#a16207", "#be185d"];

/// A change point on the history chart: a dashed line between the last run before it and
/// the first run after, labelled.
pub struct Mark {
    pub before: i64,
    pub after: i64,
    pub label: String,
    /// `regression`, `improvement` or `change`: the line's colour.
    pub class: &'static str,
}

/// Centres joined by lines with their spread as whiskers, runs along x in `runs`' order,
/// change points as dashed lines.
pub fn history(series: &[Series], runs: &[i64], unit: &str, marks: &[Mark]) -> String {
    let (w, h, left, bottom) = (760.0, 280.0, 64.0, 28.0);
    let y = Scale::over(
        series.iter().flat_map(|s| s.points.iter().flat_map(|p| [p.2, p.3])),
        0.0,
        1.0,
    );
    let ys = |v: f64| h - bottom - y.at(v) * (h - bottom - 10.0);
    let step = (w - left - 20.0) / (runs.len().max(2) - 1) as f64;
    let xs = |run: i64| match runs.len() {
        1 => (left + w - 20.0) / 2.0,
        _ => left + step * runs.iter().position(|r| *r == run).unwrap_or(0) as f64,
    };
    let mut out = format!(
        "<svg class=\"history\" viewBox=\"0 0 {w} {h}\" role=\"img\"><title>{} by run</title>",
        esc(unit)
    );
    for v in nice_ticks(y.lo, y.hi, 5) {
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{left}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/><text x=\"{}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{}</text>",
            w - 10.0,
            left - 6.0,
            ys(v) + 4.0,
            esc(&crate::report::fmt_value(v)),
            yy = ys(v)
        );
    }
    // The unit, once, above the axis.
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"8\" class=\"tick unit\" text-anchor=\"end\">{}</text>",
        left - 6.0,
        esc(unit)
    );
    // Run labels at most every ~40 px: every k-th run, the last always.
    let every = (runs.len() as f64 * 40.0 / (w - left - 20.0)).ceil().max(1.0) as usize;
    let last = runs.len().saturating_sub(1);
    for (i, r) in runs.iter().enumerate() {
        // The last run is labelled too, in place of the regular label just before it
        // when that one would touch it.
        let regular = i % every == 0 && !(i != last && last - i < every.div_ceil(2) && every > 1);
        if !(regular || i == last) {
            continue;
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" class=\"tick\" text-anchor=\"middle\">{r}</text>",
            xs(*r),
            h - 8.0
        );
    }
    for (i, m) in marks.iter().enumerate() {
        let x = (xs(m.before) + xs(m.after)) / 2.0;
        let _ = write!(
            out,
            "<line class=\"mark m-{}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"6\" y2=\"{:.1}\"/>\
<text class=\"mark-label\" x=\"{:.1}\" y=\"{}\">{}</text>",
            m.class,
            h - bottom,
            x + 3.0,
            16.0 + 12.0 * (i % 3) as f64,
            esc(&m.label)
        );
    }
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let pts: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", xs(p.0), ys(p.1)))
            .collect();
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            pts.join(" ")
        );
        for p in &s.points {
            let _ = write!(
                out,
                "<line stroke=\"{colour}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><circle fill=\"{colour}\" cx=\"{x:.1}\" cy=\"{:.1}\" r=\"3.5\"><title>{}: run {} {}</title></circle>",
                ys(p.2),
                ys(p.3),
                ys(p.1),
                esc(&s.name),
                p.0,
                esc(&crate::report::fmt_value(p.1)),
                x = xs(p.0)
            );
        }
    }
    out.push_str("</svg><p class=\"legend\">");
    for (i, s) in series.iter().enumerate() {
        let _ = write!(
            out,
            "<span><i style=\"background:{}\"></i>{}</span>",
            PALETTE[i % PALETTE.len()],
            esc(&s.name)
        );
    }
    out.push_str("</p>");
    out
}

/// Round values (1, 2, 2.5 or 5 × 10^k apart) inside `lo..hi`, at most about `most` of them:
/// an axis a person reads at a glance, whatever the padding of the range.
pub fn nice_ticks(lo: f64, hi: f64, most: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / most.max(2) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).ceil() * step;
    (0..)
        .map(|i| first + i as f64 * step)
        .take_while(|v| *v <= hi + step * 1e-9)
        // Printed without the float's dust (0.30000000000000004).
        .map(|v| (v / step).round() * step)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks of a padded range fall on round values, each a whole number of steps, and a
    /// long history labels a run every so often, never all 120 of them.
    #[test]
    fn axes_tick_round_values_and_thin_their_labels() {
        let t = nice_ticks(97.33, 112.61, 5);
        assert_eq!(t, vec![100.0, 105.0, 110.0]);
        let t = nice_ticks(0.0213, 0.0377, 5);
        assert!(
            t.len() >= 3 && t.iter().all(|v| ((v * 1e4).round() - v * 1e4).abs() < 1e-6),
            "{t:?}"
        );
        let runs: Vec<i64> = (1..=120).collect();
        let s = Series {
            name: "k/v".into(),
            points: runs
                .iter()
                .map(|r| (*r, 100.0 + (*r % 7) as f64, 99.0, 108.0))
                .collect(),
        };
        let svg = history(&[s], &runs, "ms", &[]);
        let labels = svg.matches("text-anchor=\"middle\"").count();
        assert!((8..=25).contains(&labels), "{labels} run labels");
        assert!(
            svg.contains(">120</text>") && svg.contains(">1</text>"),
            "first and last run labelled"
        );
        assert!(svg.contains("class=\"tick unit\""), "the unit is on the axis");
    }

    #[test]
    fn scales_pad_and_clamp() {
        let s = Scale::over([10.0, 20.0].into_iter(), 0.0, 100.0);
        assert!(s.at(10.0) > 0.0 && s.at(20.0) < 100.0);
        assert_eq!(s.at(1e9), 100.0);
        let flat = Scale::over([5.0, 5.0].into_iter(), 0.0, 100.0);
        assert!((flat.at(5.0) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn a_strip_has_one_dot_per_sample_and_a_bar_its_band() {
        let s = Scale::over([1.0, 2.0, 3.0].into_iter(), 0.0, STRIP_W);
        let svg = strip(&[1.0, 2.0, 3.0], 2.0, &s, "n=3");
        assert_eq!(svg.matches("h0").count(), 3);
        let bar = change_bar(
            0.05,
            Interval {
                bounds: Some((0.01, f64::INFINITY)),
                level: 0.9,
            },
            None,
            0.02,
            0.1,
            "v-regression",
        );
        assert!(bar.contains("class=\"band\"") && bar.contains("unbounded"), "{bar}");
        assert!(bar.contains("90% interval") && !bar.contains("ci-test"), "{bar}");
        // Where a change is at stake, the test's interval is drawn too, named by its level.
        let both = change_bar(
            0.08,
            Interval {
                bounds: Some((0.03, 0.13)),
                level: 0.9,
            },
            Some(Interval {
                bounds: Some((-0.01, 0.17)),
                level: 0.995,
            }),
            0.02,
            0.2,
            "v",
        );
        assert!(both.contains("class=\"ci-test\""), "{both}");
        assert!(
            both.contains("99.5% interval -1.00% … +17.00%, the change test&#39;s level")
                || both.contains("99.5% interval -1.00% … +17.00%, the change test's level"),
            "{both}"
        );
    }

    #[test]
    fn an_axis_labels_zero_and_round_values_where_the_bars_put_them() {
        let labels = |svg: &str| -> Vec<(f64, String)> {
            svg.split("<text x=\"")
                .skip(1)
                .map(|t| {
                    let (x, rest) = t.split_once('"').unwrap();
                    let text = rest.split_once('>').unwrap().1.split_once('<').unwrap().0;
                    (x.parse().unwrap(), text.to_string())
                })
                .collect()
        };
        let axis = change_axis(0.02, 0.55);
        let got = labels(&axis);
        let texts: Vec<&str> = got.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, ["0", "-20%", "+20%"], "{axis}");
        // Each label where a bar on the same reach puts that change.
        for (x, text) in &got {
            let v: f64 = text.trim_end_matches('%').parse().unwrap();
            let bar = change_bar(
                v / 100.0,
                Interval {
                    bounds: None,
                    level: 0.9,
                },
                None,
                0.02,
                0.55,
                "v",
            );
            assert!(bar.contains(&format!("cx=\"{x:.1}\"")), "{text} at {x}: {bar}");
        }
        let small = labels(&change_axis(0.02, 0.033));
        assert_eq!(
            small.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
            ["0", "-2%", "+2%"]
        );
        let tiny = labels(&change_axis(0.001, 0.004));
        assert_eq!(
            tiny.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
            ["0", "-0.2%", "+0.2%"]
        );
    }
}
