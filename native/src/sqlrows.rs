//! Rows written into an SQLite file with the GIL released, on a thread of their own: the embedded store's
//! batch write (`esdedup.store.local.background`), which Python's `executemany` would make under the GIL, a
//! row at a time, while the run has the next batch to read.
//!
//! The SQLite library is the one Python's own `sqlite3` module uses, found through that module's shared
//! object (`dlopen` of a library already loaded, then `dlsym` over its dependencies), never a second copy:
//! two copies of SQLite in one process do not see each other's POSIX locks on a file, and one closing the
//! file would drop the other's. Where the module's symbols cannot be found so, or the library is not of
//! the version Python reports, no writer is made and the store writes through Python.
//!
//! The statement, the pragmas and the rows come from Python (`esdedup/store/local/rows.py` defines them);
//! this only binds each row's values (None, int, str, bytes, as `sqlite3` binds them) and steps the statement,
//! all rows in one transaction (`BEGIN IMMEDIATE`, rolled back on any error). A batch whose rows read most of
//! their values from a few arrays (`RowWriter::start_block`) comes as those arrays and a short tuple a row:
//! each parameter says where its value is, and the values are made on the writer's thread.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};

use crate::jsonout::{object_json, read_members, Members};

const SQLITE_OK: c_int = 0;
const SQLITE_DONE: c_int = 101;
const SQLITE_TOOBIG: c_int = 18;
const SQLITE_ROW: c_int = 100;
const SQLITE_OPEN_READWRITE: c_int = 0x0000_0002;

type Open = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, *const c_char) -> c_int;
type WithDb = unsafe extern "C" fn(*mut c_void) -> c_int;
type BusyTimeout = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
type Exec =
    unsafe extern "C" fn(*mut c_void, *const c_char, *const c_void, *mut c_void, *mut *mut c_char) -> c_int;
type Prepare =
    unsafe extern "C" fn(*mut c_void, *const c_char, c_int, *mut *mut c_void, *mut *const c_char) -> c_int;
type BindNull = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
type BindInt64 = unsafe extern "C" fn(*mut c_void, c_int, i64) -> c_int;
type BindBytes = unsafe extern "C" fn(*mut c_void, c_int, *const c_void, c_int, *const c_void) -> c_int;
type WithStmt = unsafe extern "C" fn(*mut c_void) -> c_int;
type ErrMsg = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type ColumnInt64 = unsafe extern "C" fn(*mut c_void, c_int) -> i64;
type ColumnPtr = unsafe extern "C" fn(*mut c_void, c_int) -> *const c_void;
type ColumnInt = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
type Version = unsafe extern "C" fn() -> c_int;

/// The functions of the SQLite library Python's `sqlite3` uses.
struct Api {
    open_v2: Open,
    close_v2: WithDb,
    busy_timeout: BusyTimeout,
    exec: Exec,
    prepare_v2: Prepare,
    bind_null: BindNull,
    bind_int64: BindInt64,
    bind_text: BindBytes,
    bind_blob: BindBytes,
    bind_parameter_count: WithStmt,
    step: WithStmt,
    reset: WithStmt,
    finalize: WithStmt,
    errmsg: ErrMsg,
    extended_errcode: WithDb,
    column_int64: ColumnInt64,
    column_text: ColumnPtr,
    column_blob: ColumnPtr,
    column_bytes: ColumnInt,
    column_type: ColumnInt,
}

impl Api {
    /// The functions, looked up from the shared object `module` (already loaded) and its dependencies; None
    /// when it is not loaded or one of them is not found.
    #[cfg(not(unix))]
    fn of(_module: &[u8]) -> Option<(Api, c_int)> {
        None // no dlopen: the store writes through sqlite3
    }

