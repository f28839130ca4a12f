//! A kind of mapping a file may hold: where it sits and the keys it takes. The loaders read
//! every mapping through one (`Cx::map`), and `scenario::keys::SECTIONS` lists them all, so
//! that `docs/keys.md` can be held to the loaders' own lists.

/// One kind of mapping: where it is, and the keys it may hold.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// Where it is (a `[]` an element of a list, `NAME` a name the user gives), as
    /// `docs/keys.md` heads its part.
    pub path: &'static str,
    /// Which file it is in: `scenario` or `pool`.
    pub file: &'static str,
    pub keys: &'static [&'static str],
    /// Keys a kind adds to `keys` (a workload's, by its `kind:`).
    pub kinds: &'static [(&'static str, &'static [&'static str])],
}

impl Section {
    pub const fn new(path: &'static str, file: &'static str, keys: &'static [&'static str]) -> Section {
        Section {
            path,
            file,
            keys,
            kinds: &[],
        }
    }

    /// Every key the mapping may hold, whatever its kind: its own, then each kind's.
    pub fn all(&self) -> Vec<&'static str> {
        let mut all = self.keys.to_vec();
        for key in self.kinds.iter().flat_map(|(_, k)| k.iter()) {
            if !all.contains(key) {
                all.push(key);
            }
        }
        all
    }

    pub fn takes(&self, key: &str) -> bool {
        self.all().contains(&key)
    }
}
