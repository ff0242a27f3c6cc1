//! The run index's key table (`esdedup.ingest.runindex.RunIndex`): the 64-bit hash of a run key
//! (`key_hashes`) -> the positions of the run's documents holding it, at most `per_key` of them, the first
//! ones added. `esdedup/ingest/runindex.py` keeps the same table in dicts when the extension is not in use
//! (`_KeyTable`); `tests/unit/test_run_keys.py` checks the two agree. Beside it, the lookup of the frozen
//! keys (`frozen_lookup`) and a batch's own table of its keys (`batch_peers`).
//!
//! A key's hash is `key_hashes`'s: `h = mix64(len ^ 0x9E3779B97F4A7C15)` over the key's UTF-8 length in
//! bytes (less trailing NUL bytes), then `h = mix64(h ^ w)` for each little-endian 64-bit word of those
//! bytes, the last one zero-padded.

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::hashslots::{prefetch, Slots};
use crate::kernels::mix64;
use crate::pairs::{values_of, values_of_mut};

const LENGTH_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// `esdedup.ingest.runindex.key_hashes` of one key's UTF-8 bytes (whose trailing NUL bytes it does not see,
/// as numpy's bytes strings do not).
pub fn key_hash(bytes: &[u8]) -> u64 {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let bytes = &bytes[..end];
    let mut h = mix64(bytes.len() as u64 ^ LENGTH_SEED);
    for word in bytes.chunks(8) {
        let mut padded = [0u8; 8];
        padded[..word.len()].copy_from_slice(word);
        h = mix64(h ^ u64::from_le_bytes(padded));
    }
    h
}

/// `key_hashes` of `keys` (str, UTF-8; a lone surrogate is refused by the conversion and the caller hashes
/// such keys in Python): the hashes as little-endian uint64 bytes.
#[pyfunction]
pub fn key_hashes<'py>(py: Python<'py>, keys: Vec<String>) -> Bound<'py, PyBytes> {
    let out: Vec<u8> = keys
        .iter()
        .flat_map(|k| key_hash(k.as_bytes()).to_le_bytes())
        .collect();
    PyBytes::new(py, &out)
}

/// Key hash -> positions of the documents holding it: the first in `first`, the next `per_key - 1` in
/// `more`.
#[pyclass(module = "esdedup_native")]
pub struct RunKeys {
    first: Slots,
    more: Further,
    per_key: usize,
}

/// The positions holding a key after its first: each key's in one block of `arena`, `[count, room,
/// positions...]`, found by `at` (key -> the block's offset). A full block is copied to one twice its room at
/// the arena's end, and the old one left unused. No allocation a key: a map of one `Vec` a key allocated one
/// for each key a second document held (most keys of a run of copies), and rehashed them all as it grew.
#[derive(Default)]
struct Further {
    at: Slots,
    arena: Vec<u32>,
    /// Positions held, over all keys.
    held: usize,
}

/// The room of a key's first block in `Further`.
const FIRST_ROOM: usize = 3;

impl Further {
    /// The positions after the first that hold `h`, in the order they were added.
    fn of(&self, h: u64) -> &[u32] {
        match self.at.get(h) {
            None => &[],
            Some(at) => {
                let at = at as usize;
                &self.arena[at + 2..at + 2 + self.arena[at] as usize]
            }
        }
    }

    /// Hold `position` under `h` unless `most` positions hold it here already; whether it was held.
    fn push(&mut self, h: u64, position: u32, most: usize) -> bool {
        if most == 0 {
            return false;
        }
        let end =
            u32::try_from(self.arena.len()).expect("the run index's key table holds fewer than 2^32 entries");
        self.at.reserve(1);
        let at = self.at.get_or_insert(h, end) as usize;
        if at == end as usize {
            let room = FIRST_ROOM.min(most);
            self.arena.extend([1, room as u32, position]);
            self.arena.resize(self.arena.len() + room - 1, 0);
        } else {
            let (count, room) = (self.arena[at] as usize, self.arena[at + 1] as usize);
            if count >= most {
                return false;
            }
            if count < room {
                self.arena[at + 2 + count] = position;
                self.arena[at] += 1;
            } else {
                let grown = (2 * room).min(most);
                self.arena.extend([count as u32 + 1, grown as u32]);
                self.arena.extend_from_within(at + 2..at + 2 + count);
                self.arena.push(position);
                self.arena.resize(self.arena.len() + grown - count - 1, 0);
                self.at.replace(h, end);
            }
        }
        self.held += 1;
        true
    }