    #[cfg(unix)]
    fn of(module: &[u8]) -> Option<(Api, c_int)> {
        let path = CString::new(module).ok()?;
        // SAFETY: RTLD_NOLOAD only returns a handle to an object this process has loaded already (it loads
        // nothing); the handle is never closed, as Python never unloads its extension modules.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            return None;
        }
        macro_rules! find {
            ($name:literal as $kind:ty) => {{
                // SAFETY: the name is NUL-terminated; the symbol, when found, is SQLite's function of that
                // name, whose C signature the type it is transmuted to spells out.
                let symbol = unsafe { libc::dlsym(handle, concat!($name, "\0").as_ptr() as *const c_char) };
                if symbol.is_null() {
                    return None;
                }
                unsafe { std::mem::transmute::<*mut c_void, $kind>(symbol) }
            }};
        }
        let version = find!("sqlite3_libversion_number" as Version);
        let api = Api {
            open_v2: find!("sqlite3_open_v2" as Open),
            close_v2: find!("sqlite3_close_v2" as WithDb),
            busy_timeout: find!("sqlite3_busy_timeout" as BusyTimeout),
            exec: find!("sqlite3_exec" as Exec),
            prepare_v2: find!("sqlite3_prepare_v2" as Prepare),
            bind_null: find!("sqlite3_bind_null" as BindNull),
            bind_int64: find!("sqlite3_bind_int64" as BindInt64),
            bind_text: find!("sqlite3_bind_text" as BindBytes),
            bind_blob: find!("sqlite3_bind_blob" as BindBytes),
            bind_parameter_count: find!("sqlite3_bind_parameter_count" as WithStmt),
            step: find!("sqlite3_step" as WithStmt),
            reset: find!("sqlite3_reset" as WithStmt),
            finalize: find!("sqlite3_finalize" as WithStmt),
            errmsg: find!("sqlite3_errmsg" as ErrMsg),
            extended_errcode: find!("sqlite3_extended_errcode" as WithDb),
            column_int64: find!("sqlite3_column_int64" as ColumnInt64),
            column_text: find!("sqlite3_column_text" as ColumnPtr),
            column_blob: find!("sqlite3_column_blob" as ColumnPtr),
            column_bytes: find!("sqlite3_column_bytes" as ColumnInt),
            column_type: find!("sqlite3_column_type" as ColumnInt),
        };
        // SAFETY: takes no argument and reads a constant.
        Some((api, unsafe { version() }))
    }
}

/// One value of a row, as `sqlite3` binds a Python value: a str or bytes read in place (its UTF-8 is the one
/// `sqlite3` would bind), the object held until the write is waited for.
enum Value {
    Null,
    Int(i64),
    Text(PyBackedStr),
    Blob(PyBackedBytes),
    /// Text made here (`Param::Hex`).
    Owned(String),
    /// A stretch of an array's bytes (`Param::Blob`): `len` bytes from `start`.
    Shared(Arc<[u8]>, usize, usize),
    /// A dict's members (`esdedup.store.local.rows.source_json`'s text of it, made on the writer's thread
    /// by `encode_objects`), bound as that text.
    Object(Members, Vec<u8>),
}

/// Where one parameter of a block's rows (`RowWriter::start_block`) takes its value, for the document of
/// block row `r`: the `k`-th value of its own tuple, or an array of the block.
enum Param {
    Doc(usize),
    /// `values[r]`.
    Int(Vec<i64>),
    /// `values[r]` as lowercase hex, zero-padded to `width` digits.
    Hex(Vec<u64>, usize),
    /// Row `at[r]` of a matrix of rows of `width` bytes; NULL where `at[r]` is negative.
    Blob(Arc<[u8]>, usize, Vec<i64>),
}

/// A batch's rows, given back by its thread so that the objects they hold are let go of with the GIL held.
type Rows = Vec<Vec<Value>>;

/// SQLite's error: its extended result code and message.
pub type Failure = (c_int, String);

/// A connection of its own to the file; used by one thread at a time (the writer's `Mutex`).
pub struct Connection {
    api: Arc<Api>,
    db: *mut c_void,
}

// SAFETY: the connection is only ever used under the writer's Mutex, one thread at a time, which SQLite
// allows in every threading mode but single-thread (never Python's build: its module checks threads itself).
unsafe impl Send for Connection {}

