//! `kreg stats A B`: two sets of numbers run by hand (one per line, or `kreg parse` JSON),
//! compared the way a report compares a row with its baseline: the same test, the same
//! interval, the same verdicts. A blank line between numbers starts another boot, as a
//! scenario's `boots:` makes them; `--plan MIN..MAX` judges as `iterations: { min, max }`
//! does, look by look.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use kreg::stats::{interval_text, judge, quartiles, Comparison, Looks, MetricKind, RowInput, Settings, Side, Summary};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Direction {
    Lower,
    Higher,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct StatsArgs {
    /// The baseline: numbers one per line (`#` starts a comment; a blank line between
    /// numbers starts another boot: with two boots or more on both sides each boot is one
    /// observation, as in a run with `boots:`), or `kreg parse` JSON outputs (one after
    /// another, or an array of them) with --metric.
    pub a: PathBuf,
    /// The new side, in the same form.
    pub b: PathBuf,
    /// The metric to take from `kreg parse` JSON.
    #[arg(long)]
    pub metric: Option<String>,
    /// What kind of figure the numbers are: picks the test (mean, throughput: Welch;
    /// latency, count: exact permutation test on ranks). Default: from the JSON, else mean.
    #[arg(long, value_parser = ["mean", "throughput", "latency", "percentile", "count"])]
    pub kind: Option<String>,
    /// Which way is better. Default: from the JSON, else lower (times, latencies).
    #[arg(long, value_enum)]
    pub direction: Option<Direction>,
    #[arg(long, default_value_t = Settings::default().alpha)]
    pub alpha: f64,
    /// Smallest change worth calling one, in percent.
    #[arg(long, default_value_t = 2.0)]
    pub min_effect: f64,
    /// An adaptive plan, MIN..MAX runs per side, judged look by look exactly as a
    /// scenario's `iterations: { min: MIN, max: MAX }` (with boots, in boots of the size
    /// the numbers' boots have): the numbers are taken in their order.
    #[arg(long, value_parser = parse_plan)]
    pub plan: Option<(usize, usize)>,
    /// Both files were measured on the same boot(s), boot for boot (two settings of one
    /// kernel). Otherwise each file has boots of its own, as two kernels do: a change
    /// within one boot of each is an unconfirmed regression or improvement, as in a report.
    #[arg(long)]
    pub same_boot: bool,
    #[arg(long, value_enum, default_value_t = StatsFormat::Text)]
    pub format: StatsFormat,
}