    /// Every (key, position) held here, in no particular order.
    fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.at
            .iter()
            .flat_map(move |(h, _)| self.of(h).iter().map(move |&p| (h, p)))
    }
}

/// Little-endian uint64 bytes as hashes.
fn words(hashes: &[u8]) -> Vec<u64> {
    hashes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect()
}

fn not_words(hashes: &[u8], what: &str) -> PyResult<()> {
    if !hashes.len().is_multiple_of(8) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{what}: 8 bytes a hash"
        )));
    }
    Ok(())
}

#[pymethods]
impl RunKeys {
    #[new]
    fn new(per_key: usize) -> Self {
        RunKeys {
            first: Slots::default(),
            more: Further::default(),
            per_key,
        }
    }

    /// Hold `position` under each of `hashes` that has fewer than `per_key` positions; returns the indices
    /// (into `hashes`) of those it is not held under.
    fn add(&mut self, position: u32, hashes: Vec<u64>) -> Vec<usize> {
        self.first.reserve(hashes.len());
        let mut crowded = Vec::new();
        for (x, &h) in hashes.iter().enumerate() {
            if !self.hold(position, h) {
                crowded.push(x);
            }
        }
        crowded
    }

    /// How many positions each hash (little-endian uint64 bytes) is held under, as little-endian uint32 bytes
    /// (`per_key` at most): what a batch's records would find before they are added.
    fn held_counts<'py>(&self, py: Python<'py>, hashes: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        not_words(hashes, "held_counts")?;
        let hashes = words(hashes);
        let mut out = Vec::with_capacity(hashes.len() * 4);
        for (x, &h) in hashes.iter().enumerate() {
            self.first.prefetch_ahead(&hashes, x, false);
            out.extend_from_slice(&(self.held(h) as u32).to_le_bytes());
        }
        Ok(PyBytes::new(py, &out))
    }

    /// Whether documents holding `hashes` (little-endian uint64 bytes; a hash as often as documents hold
    /// it) would each be held under every one of them: each hash's positions held now, and its count in
    /// `hashes`, come to `per_key` at most.
    fn fits(&self, hashes: &[u8]) -> PyResult<bool> {
        not_words(hashes, "fits")?;
        if hashes.len() / 8 >= u32::MAX as usize {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "fits: fewer than 2^32 - 1 hashes at a time",
            ));
        }
        // Each distinct hash's count, in the order first seen: the batch's own table of them, sized once (a
        // growing map rehashes a batch's keys several times, which cost three times the lookups).
        let mut first_at = Slots::default();
        first_at.reserve(hashes.len() / 8);
        let (mut distinct, mut counts): (Vec<u64>, Vec<usize>) = (Vec::new(), Vec::new());
        for h in words(hashes) {
            let at = first_at.get_or_insert(h, distinct.len() as u32) as usize;
            if at == distinct.len() {
                distinct.push(h);
                counts.push(1);
            } else {
                counts[at] += 1;
            }
        }
        for (x, (&h, &n)) in distinct.iter().zip(&counts).enumerate() {
            self.first.prefetch_ahead(&distinct, x, false);
            if self.held(h) + n > self.per_key {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `add` of several documents in turn: `positions[r]` under the next `counts[r]` of `hashes` (little-endian
    /// uint64 bytes). Returns, for each document, the indices (into its own hashes) of those it is not held
    /// under, as `add` would have, in one list of (document, index) pairs.
    fn add_many(
        &mut self,
        positions: Vec<u32>,
        hashes: &[u8],
        counts: Vec<usize>,
    ) -> PyResult<Vec<(usize, usize)>> {
        if counts.len() != positions.len() || counts.iter().sum::<usize>() * 8 != hashes.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "add_many: one count a position, and 8 bytes a hash",
            ));
        }
        let hashes = words(hashes);
        self.first.reserve(hashes.len());
        let mut crowded = Vec::new();
        let mut at = 0;
        for (r, (&position, &n)) in positions.iter().zip(&counts).enumerate() {
            for x in 0..n {
                self.first.prefetch_ahead(&hashes, at + x, true);
                if !self.hold(position, hashes[at + x]) {
                    crowded.push((r, x));
                }
            }
            at += n;
        }
        Ok(crowded)
    }

    /// For each record, the positions (ascending, each once) holding any of its hashes: record r's hashes
    /// are the next `counts[r]` of `hashes` (little-endian uint64 bytes).
    fn lookup_many(&self, hashes: &[u8], counts: Vec<usize>) -> PyResult<Vec<Vec<u32>>> {
        if counts.iter().sum::<usize>() * 8 != hashes.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "lookup_many: 8 bytes a hash, as many as the counts add up to",
            ));
        }
        let hashes = words(hashes);
        let mut out = Vec::with_capacity(counts.len());
        let mut at = 0;
        for n in counts {
            let mut found = Vec::new();
            for x in at..at + n {
                self.first.prefetch_ahead(&hashes, x, false);
                let h = hashes[x];
                if let Some(p) = self.first.get(h) {
                    found.push(p);
                    found.extend_from_slice(self.more.of(h));
                }
            }
            found.sort_unstable();
            found.dedup();
            out.push(found);
            at += n;
        }
        Ok(out)
    }

    /// Every (hash, position) held, as little-endian uint64 and uint32 bytes, sorted by hash, then position
    /// (the order `esdedup.ingest.runindex.FrozenKeys` keeps, which then need not sort them).
    fn entries<'py>(&self, py: Python<'py>) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
        let mut held: Vec<(u64, u32)> = self.first.iter().chain(self.more.iter()).collect();
        held.sort_unstable();
        let mut hashes = Vec::with_capacity(held.len() * 8);
        let mut positions = Vec::with_capacity(held.len() * 4);
        for (h, p) in held {
            hashes.extend_from_slice(&h.to_le_bytes());
            positions.extend_from_slice(&p.to_le_bytes());
        }
        (PyBytes::new(py, &hashes), PyBytes::new(py, &positions))
    }

    /// The number of (hash, position) entries held.
    fn __len__(&self) -> usize {
        self.len()
    }
}