impl Connection {
    /// A connection to the file `path` through the SQLite of the shared object `module` (see
    /// `RowWriter::open`), with `busy_ms` and the statements `setup` run once connected; None when that
    /// library's functions cannot be found or it is not of `version`.
    pub fn open(
        module: &[u8],
        version: c_int,
        path: &[u8],
        busy_ms: c_int,
        setup: &[String],
    ) -> PyResult<Option<Connection>> {
        let Some((api, found)) = Api::of(module) else {
            return Ok(None);
        };
        if found != version {
            return Ok(None);
        }
        let api = Arc::new(api);
        let file =
            CString::new(path).map_err(|_| PyValueError::new_err("a NUL character in the file's path"))?;
        let path = String::from_utf8_lossy(path);
        let mut db: *mut c_void = std::ptr::null_mut();
        // SAFETY: `file` is NUL-terminated; a handle is returned even on failure, closed by the Connection.
        let rc = unsafe { (api.open_v2)(file.as_ptr(), &mut db, SQLITE_OPEN_READWRITE, std::ptr::null()) };
        if db.is_null() {
            return Err(PyRuntimeError::new_err(format!(
                "SQLite could not open {path} (code {rc})"
            )));
        }
        let connection = Connection { api: api.clone(), db };
        if rc != SQLITE_OK {
            let (code, message) = connection.failure(rc);
            return Err(PyRuntimeError::new_err(format!(
                "SQLite could not open {path}: {message} (code {code})"
            )));
        }
        // SAFETY: `db` is open.
        unsafe { (api.busy_timeout)(db, busy_ms) };
        for statement in setup {
            if let Err((code, message)) = connection.exec(statement) {
                return Err(PyRuntimeError::new_err(format!(
                    "{statement}: {message} (code {code})"
                )));
            }
        }
        Ok(Some(connection))
    }

    /// `sql` prepared (finalized when the statement is dropped).
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>, Failure> {
        let text = CString::new(sql).map_err(|_| (1, "a NUL character in the statement".to_string()))?;
        let mut stmt: *mut c_void = std::ptr::null_mut();
        // SAFETY: `db` is open, `text` NUL-terminated (-1: read up to the NUL).
        let rc =
            unsafe { (self.api.prepare_v2)(self.db, text.as_ptr(), -1, &mut stmt, std::ptr::null_mut()) };
        if rc != SQLITE_OK {
            return Err(self.failure(rc));
        }
        Ok(Statement {
            connection: self,
            stmt,
        })
    }

    fn failure(&self, code: c_int) -> Failure {
        // SAFETY: `db` is open; errmsg returns a NUL-terminated string SQLite owns until the next call.
        let (extended, message) = unsafe {
            (
                (self.api.extended_errcode)(self.db),
                CStr::from_ptr((self.api.errmsg)(self.db)),
            )
        };
        (
            if extended != 0 { extended } else { code },
            message.to_string_lossy().into_owned(),
        )
    }