fn parse_plan(s: &str) -> Result<(usize, usize), String> {
    let (lo, hi) = s
        .split_once("..")
        .ok_or_else(|| format!("{s:?}: give the plan as MIN..MAX (3..10)"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<usize>()
            .map_err(|_| format!("{s:?}: {x:?} is not a whole number"))
    };
    let (lo, hi) = (num(lo)?, num(hi)?);
    if lo < 2 || hi < lo {
        return Err(format!("{s:?}: the plan needs 2 ≤ MIN ≤ MAX"));
    }
    Ok((lo, hi))
}

/// Numbers read from one file, with what the JSON said about them.
struct Numbers {
    values: Vec<f64>,
    /// The boot of each number (0, 1, …: a blank line starts the next).
    boots: Vec<usize>,
    kind: Option<MetricKind>,
    higher_is_better: Option<bool>,
}

impl Numbers {
    fn boot_count(&self) -> usize {
        self.boots.last().map_or(0, |b| b + 1)
    }

    /// The side, its boots labelled `label` and their number.
    fn side(&self, label: &str) -> Side {
        Side {
            values: self.values.clone(),
            boots: self.boots.iter().map(|b| format!("{label}{b}").into()).collect(),
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn read_text(path: &Path, text: &str) -> Result<Numbers> {
    let mut values = Vec::new();
    let mut boots = Vec::new();
    let (mut boot, mut blank) = (0, false);
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            blank = true;
            continue;
        }
        let l = line.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        if blank && !values.is_empty() {
            boot += 1;
        }
        blank = false;
        let v: f64 = l
            .parse()
            .map_err(|_| anyhow::anyhow!("{}:{}: {l:?} is not a number", path.display(), i + 1))?;
        if !v.is_finite() {
            bail!("{}:{}: {l} is not a finite number", path.display(), i + 1);
        }
        values.push(v);
        boots.push(boot);
    }
    Ok(Numbers {
        values,
        boots,
        kind: None,
        higher_is_better: None,
    })
}

fn read_json(path: &Path, text: &str, metric: &str) -> Result<Numbers> {
    let mut out = Numbers {
        values: Vec::new(),
        boots: Vec::new(),
        kind: None,
        higher_is_better: None,
    };
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    loop {
        let start = stream.byte_offset();
        let doc = match stream.next() {
            None => break,
            Some(Ok(d)) => d,
            Some(Err(e)) => bail!("{}:{}: not JSON: {e}", path.display(), e.line()),
        };
        let line = line_of(text, start + text[start..].len() - text[start..].trim_start().len());
        // One `kreg parse` output is an array of metrics; an array of such outputs is many.
        let outputs: Vec<&serde_json::Value> = match doc.as_array() {
            Some(items) if items.iter().all(|x| x.is_array()) => items.iter().collect(),
            _ => vec![&doc],
        };
        for output in outputs {
            let Some(m) = output.as_array().and_then(|ms| ms.iter().find(|m| m["name"] == metric)) else {
                bail!(
                    "{}:{line}: no metric {metric:?} in this `kreg parse` output",
                    path.display()
                );
            };
            let v = m["value"].as_f64().filter(|v| v.is_finite()).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}:{line}: metric {metric:?} has no finite value: {}",
                    path.display(),
                    m["value"]
                )
            })?;
            out.values.push(v);
            out.boots.push(0);
            out.kind = out.kind.or(m["kind"].as_str().and_then(MetricKind::from_name));
            out.higher_is_better = out.higher_is_better.or(match m["direction"].as_str() {
                Some("higher") => Some(true),
                Some("lower") => Some(false),
                _ => None,
            });
        }
    }
    Ok(out)
}

fn read(path: &Path, metric: Option<&str>) -> Result<Numbers> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // JSON opens with an array or an object (0x7B).
    let json = matches!(text.trim_start().as_bytes().first(), Some(b'[' | 0x7B));
    let n = match (metric, json) {
        (Some(m), true) => read_json(path, &text, m)?,
        (Some(_), false) => bail!(
            "{}: --metric reads `kreg parse` JSON, and this file is not JSON",
            path.display()
        ),
        (None, true) => bail!(
            "{}: JSON from `kreg parse` needs --metric NAME to say which figure to compare",
            path.display()
        ),
        (None, false) => read_text(path, &text)?,
    };
    match n.values.len() {
        0 => bail!(
            "{}: no numbers (a comparison needs at least 2 per side)",
            path.display()
        ),
        1 => bail!(
            "{}: only one number (a comparison needs at least 2 per side)",
            path.display()
        ),
        _ => Ok(n),
    }
}

fn side_line(name: &str, v: &[f64], kind: MetricKind) -> String {
    let s = Summary::of(v).expect("two numbers or more");
    let (q1, q3) = quartiles(v);
    if kind.by_ranks() {
        format!(
            "{name}  n={:<4} median {:<12} iqr {:<12} min {:<12} max {}",
            s.n,
            s.median,
            q3 - q1,
            s.min,
            s.max
        )
    } else {
        format!(
            "{name}  n={:<4} mean {:<14} stddev {:<12} ({:.2}%)  min {:<12} max {}",
            s.n,
            format!("{:.6}", s.mean),
            format!("{:.6}", s.stddev),
            s.stddev_pct(),
            s.min,
            s.max
        )
    }
}