impl RunKeys {
    /// Hold `position` under `h` unless `per_key` positions hold it already (false: crowded out). Room
    /// must have been made in `first`.
    fn hold(&mut self, position: u32, h: u64) -> bool {
        let first = self.first.get_or_insert(h, position);
        if first == position {
            return true;
        }
        self.more.push(h, position, self.per_key.saturating_sub(1))
    }

    /// How many positions hold `h`.
    fn held(&self, h: u64) -> usize {
        match self.first.get(h) {
            None => 0,
            Some(_) => 1 + self.more.of(h).len(),
        }
    }

    fn len(&self) -> usize {
        self.first.len() + self.more.held
    }
}

/// The base-2 logarithm of the number of buckets `bucket_starts` cuts a table of `n` hashes into: about
/// eight hashes a bucket.
fn bucket_bits(n: usize) -> u32 {
    (usize::BITS - n.leading_zeros()).saturating_sub(3)
}

#[inline(always)]
fn bucket_of(h: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (h >> (64 - bits)) as usize
    }
}

/// Where each bucket of the sorted table `hashes` starts, and its end (little-endian uint64 bytes): bucket
/// b holds the hashes whose top bits are b, as many bits as make about eight hashes a bucket. Hashes are
/// spread evenly over 64 bits, so a lookup (`frozen_lookup`) reads a bucket's start and searches a few
/// entries, where a binary search of a table of millions reads some 24 entries far apart.
#[pyfunction]
pub fn bucket_starts<'py>(py: Python<'py>, hashes: PyBuffer<u64>) -> PyResult<Bound<'py, PyBytes>> {
    let table = values_of(&hashes, "hashes")?;
    let bits = bucket_bits(table.len());
    let mut starts = Vec::with_capacity(((1usize << bits) + 1) * 8);
    let mut at = 0;
    for b in 0..1usize << bits {
        while at < table.len() && bucket_of(table[at], bits) < b {
            at += 1;
        }
        starts.extend_from_slice(&(at as u64).to_le_bytes());
    }
    starts.extend_from_slice(&(table.len() as u64).to_le_bytes());
    Ok(PyBytes::new(py, &starts))
}