    pub fn exec(&self, sql: &str) -> Result<(), Failure> {
        let sql = CString::new(sql).map_err(|_| (1, "a NUL character in the statement".to_string()))?;
        // SAFETY: `db` is open, `sql` NUL-terminated; no callback, no error string asked for.
        let rc = unsafe {
            (self.api.exec)(
                self.db,
                sql.as_ptr(),
                std::ptr::null(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if rc == SQLITE_OK {
            Ok(())
        } else {
            Err(self.failure(rc))
        }
    }

    /// Every row through `sql` in one transaction; on an error the transaction is rolled back.
    fn write(&self, sql: &str, rows: &[Vec<Value>]) -> Result<(), Failure> {
        self.exec("BEGIN IMMEDIATE")?;
        let done = self.insert(sql, rows).and_then(|()| self.exec("COMMIT"));
        if done.is_err() {
            // Its own failure would say less than the one that made it necessary.
            let _ = self.exec("ROLLBACK");
        }
        done
    }

    /// The rows through `sql`, `ROWS_PER_STATEMENT` of them at a time through one statement of that many
    /// rows' values where `sql` ends in one row's group of parameters (`several_rows`): SQLite runs a
    /// statement's program once for all of them, and an `AUTOINCREMENT` table's counter is read and written
    /// once. The same rows, in the same order, with the same row ids.
    fn insert(&self, sql: &str, rows: &[Vec<Value>]) -> Result<(), Failure> {
        let one = self.prepare(sql)?;
        // SAFETY: `stmt` is prepared, and finalized when `one` is dropped, after its last use.
        let params = unsafe { (self.api.bind_parameter_count)(one.stmt) } as usize;
        if let Some(row) = rows.iter().find(|row| row.len() != params) {
            return Err((
                25,
                format!("a row of {} values for {params} parameters", row.len()),
            ));
        }
        let mut rest = rows;
        if let Some(several) =
            several_rows(sql, params, ROWS_PER_STATEMENT).filter(|_| rows.len() >= ROWS_PER_STATEMENT)
        {
            let statement = self.prepare(&several)?;
            let whole = rows.len() / ROWS_PER_STATEMENT * ROWS_PER_STATEMENT;
            for group in rows[..whole].chunks_exact(ROWS_PER_STATEMENT) {
                for (r, row) in group.iter().enumerate() {
                    self.bind_row(&statement, r * params, row)?;
                }
                self.run(&statement)?;
            }
            rest = &rows[whole..];
        }
        for row in rest {
            self.bind_row(&one, 0, row)?;
            self.run(&one)?;
        }
        Ok(())
    }

    /// Step a statement whose parameters are bound, and reset it for the next values.
    fn run(&self, statement: &Statement<'_>) -> Result<(), Failure> {
        statement.step()?;
        // SAFETY: `stmt` is prepared; a failed step's code was taken before this reset.
        unsafe { (self.api.reset)(statement.stmt) };
        Ok(())
    }

    /// Bind a row's values to the parameters after the first `offset` of a statement.
    fn bind_row(&self, statement: &Statement<'_>, offset: usize, row: &[Value]) -> Result<(), Failure> {
        let (api, stmt) = (&self.api, statement.stmt);
        for (i, value) in row.iter().enumerate() {
            let at = (offset + i) as c_int + 1;
            let bytes = |bind: BindBytes, data: &[u8]| {
                // SAFETY: the value outlives the step that reads it (SQLITE_STATIC: null destructor);
                // the length was checked to fit an int when the rows were read (a JSON made here, above).
                unsafe {
                    bind(
                        stmt,
                        at,
                        data.as_ptr().cast(),
                        data.len() as c_int,
                        std::ptr::null(),
                    )
                }
            };
            if let Value::Object(_, json) = value {
                if json.len() > c_int::MAX as usize {
                    return Err((SQLITE_TOOBIG, "a value of 2 GB or more".to_string()));
                }
            }
            // SAFETY: the values outlive the step that reads them (SQLITE_STATIC: null destructor).
            let rc = match value {
                Value::Null => unsafe { (api.bind_null)(stmt, at) },
                Value::Int(v) => unsafe { (api.bind_int64)(stmt, at, *v) },
                Value::Text(s) => bytes(api.bind_text, s.as_bytes()),
                Value::Blob(b) => bytes(api.bind_blob, b),
                Value::Owned(s) => bytes(api.bind_text, s.as_bytes()),
                Value::Shared(data, start, len) => bytes(api.bind_blob, &data[*start..*start + *len]),
                Value::Object(_, json) => bytes(api.bind_text, json),
            };
            if rc != SQLITE_OK {
                return Err(self.failure(rc));
            }
        }
        Ok(())
    }
}

/// Rows an insert statement takes at a time (`Connection::insert`): their parameters stay far below the
/// 999 an SQLite before 3.32 allows a statement.
const ROWS_PER_STATEMENT: usize = 32;

/// `sql` for `rows` rows of values: its `VALUES` group, `(?,...,?)` with one `?` for each of its `params`
/// parameters, repeated; None when `sql` does not end in such a group (it is then run a row at a time).
fn several_rows(sql: &str, params: usize, rows: usize) -> Option<String> {
    let sql = sql.trim_end();
    let at = sql.rfind('(')?;
    if !sql[..at].trim_end().to_ascii_uppercase().ends_with(" VALUES") {
        return None;
    }
    let group = &sql[at..];
    let inner = group.strip_prefix('(')?.strip_suffix(')')?;
    let marks: Vec<&str> = inner.split(',').map(str::trim).collect();
    if params == 0 || marks.len() != params || marks.iter().any(|m| *m != "?") || params * rows > 999 {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + (group.len() + 1) * rows);
    out.push_str(sql);
    for _ in 1..rows {
        out.push(',');
        out.push_str(group);
    }
    Some(out)
}

/// A prepared statement of a `Connection`, read a row at a time (`step`, then the `column_*` of `Api`).
pub struct Statement<'c> {
    connection: &'c Connection,
    stmt: *mut c_void,
}

impl Statement<'_> {
    pub fn bind_int(&self, at: c_int, value: i64) -> Result<(), Failure> {
        // SAFETY: `stmt` is prepared and not finalized.
        let rc = unsafe { (self.connection.api.bind_int64)(self.stmt, at, value) };
        if rc == SQLITE_OK {
            Ok(())
        } else {
            Err(self.connection.failure(rc))
        }
    }

    /// The next row: true when there is one, false when the statement is done.
    pub fn step(&self) -> Result<bool, Failure> {
        // SAFETY: `stmt` is prepared and its parameters bound.
        match unsafe { (self.connection.api.step)(self.stmt) } {
            SQLITE_ROW => Ok(true),
            SQLITE_DONE => Ok(false),
            rc => Err(self.connection.failure(rc)),
        }
    }

    /// The type of column `at` of the current row (SQLite's `SQLITE_INTEGER` ... `SQLITE_NULL`). The
    /// column readers below need a current row (`step` gave true) and a column the statement has.
    pub fn kind(&self, at: c_int) -> c_int {
        // SAFETY: a row is current and the column exists (the caller's statement).
        unsafe { (self.connection.api.column_type)(self.stmt, at) }
    }

    /// Column `at` of the current row as an integer (0 for NULL, as SQLite converts).
    pub fn int(&self, at: c_int) -> i64 {
        // SAFETY: as `kind`.
        unsafe { (self.connection.api.column_int64)(self.stmt, at) }
    }

    /// Column `at` of the current row as text (None: NULL), valid until the next step.
    pub fn text(&self, at: c_int) -> Option<&[u8]> {
        self.bytes(at, self.connection.api.column_text)
    }

    /// Column `at` of the current row as a blob (None: NULL or empty), valid until the next step.
    pub fn blob(&self, at: c_int) -> Option<&[u8]> {
        self.bytes(at, self.connection.api.column_blob)
    }

    fn bytes(&self, at: c_int, read: ColumnPtr) -> Option<&[u8]> {
        // SAFETY: as `kind`; the pointer is SQLite's, valid until the statement steps again, and its length
        // is asked for after it (the order SQLite documents).
        unsafe {
            let start = read(self.stmt, at);
            if start.is_null() {
                return None;
            }
            let len = (self.connection.api.column_bytes)(self.stmt, at) as usize;
            Some(std::slice::from_raw_parts(start.cast::<u8>(), len))
        }
    }
}

impl Drop for Statement<'_> {
    fn drop(&mut self) {
        // SAFETY: prepared by `Connection::prepare`, not used again.
        unsafe { (self.connection.api.finalize)(self.stmt) };
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: opened by `RowWriter::open`; close_v2 waits for nothing and frees what is left.
        unsafe { (self.api.close_v2)(self.db) };
    }
}