fn text(args: &StatsArgs, a: &[f64], b: &[f64], c: &Comparison, hib: bool) -> String {
    let better = if hib { "higher" } else { "lower" };
    let change = if c.change.is_finite() {
        format!("{:+.2}%", 100.0 * c.change)
    } else {
        "n/a".into()
    };
    let look = if c.looks > 1 {
        format!(" (look {} of {})", c.look + 1, c.looks)
    } else {
        String::new()
    };
    format!(
        "{}\n{}\nobservations: {} vs {} {}{look}\nverdict: {} ({} is better; kind {})\nchange: {change}, {:.0}% CI {}\ntest: {}, p={:.3e}, alpha {}\nreason: {}\n",
        side_line(&format!("A {}", args.a.display()), a, c.kind),
        side_line(&format!("B {}", args.b.display()), b, c.kind),
        c.n[0],
        c.n[1],
        c.unit.plural(),
        c.verdict.as_str(),
        better,
        c.kind,
        100.0 * c.ci_level,
        interval_text(c.ci),
        c.test.name(),
        c.p,
        c.alpha,
        c.reason
    )
}

/// The comparison a report makes of these sides: boots as the unit when the numbers have
/// boots on both sides (a scenario with `boots:`), the plan's looks when one is given.
fn compare(a: &Numbers, b: &Numbers, kind: MetricKind, hib: bool, args: &StatsArgs, s: &Settings) -> Comparison {
    let by_boot = a.boot_count() >= 2 || b.boot_count() >= 2;
    let (base, new) = match args.same_boot {
        true => (a.side(""), b.side("")),
        false => (a.side("a"), b.side("b")),
    };
    let plan = args.plan;
    let looks = match plan {
        None => Looks::fixed(),
        Some((lo, hi)) if by_boot && a.boot_count() >= 2 && b.boot_count() >= 2 => {
            // Boots of the size the numbers have, as a scenario's `boots:` spreads its runs.
            let per_boot = base
                .by_boot()
                .iter()
                .chain(&new.by_boot())
                .map(|g| g.len())
                .max()
                .unwrap_or(1);
            Looks::adaptive(lo.div_ceil(per_boot), hi.div_ceil(per_boot))
        }
        Some((lo, hi)) => Looks::adaptive(lo, hi),
    };
    let row = RowInput {
        base,
        new,
        kind,
        higher_is_better: hib,
        by_boot,
    };
    judge(&[row], &looks, s, true)
        .pop()
        .flatten()
        .expect("both sides have numbers")
}

pub fn stats(args: &StatsArgs) -> Result<ExitCode> {
    let settings = Settings::checked(args.alpha, args.min_effect).map_err(anyhow::Error::msg)?;
    let a = read(&args.a, args.metric.as_deref())?;
    let b = read(&args.b, args.metric.as_deref())?;
    let kind = match &args.kind {
        Some(k) => MetricKind::from_name(k).expect("clap checked the kind"),
        None => a.kind.or(b.kind).unwrap_or(MetricKind::Mean),
    };
    let hib = match args.direction {
        Some(d) => d == Direction::Higher,
        None => a.higher_is_better.or(b.higher_is_better).unwrap_or(false),
    };
    let c = compare(&a, &b, kind, hib, args, &settings);
    match args.format {
        StatsFormat::Text => print!("{}", text(args, &a.values, &b.values, &c, hib)),
        StatsFormat::Json => {
            let comparison = serde_json::to_value(&c)?;
            let doc = serde_json::json!({
                "verdict": c.verdict, "change": c.change, "ci": comparison["ci"], "ci_level": c.ci_level,
                "p": c.p, "test": c.test, "n": c.n, "reason": c.reason, "kind": c.kind,
                "direction": if hib { "higher" } else { "lower" }, "alpha": c.alpha,
                "min_effect": settings.min_effect, "centre": c.centre, "runs_needed": c.runs_needed,
                "a": Summary::of(&a.values), "b": Summary::of(&b.values),
                "unit": c.unit, "look": c.look, "looks": c.looks,
            });
            println!("{}", serde_json::to_string_pretty(&doc)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}
