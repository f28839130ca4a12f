//! A run's results read as PostgreSQL's binary COPY stream: for a report of 100,000 samples
//! the rows come in one stream of fixed-layout fields (a float as its 8 bytes, text as its
//! bytes, nothing escaped or printed), which is several times cheaper to take apart than
//! the same rows through the row protocol.

use futures_util::TryStreamExt;
use sqlx::postgres::PgPoolCopyExt;
use sqlx::PgPool;

use super::{Result, StoreError};
use kreg_core::results::Shared;

/// One stored result, as the report reads it.
#[derive(Debug)]
pub struct ResultRow {
    pub job: i64,
    pub metric: Shared,
    pub value: f64,
    pub unit: Shared,
    pub higher_is_better: bool,
    pub kind: crate::stats::MetricKind,
}

/// Every result of run `run_id`, in no particular order.
pub async fn results(db: &PgPool, run_id: i64) -> Result<Vec<ResultRow>> {
    // COPY takes no parameters; the id is a number formatted here.
    let statement = format!(
        "COPY (SELECT job_id, metric, value, unit, higher_is_better, kind FROM results WHERE run_id = {run_id}) \
         TO STDOUT (FORMAT binary)"
    );
    let mut stream = db.copy_out_raw(&statement).await?;
    let mut data = Vec::new();
    while let Some(chunk) = stream.try_next().await? {
        data.extend_from_slice(&chunk);
    }
    parse(&data).map_err(|e| sqlx::Error::Decode(format!("the results of run {run_id} as COPY: {e}").into()).into())
}

/// The rows of a binary COPY of (int8, text, float8, text, bool, text).
fn parse(data: &[u8]) -> std::result::Result<Vec<ResultRow>, StoreError> {
    let mut r = Reader { data, at: 0 };
    if r.take(11)? != b"PGCOPY\n\xff\r\n\0" {
        return Err(malformed("not a binary COPY stream"));
    }
    let _flags = r.u32()?;
    let extension = r.u32()? as usize;
    r.take(extension)?;
    let mut out = Vec::new();
    // A run has few distinct metric names and units: each kept once.
    let mut names: std::collections::HashMap<&[u8], Shared> = std::collections::HashMap::new();
    loop {
        let fields = r.u16()? as i16;
        if fields == -1 {
            return Ok(out);
        }
        if fields != 6 {
            return Err(malformed(format!("a row of {fields} fields, not 6")));
        }
        let job = i64::from_be_bytes(r.field(8)?.try_into().expect("8 bytes"));
        let metric = r.shared(&mut names)?;
        let value = f64::from_be_bytes(r.field(8)?.try_into().expect("8 bytes"));
        let unit = r.shared(&mut names)?;
        let higher_is_better = r.field(1)? != [0];
        let kind = r.text()?;
        let kind = crate::stats::MetricKind::from_name(kind)
            .ok_or_else(|| malformed(format!("unknown metric kind {kind:?}")))?;
        out.push(ResultRow {
            job,
            metric,
            value,
            unit,
            higher_is_better,
            kind,
        });
    }
}

fn malformed(what: impl Into<String>) -> StoreError {
    StoreError::Malformed(what.into())
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], StoreError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or_else(|| malformed("the stream ends early"))?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u16(&mut self) -> std::result::Result<u16, StoreError> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }

    fn u32(&mut self) -> std::result::Result<u32, StoreError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    /// A field that must be there, of `size` bytes.
    fn field(&mut self, size: usize) -> std::result::Result<&'a [u8], StoreError> {
        let len = self.u32()? as i32;
        if len != size as i32 {
            return Err(malformed(format!("a field of {len} bytes where {size} were expected")));
        }
        self.take(size)
    }

    fn bytes(&mut self) -> std::result::Result<&'a [u8], StoreError> {
        let len = self.u32()? as i32;
        if len < 0 {
            return Err(malformed("a text field is null"));
        }
        self.take(len as usize)
    }

    fn text(&mut self) -> std::result::Result<&'a str, StoreError> {
        std::str::from_utf8(self.bytes()?).map_err(|_| malformed("a text field is not UTF-8"))
    }

    /// A text field, the same text shared with the rows before that had it.
    fn shared(
        &mut self,
        seen: &mut std::collections::HashMap<&'a [u8], Shared>,
    ) -> std::result::Result<Shared, StoreError> {
        let bytes = self.bytes()?;
        if let Some(s) = seen.get(bytes) {
            return Ok(s.clone());
        }
        let s: Shared = std::str::from_utf8(bytes)
            .map_err(|_| malformed("a text field is not UTF-8"))?
            .into();
        seen.insert(bytes, s.clone());
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(out: &mut Vec<u8>, job: i64, metric: &str, value: f64, hib: bool, kind: &str) {
        out.extend_from_slice(&6u16.to_be_bytes());
        let mut field = |b: &[u8]| {
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b);
        };
        field(&job.to_be_bytes());
        field(metric.as_bytes());
        field(&value.to_be_bytes());
        field(b"us");
        field(&[hib as u8]);
        field(kind.as_bytes());
    }

    #[test]
    fn rows_come_back_whole_and_bad_streams_say_why() {
        let mut data = b"PGCOPY\n\xff\r\n\0".to_vec();
        data.extend_from_slice(&0u32.to_be_bytes());
        data.extend_from_slice(&0u32.to_be_bytes());
        row(&mut data, 7, "tab\there\\and\nnewline", 0.1 + 0.2, true, "latency");
        row(&mut data, -1, "m", f64::MIN_POSITIVE, false, "mean");
        data.extend_from_slice(&(-1i16).to_be_bytes());
        let rows = parse(&data).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].job, &*rows[0].metric), (7, "tab\there\\and\nnewline"));
        assert_eq!(rows[0].value.to_bits(), (0.1f64 + 0.2).to_bits());
        assert!(rows[0].higher_is_better && !rows[1].higher_is_better);
        assert_eq!(rows[1].kind, crate::stats::MetricKind::Mean);
        assert_eq!(rows[1].value, f64::MIN_POSITIVE);
        // Cut anywhere: an error, never a panic or a row made up.
        for cut in 0..data.len() - 2 {
            assert!(parse(&data[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = data.clone();
        bad[0] = b'X';
        assert!(parse(&bad).unwrap_err().to_string().contains("not a binary COPY"));
    }
}