/// A connection to one SQLite file that writes a batch of rows at a time on a thread of its own (`start`,
/// then `wait`), at most one batch at a time.
#[pyclass(module = "esdedup_native")]
pub struct RowWriter {
    connection: Option<Arc<Mutex<Connection>>>,
    pending: Option<JoinHandle<(Result<(), Failure>, Rows)>>,
}

#[pymethods]
impl RowWriter {
    /// A connection to the file `path` through the SQLite of the shared object `module` (the path of
    /// Python's `_sqlite3`; both paths as the file system's bytes, `os.fsencode`), which must report
    /// `version` (`sqlite3.sqlite_version_info` as one number, major * 1000000 + minor * 1000 + patch);
    /// `busy_ms`: how long a write waits for another connection's transaction; `setup`: statements run
    /// once connected (pragmas). None when that library's functions cannot be found or it is of another
    /// version.
    #[staticmethod]
    fn open(
        module: &[u8],
        version: c_int,
        path: &[u8],
        busy_ms: c_int,
        setup: Vec<String>,
    ) -> PyResult<Option<Self>> {
        Ok(
            Connection::open(module, version, path, busy_ms, &setup)?.map(|connection| RowWriter {
                connection: Some(Arc::new(Mutex::new(connection))),
                pending: None,
            }),
        )
    }

