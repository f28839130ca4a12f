//! The `bisect:` section: what `kreg bisect` bisects when the command line does not say.

use super::*;
use crate::bisect::{metric_of, Rules, Spec};
use crate::scenario::keys;
use crate::yaml::Kind;

impl Cx<'_> {
    pub(super) fn bisect(&mut self, node: &Node) -> Option<Spec> {
        let f = self.map(node, "bisect", &keys::BISECT)?;
        let text = |cx: &mut Self, key: &str| match f.get(key) {
            Some(n) => cx.string(n, &format!("bisect: {key}")).map(Some),
            None => Some(None),
        };
        let (kernel, good, bad, variant) = (
            text(self, "kernel"),
            text(self, "good"),
            text(self, "bad"),
            text(self, "variant"),
        );
        let metric = match f.get("metric") {
            Some(n) => self
                .string(n, "bisect: metric")
                .and_then(|t| metric_of(&t).map_err(|e| self.error(n, format!("bisect: {e}"))).ok())
                .map(Some),
            None => Some(None),
        };
        let d = Rules::default();
        let alpha = self.fraction(f.get("alpha"), "bisect: alpha", d.alpha);
        let min_effect = self.fraction(f.get("min_effect"), "bisect: min_effect", d.min_effect);
        let endpoint_boots = self.range(
            f.get("endpoint_boots"),
            "bisect: endpoint_boots",
            (2, 100),
            d.endpoint_boots,
        );
        let step_rounds = self.range(f.get("step_rounds"), "bisect: step_rounds", (1, 100), d.step_rounds);
        let boot_tries = self.uint_or(&f, "boot_tries", "bisect: boot_tries", (1, 20), d.boot_tries as u32);
        Some(Spec {
            kernel: kernel?,
            good: good?,
            bad: bad?,
            metric: metric?,
            variant: variant?,
            rules: Rules {
                alpha: alpha?,
                min_effect: min_effect?,
                endpoint_boots: endpoint_boots?,
                step_rounds: step_rounds?,
                boot_tries: boot_tries? as usize,
                ..d
            },
        })
    }

    /// A number above 0 and below 1, or `default` when absent.
    fn fraction(&mut self, node: Option<&Node>, what: &str, default: f64) -> Option<f64> {
        let Some(n) = node else { return Some(default) };
        match &n.kind {
            Kind::Scalar(s, false) => match s.parse::<f64>() {
                Ok(v) if v > 0.0 && v < 1.0 => Some(v),
                _ => {
                    self.error(n, format!("{what}: {s:?} is not a number between 0 and 1"));
                    None
                }
            },
            _ => {
                self.expected(n, what, "a number between 0 and 1");
                None
            }
        }
    }

    /// `{ min: A, max: B }` with `lo <= A <= B <= hi`, or `default` when absent.
    fn range(
        &mut self,
        node: Option<&Node>,
        what: &str,
        (lo, hi): (u64, u64),
        default: (usize, usize),
    ) -> Option<(usize, usize)> {
        let Some(n) = node else { return Some(default) };
        let f = self.map(n, what, &keys::RANGE)?;
        let min = self.uint_or(&f, "min", &format!("{what}: min"), (lo, hi), default.0 as u32);
        let max = self.uint_or(&f, "max", &format!("{what}: max"), (lo, hi), default.1 as u32);
        let (min, max) = (min? as usize, max? as usize);
        if max < min {
            self.error(n, format!("{what}: max {max} is below min {min}"));
            return None;
        }
        Some((min, max))
    }
}