/// `esdedup.ingest.runindex.FrozenKeys._merge`: one window's entries (`new_hashes`, `new_ords`: sorted by
/// hash, a hash's in write order, every ordinal above the table's) merged into the frozen table in place.
/// `hashes` and `ords` hold the table's `old` entries first and room for the window's after them. A window's
/// entry goes after the table's entries of its hash (written earlier). Filled from the last place down: each
/// destination is at or above every table entry not yet moved, so none is overwritten before it is read, and
/// no second table is made (a roll is where a run's memory peaks). One pass of the table, where moving it
/// a chunk at a time in numpy searched for every entry's place and scattered it there.
#[pyfunction]
pub fn merge_frozen(
    mut hashes: PyBuffer<u64>,
    mut ords: PyBuffer<u32>,
    old: usize,
    new_hashes: PyBuffer<u64>,
    new_ords: PyBuffer<u32>,
) -> PyResult<()> {
    let add_h = values_of(&new_hashes, "new_hashes")?;
    let add_o = values_of(&new_ords, "new_ords")?;
    // The table's own arrays, apart from the new entries' (checked below).
    let table_h = values_of_mut(&mut hashes, "merge_frozen: hashes")?;
    let table_o = values_of_mut(&mut ords, "merge_frozen: ords")?;
    let m = add_h.len();
    if add_o.len() != m
        || table_h.len() != old + m
        || table_o.len() != old + m
        || !apart(table_h, add_h)
        || !apart(table_o, add_o)
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "merge_frozen: one ordinal an entry, the table's arrays `old` entries plus room for the new ones, \
             and the new entries in arrays of their own",
        ));
    }
    let (mut i, mut j) = (old, m);
    while j > 0 {
        let k = i + j - 1;
        if i > 0 && table_h[i - 1] > add_h[j - 1] {
            i -= 1;
            table_h[k] = table_h[i];
            table_o[k] = table_o[i];
        } else {
            j -= 1;
            table_h[k] = add_h[j];
            table_o[k] = add_o[j];
        }
    }
    Ok(())
}

/// Whether two slices share no memory.
fn apart<T>(a: &[T], b: &[T]) -> bool {
    a.as_ptr_range().end <= b.as_ptr() || b.as_ptr_range().end <= a.as_ptr()
}

/// `esdedup.ingest.runindex.FrozenKeys.lookup` of a batch, without the ids: `hashes` is the frozen table
/// (sorted; a hash's entries in write order), `ords` each entry's document ordinal and `starts` its
/// `bucket_starts`; record r looks up the next `counts[r]` of `queries`. Of each query its first `per_key`
/// entries, of a record's ordinals (ascending, each once) the first `per_record`. Returns the (record,
/// ordinal) pairs as little-endian int64 and uint32 bytes, by record, then ordinal.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn frozen_lookup<'py>(
    py: Python<'py>,
    hashes: PyBuffer<u64>,
    ords: PyBuffer<u32>,
    starts: PyBuffer<u64>,
    queries: PyBuffer<u64>,
    counts: Vec<usize>,
    per_key: usize,
    per_record: usize,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let table = values_of(&hashes, "hashes")?;
    let of = values_of(&ords, "ords")?;
    let starts = values_of(&starts, "starts")?;
    let asked = values_of(&queries, "queries")?;
    let bits = bucket_bits(table.len());
    if table.len() != of.len()
        || counts.iter().sum::<usize>() != asked.len()
        || starts.len() != (1usize << bits) + 1
        || starts.last() != Some(&(table.len() as u64))
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "frozen_lookup: one ordinal an entry, the table's bucket_starts, and as many queries as the counts \
             add up to",
        ));
    }
    let (mut records, mut ordinals) = (Vec::new(), Vec::new());
    let mut found: Vec<u32> = Vec::new();
    let mut buckets: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    for (r, &n) in counts.iter().enumerate() {
        found.clear();
        buckets.clear();
        // A record's queries in three passes, so that the misses to memory of each pass overlap: its
        // buckets' starts asked for, then read (their first entries asked for), then searched.
        let asks = &asked[at..at + n];
        for &q in asks {
            prefetch(&starts[bucket_of(q, bits)]);
        }
        for &q in asks {
            let b = bucket_of(q, bits);
            let (lo, hi) = (starts[b] as usize, starts[b + 1] as usize);
            if lo < hi {
                prefetch(&table[lo]);
            }
            buckets.push((lo, hi));
        }
        for (&q, &(lo, hi)) in asks.iter().zip(&buckets) {
            let first = lo + table[lo..hi].partition_point(|&h| h < q);
            let held = table[first..hi]
                .iter()
                .take(per_key)
                .take_while(|&&h| h == q)
                .count();
            found.extend_from_slice(&of[first..first + held]);
        }
        at += n;
        found.sort_unstable();
        found.dedup();
        for &o in found.iter().take(per_record) {
            records.extend_from_slice(&(r as i64).to_le_bytes());
            ordinals.extend_from_slice(&o.to_le_bytes());
        }
    }
    Ok((PyBytes::new(py, &records), PyBytes::new(py, &ordinals)))
}