    /// Start writing `rows` (a list of tuples of None, int, str and bytes, one value per parameter of
    /// `sql`) on a thread of its own, in one transaction. Raises ValueError for a value it does not bind
    /// as `sqlite3` would (another type, an int beyond 64 bits, a str with a lone surrogate, a value of 2 GB
    /// or more; nothing is written then), RuntimeError while a batch is being written or after `close`.
    fn start(&mut self, sql: String, rows: &Bound<'_, PyList>) -> PyResult<()> {
        if self.pending.is_some() {
            return Err(PyRuntimeError::new_err(
                "a batch is being written: wait for it first",
            ));
        }
        let Some(connection) = self.connection.clone() else {
            return Err(PyRuntimeError::new_err("the writer is closed"));
        };
        let mut values = read_rows(rows, None)?;
        self.pending = Some(std::thread::spawn(move || {
            encode_objects(&mut values);
            let connection = connection.lock().unwrap_or_else(|e| e.into_inner());
            (connection.write(&sql, &values), values)
        }));
        Ok(())
    }

    /// Start writing the rows of documents whose values are mostly in arrays of one block, as `start` does:
    /// `docs` holds a tuple of values a document, `rows` each document's row in the block's arrays, and
    /// `params` where each parameter of `sql` is: `("doc", k)` (the k-th value of the document's tuple),
    /// `("int", values)` (little-endian int64 bytes, one a block row), `("hex", values, width)` (little-endian
    /// uint64 bytes, bound as zero-padded lowercase hex text of `width` digits), or `("blob", matrix, width,
    /// at)` (row `at[r]` of a matrix of `width`-byte rows, NULL where it is negative; `at`: int64 bytes).
    /// A dict among a document's values is bound as its JSON text, as orjson writes it: made on the
    /// writer's thread where its values are plain (`jsonout.rs`), else by `encode(dict)` now (a str).
    /// The array values are made on the writer's thread. Raises ValueError as `start` does, and for arrays
    /// that do not fit the rows.
    #[pyo3(signature = (sql, docs, rows, params, encode=None))]
    fn start_block(
        &mut self,
        sql: String,
        docs: &Bound<'_, PyList>,
        rows: Vec<usize>,
        params: &Bound<'_, PyList>,
        encode: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if self.pending.is_some() {
            return Err(PyRuntimeError::new_err(
                "a batch is being written: wait for it first",
            ));
        }
        let Some(connection) = self.connection.clone() else {
            return Err(PyRuntimeError::new_err("the writer is closed"));
        };
        if rows.len() != docs.len() {
            return Err(PyValueError::new_err("start_block: one block row a document"));
        }
        let own = read_rows(docs, encode.as_ref())?;
        let params = read_params(params, rows.iter().copied().max())?;
        let taken: Vec<usize> = params
            .iter()
            .filter_map(|p| match p {
                Param::Doc(k) => Some(*k),
                _ => None,
            })
            .collect();
        if let Some(&k) = taken
            .iter()
            .find(|&&k| own.iter().any(|values| values.len() <= k))
        {
            return Err(PyValueError::new_err(format!(
                "start_block: a document without value {k}"
            )));
        }
        if (1..taken.len()).any(|i| taken[..i].contains(&taken[i])) {
            return Err(PyValueError::new_err(
                "start_block: a document's value taken twice",
            ));
        }
        self.pending = Some(std::thread::spawn(move || {
            let mut values = block_rows(own, &rows, &params);
            encode_objects(&mut values);
            let connection = connection.lock().unwrap_or_else(|e| e.into_inner());
            (connection.write(&sql, &values), values)
        }));
        Ok(())
    }

