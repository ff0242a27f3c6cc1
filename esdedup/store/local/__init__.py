"""The embedded store: one SQLite file per collection, no server (`LocalStore`).

Tables: ``meta`` (the FingerprintConfig, as in an Elasticsearch index's `_meta`), ``docs`` (one row per
document: SimHash hex, vector as float32 bytes, labels, article fields as JSON) and ``bands`` (band key,
document id). Band keys carry their table number (``"2:9f3a"``), so one ``bands`` table whose primary key
starts with the key is an index on every band at once.

MinHash LSH keys (40-bit integers in decimal, `esdedup.fingerprint.minhash.lsh_keys`) live in a table of their
own, ``lsh``, laid out the same way. The vector is stored only when the config says documents carry it
(`FingerprintConfig.stores_vector`).
Writes only append document rows (a text with a signature has 16 LSH keys by default, and 16 random B-tree
inserts cost more than the document itself). Keys are indexed lazily: ``docs.seq`` grows with every write
(AUTOINCREMENT, never reused, and a replaced document gets a new one), ``meta`` remembers up to which ``seq``
each key table is indexed, and the first read that needs a table (lookup, shared keys, crowded keys) computes
the keys of the newer documents from their stored SimHash and MinHash signature, sorts them and inserts them
in one pass. An all-pairs search that joins LSH bands in memory (`esdedup.match.joins`) never needs the
``lsh`` table (nor the ``bands`` table, where it joins the band keys too). Overwriting a document deletes its
old key rows, recomputed the same way.

Several processes may use one collection. SQLite serialises their transactions (each write transaction
takes the write lock at its start, and waits up to `BUSY_SECONDS` for it); ingest also holds
`LocalStore.write_lock`, a lock file next to the database, for each batch, so that a batch's lookup,
labelling and write happen as one step for every writer (and labels need no settling afterwards). A batch
run writes each batch in the background (`LocalStore.start_write`: the extension's writer, on a connection
and a thread of its own, the GIL released) while it reads the next one, the lock held until the write is
accounted for. A
store that cannot be written (a read-only file or folder) is still read: keys of documents not yet
indexed are then indexed in temporary tables of the connection only.

The file runs in SQLite's write-ahead-log mode. A batch's commit only appends its pages to the log; a thread
of the store's own copies them into the file after each batch (a checkpoint, which waits for no reader nor
writer), so the thread that labels the next batch does not wait for that copy. The committing connection copies
the log itself only when it reaches `sqlite.WAL_PAGES` pages.

The modules: `sqlite` (the schema, the connection, SQLite's errors), `rows` (a document as a ``docs`` row),
`keys` (the key tables: lazy indexing, lookups, shared and crowded keys), `labels` (cluster labels) and
`store` (`LocalStore`, the `esdedup.store.base.Store` protocol over them).
"""
from __future__ import annotations

from esdedup.store.local.sqlite import BUSY_SECONDS, default_data_dir
from esdedup.store.local.store import WRITE_BATCH, LocalStore

__all__ = ["BUSY_SECONDS", "WRITE_BATCH", "LocalStore", "default_data_dir"]