/// One key's holders among a batch's records: a chain through `Holders::next`, in record order.
#[derive(Clone, Copy)]
struct Holding {
    head: u32,
    tail: u32,
    /// Distinct records that hold the key, counted past `per_key` too.
    count: u32,
    last: u32,
}

/// The first `per_key` distinct records of a batch holding each key, chained in record order.
struct Holders {
    groups: Vec<Holding>,
    record: Vec<u32>,
    next: Vec<u32>,
}

const END: u32 = u32::MAX;

impl Holders {
    /// The records that hold key group `g`, in record order.
    fn of(&self, g: usize) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.groups[g].head;
        std::iter::from_fn(move || {
            (at != END).then(|| {
                let r = self.record[at as usize];
                at = self.next[at as usize];
                r
            })
        })
    }
}

/// Each record's peers, and the (record, key) pairs past a key's first holders (`batch_peers`).
type BatchPeers<'py> = (Vec<Vec<u32>>, Bound<'py, PyBytes>, Bound<'py, PyBytes>);

/// `esdedup.ingest.labels.batch_peers` in the core: record r of a batch holds the next `hold_counts[r]` of
/// `holds` and probes the next `probe_counts[r]` of `probes` (key hashes). For each record, the earlier
/// records (ascending, each once) among the first `per_key` distinct records of the batch holding a key it
/// probes; and each (record, key) where the record is past the first `per_key` holders of the key. Returns
/// the peers as one list a record, and the records and keys past the first as little-endian uint32 and
/// uint64 bytes.
#[pyfunction]
pub fn batch_peers<'py>(
    py: Python<'py>,
    probes: PyBuffer<u64>,
    probe_counts: Vec<usize>,
    holds: PyBuffer<u64>,
    hold_counts: Vec<usize>,
    per_key: usize,
) -> PyResult<BatchPeers<'py>> {
    let probed = values_of(&probes, "probes")?;
    let held = values_of(&holds, "holds")?;
    if probe_counts.len() != hold_counts.len()
        || probe_counts.iter().sum::<usize>() != probed.len()
        || hold_counts.iter().sum::<usize>() != held.len()
        || hold_counts.len().max(held.len()) >= END as usize
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "batch_peers: as many probe counts as hold counts, each adding up to its hashes",
        ));
    }
    let mut slots = Slots::default();
    slots.reserve(held.len());
    let mut holders = Holders {
        groups: Vec::new(),
        record: Vec::with_capacity(held.len()),
        next: Vec::with_capacity(held.len()),
    };
    let (mut past_records, mut past_keys) = (Vec::new(), Vec::new());
    let mut at = 0;
    for (r, &n) in hold_counts.iter().enumerate() {
        let r = r as u32;
        for &h in &held[at..at + n] {
            let g = slots.get_or_insert(h, holders.groups.len() as u32) as usize;
            if g == holders.groups.len() {
                holders.groups.push(Holding {
                    head: END,
                    tail: END,
                    count: 0,
                    last: END,
                });
            }
            let group = &mut holders.groups[g];
            if group.last == r {
                continue; // a key a record holds twice
            }
            group.last = r;
            group.count += 1;
            if group.count as usize > per_key {
                past_records.extend_from_slice(&r.to_le_bytes());
                past_keys.extend_from_slice(&h.to_le_bytes());
                continue;
            }
            let entry = holders.record.len() as u32;
            holders.record.push(r);
            holders.next.push(END);
            if group.tail == END {
                group.head = entry;
            } else {
                holders.next[group.tail as usize] = entry;
            }
            group.tail = entry;
        }
        at += n;
    }
    let mut peers = Vec::with_capacity(probe_counts.len());
    let mut found: Vec<u32> = Vec::new();
    at = 0;
    for (p, &n) in probe_counts.iter().enumerate() {
        found.clear();
        for &h in &probed[at..at + n] {
            if let Some(g) = slots.get(h) {
                found.extend(holders.of(g as usize).take_while(|&j| (j as usize) < p));
            }
        }
        at += n;
        found.sort_unstable();
        found.dedup();
        peers.push(found.clone());
    }
    Ok((
        peers,
        PyBytes::new(py, &past_records),
        PyBytes::new(py, &past_keys),
    ))
}