    /// Wait for the batch being written (the GIL released): None when it was written (or none was), else
    /// SQLite's extended result code and message (nothing of it was written).
    fn wait(&mut self, py: Python<'_>) -> Option<(c_int, String)> {
        let pending = self.pending.take()?;
        match py.detach(|| pending.join()) {
            Ok((done, rows)) => {
                drop(rows); // here, with the GIL
                done.err()
            }
            Err(_) => Some((2, "the writer thread panicked".to_string())),
        }
    }

    /// Wait for the batch being written, then close the connection.
    fn close(&mut self, py: Python<'_>) {
        let _ = self.wait(py);
        self.connection = None;
    }
}

/// The rows of a block (`RowWriter::start_block`): each parameter's value for each document.
fn block_rows(own: Rows, rows: &[usize], params: &[Param]) -> Rows {
    own.into_iter()
        .zip(rows)
        .map(|(mut values, &r)| {
            params
                .iter()
                .map(|param| match param {
                    Param::Doc(k) => std::mem::replace(&mut values[*k], Value::Null),
                    Param::Int(v) => Value::Int(v[r]),
                    Param::Hex(v, width) => Value::Owned(format!("{:0width$x}", v[r], width = *width)),
                    Param::Blob(data, width, at) => match usize::try_from(at[r]) {
                        Ok(row) => Value::Shared(data.clone(), row * width, *width),
                        Err(_) => Value::Null,
                    },
                })
                .collect()
        })
        .collect()
}

/// `start_block`'s `params`, checked against the block's rows (`last`: the highest row a document reads).
fn read_params(params: &Bound<'_, PyList>, last: Option<usize>) -> PyResult<Vec<Param>> {
    let bad = |what: &str| PyValueError::new_err(format!("start_block: {what}"));
    let rows_of = |n: usize, what: &str| -> PyResult<()> {
        match last {
            Some(r) if r >= n => Err(bad(&format!("{what} has {n} rows, a document reads row {r}"))),
            _ => Ok(()),
        }
    };
    // A column of 8-byte little-endian values, one a block row.
    let words = |item: Bound<'_, PyAny>, what: &str| -> PyResult<Vec<[u8; 8]>> {
        let b = item.extract::<&[u8]>()?;
        if !b.len().is_multiple_of(8) {
            return Err(bad(&format!("{what} is not 8 bytes a value")));
        }
        rows_of(b.len() / 8, what)?;
        Ok(b.chunks_exact(8)
            .map(|w| w.try_into().expect("8 bytes"))
            .collect())
    };
    let mut out = Vec::with_capacity(params.len());
    for param in params.iter() {
        let param = param
            .cast_into::<PyTuple>()
            .map_err(|_| bad("a parameter is not a tuple"))?;
        let kind: String = param.get_item(0)?.extract()?;
        out.push(match kind.as_str() {
            "doc" => Param::Doc(param.get_item(1)?.extract()?),
            "int" => Param::Int(
                words(param.get_item(1)?, "an int column")?
                    .into_iter()
                    .map(i64::from_le_bytes)
                    .collect(),
            ),
            "hex" => Param::Hex(
                words(param.get_item(1)?, "a hex column")?
                    .into_iter()
                    .map(u64::from_le_bytes)
                    .collect(),
                param.get_item(2)?.extract()?,
            ),
            "blob" => {
                let data: Arc<[u8]> = Arc::from(param.get_item(1)?.extract::<&[u8]>()?);
                let width: usize = param.get_item(2)?.extract()?;
                let at: Vec<i64> = words(param.get_item(3)?, "a blob column's rows")?
                    .into_iter()
                    .map(i64::from_le_bytes)
                    .collect();
                let held = data.len().checked_div(width).unwrap_or(0);
                if (width == 0 && !data.is_empty())
                    || (width > 0 && !data.len().is_multiple_of(width))
                    || width > c_int::MAX as usize
                {
                    return Err(bad("a blob matrix is not rows of its width"));
                }
                if width > 0 && at.iter().any(|&a| a >= 0 && a as usize >= held) {
                    return Err(bad("a blob column names a row its matrix does not have"));
                }
                Param::Blob(data, width, at)
            }
            other => return Err(bad(&format!("a parameter of kind {other:?}"))),
        });
    }
    Ok(out)
}

