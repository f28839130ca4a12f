//! `git bisect`'s search over a range of commits: what is known of each, the candidates
//! left for the first bad commit, and the next commit to test (the untested one nearest
//! the middle of the candidates; skipped ones are stepped over, as `git bisect skip` does).

/// What was decided of a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    Good,
    Bad,
    /// It could not be built or booted.
    Skip,
    /// Its position could not be told from the middle within the cap.
    Ambiguous,
    /// It is clearly neither good nor bad: its position's interval holds neither 0 nor 1
    /// (two changes, one on each side of it).
    Middle,
}

/// The next commit to test, or where the search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Test(usize),
    /// The first bad commit.
    Culprit(usize),
    /// The first bad commit is one of these (skips left no way to tell).
    Range {
        first: usize,
        last: usize,
    },
}

/// The marks of commits `0..n`: 0 is good, `n - 1` bad.
#[derive(Debug, Clone)]
pub struct Search {
    marks: Vec<Option<Mark>>,
}

impl Search {
    pub fn new(n: usize) -> Search {
        let mut marks = vec![None; n];
        marks[0] = Some(Mark::Good);
        marks[n - 1] = Some(Mark::Bad);
        Search { marks }
    }

    /// The search for the first commit like `bad` after `good` (both between 0 and `n`),
    /// the commits between them marked as `marks` says (a skip stays a skip).
    pub fn between(n: usize, good: usize, bad: usize, marks: &[Option<Mark>]) -> Search {
        let mut s = Search { marks: vec![None; n] };
        for i in good + 1..bad {
            s.marks[i] = marks.get(i).copied().flatten().filter(|m| *m == Mark::Skip);
        }
        s.marks[good] = Some(Mark::Good);
        s.marks[bad] = Some(Mark::Bad);
        s
    }

    /// Every commit's mark.
    pub fn marks(&self) -> &[Option<Mark>] {
        &self.marks
    }

    pub fn mark(&mut self, commit: usize, mark: Mark) {
        self.marks[commit] = Some(mark);
    }

    /// The last good commit before the first bad one, and that first bad one.
    fn bounds(&self) -> (usize, usize) {
        let hi = self
            .marks
            .iter()
            .position(|m| *m == Some(Mark::Bad))
            .expect("the bad end is bad");
        let lo = (0..hi)
            .rev()
            .find(|&i| self.marks[i] == Some(Mark::Good))
            .expect("the good end is good");
        (lo, hi)
    }

    /// The first and last commit that may still be the first bad one.
    pub fn candidates(&self) -> (usize, usize) {
        let (lo, hi) = self.bounds();
        (lo + 1, hi)
    }

    pub fn next(&self) -> Next {
        let (lo, hi) = self.bounds();
        let middle = (lo + hi) as f64 / 2.0;
        let open = (lo + 1..hi).filter(|&i| self.marks[i].is_none());
        match open.min_by(|&a, &b| (a as f64 - middle).abs().total_cmp(&(b as f64 - middle).abs())) {
            Some(c) => Next::Test(c),
            None if hi == lo + 1 => Next::Culprit(hi),
            None => Next::Range {
                first: lo + 1,
                last: hi,
            },
        }
    }
}