/// The JSON of each `Value::Object` of the rows.
fn encode_objects(rows: &mut Rows) {
    for value in rows.iter_mut().flatten() {
        if let Value::Object(members, json) = value {
            *json = object_json(members);
        }
    }
}

/// The rows' values; a dict is read as its members where they are plain (`jsonout.rs`), else given to
/// `encode` (which gives its text), and is refused without one.
fn read_rows(rows: &Bound<'_, PyList>, encode: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Vec<Value>>> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows.iter() {
        let row = row
            .cast_into::<PyTuple>()
            .map_err(|_| PyValueError::new_err("a row is not a tuple"))?;
        let mut values = Vec::with_capacity(row.len());
        for value in row.iter() {
            values.push(match value.cast::<PyDict>() {
                Ok(object) => read_object(object, encode)?,
                Err(_) => read_value(&value)?,
            });
        }
        out.push(values);
    }
    Ok(out)
}

/// A dict as `read_rows` reads it: its members, or the str `encode` gives of it.
fn read_object(object: &Bound<'_, PyDict>, encode: Option<&Bound<'_, PyAny>>) -> PyResult<Value> {
    if let Some(members) = read_members(object, None) {
        return Ok(Value::Object(members, Vec::new()));
    }
    match encode {
        Some(encode) => {
            let text = encode.call1((object,))?;
            match text.cast::<PyString>() {
                Ok(_) => read_value(&text),
                Err(_) => Err(PyValueError::new_err("the encoder of a dict gave no str")),
            }
        }
        None => Err(PyValueError::new_err(
            "a dict of values other than str, int, bool and None",
        )),
    }
}

fn read_value(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    let too_long = |n: usize| -> PyResult<()> {
        if n > c_int::MAX as usize {
            Err(PyValueError::new_err("a value of 2 GB or more"))
        } else {
            Ok(())
        }
    };
    if value.is_none() {
        Ok(Value::Null)
    } else if let Ok(s) = value.cast::<PyString>() {
        let s = PyBackedStr::try_from(s.clone())?;
        too_long(s.len())?;
        Ok(Value::Text(s))
    } else if let Ok(b) = value.cast::<PyBytes>() {
        too_long(b.as_bytes().len())?;
        Ok(Value::Blob(PyBackedBytes::from(b.clone())))
    } else if let Ok(i) = value.cast::<PyInt>() {
        Ok(Value::Int(
            i.extract::<i64>()
                .map_err(|_| PyValueError::new_err("an int beyond 64 bits"))?,
        ))
    } else {
        Err(PyValueError::new_err(format!(
            "a value of type {}",
            value.get_type().name()?
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::several_rows;

    #[test]
    fn a_values_group_is_repeated_for_several_rows() {
        let sql = "INSERT OR REPLACE INTO t (a, b) VALUES (?, ?) ";
        assert_eq!(
            several_rows(sql, 2, 3).as_deref(),
            Some("INSERT OR REPLACE INTO t (a, b) VALUES (?, ?),(?, ?),(?, ?)")
        );
    }

    #[test]
    fn other_statements_run_a_row_at_a_time() {
        assert_eq!(several_rows("DELETE FROM t WHERE id IN (?,?)", 2, 4), None);
        assert_eq!(several_rows("INSERT INTO t VALUES (?, 1)", 1, 4), None);
        assert_eq!(
            several_rows("INSERT INTO t VALUES (?,?) ON CONFLICT DO NOTHING", 2, 4),
            None
        );
        assert_eq!(several_rows("INSERT INTO t VALUES (?,?)", 3, 4), None);
        assert_eq!(several_rows("INSERT INTO t VALUES (?,?)", 2, 500), None);
    }
}
