/* C twin of the record loops in kwire/records/batch.py (decode and encode of a v2 records region).
 *
 * Semantics are those of _decode_records_py / _encode_records_py: same records, same failures
 * (DecodeFailure(reason, position) where the Python loop raises _Fail). Every read is
 * bounds-checked against the end of the current record, and nothing is allocated in proportion
 * to a length field before that length has been checked against the bytes present.
 * Built optionally (pyproject ext-modules, optional = true); KWIRE_NO_EXTENSIONS=1 disables it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static PyObject *DecodeFailure;

/* header indexes whose keys are remembered across records (see decode_records) */
#define HK_CACHE 8

static int
failf(Py_ssize_t pos, const char *fmt, ...)
{
    va_list vargs;
    va_start(vargs, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, vargs);
    va_end(vargs);
    if (msg == NULL)
        return -1;
    PyObject *args = Py_BuildValue("(Nn)", msg, pos);
    if (args != NULL) {
        PyErr_SetObject(DecodeFailure, args);
        Py_DECREF(args);
    }
    return -1;
}

/* Zig-zag varint (max_bytes 5: int32, 10: int64) at *pos, not reading at or past end. */
static inline int
read_varint(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, int max_bytes, int64_t *out)
{
    Py_ssize_t i = *pos;
    if (i < end && p[i] < 0x80) { /* the common 1-byte case */
        uint64_t u = p[i];
        *out = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
        *pos = i + 1;
        return 0;
    }
    uint64_t result = 0;
    int shift = 0;
    for (int n = 0; n < max_bytes; n++) {
        if (i >= end)
            return failf(i, "varint runs past the end of the records");
        uint8_t b = p[i++];
        result |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (max_bytes == 5)
                result &= 0xffffffffULL; /* Java keeps the low 32 bits */
            *out = (int64_t)((result >> 1) ^ (~(result & 1) + 1));
            *pos = i;
            return 0;
        }
        shift += 7;
    }
    return failf(i, "varint longer than %d bytes", max_bytes);
}

/* a + b as a Python int, exact even when int64 would overflow */
static PyObject *
add_i64(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r))
        return PyLong_FromLongLong(r);
    PyObject *x = PyLong_FromLongLong(a), *y = PyLong_FromLongLong(b), *s = NULL;
    if (x && y)
        s = PyNumber_Add(x, y);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return s;
}

/* key/value/header value: length -1 is None, >= 0 is that many bytes */
static PyObject *
read_nullable_bytes(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, const char *what)
{
    int64_t n = 0;
    if (read_varint(p, pos, end, 5, &n) < 0)
        return NULL;
    if (n == -1)
        Py_RETURN_NONE;
    if (n < 0) {
        failf(*pos, "invalid %s length %lld", what, (long long)n);
        return NULL;
    }
    if (n > end - *pos) {
        failf(*pos, "%s length %lld runs past the record", what, (long long)n);
        return NULL;
    }
    PyObject *b = PyBytes_FromStringAndSize((const char *)p + *pos, (Py_ssize_t)n);
    *pos += (Py_ssize_t)n;
    return b;
}

/* Header keys repeat from record to record: the key at header index h is compared with the
 * previous record's key at that index and, when the bytes match, the same (immutable) str is
 * shared instead of decoding a new one. */
typedef struct {
    PyObject *keys[HK_CACHE];
} hk_cache;

static void
hk_cache_clear(hk_cache *c)
{
    for (int h = 0; h < HK_CACHE; h++)
        Py_CLEAR(c->keys[h]);
}

/* One record at *pos (not reading at or past end): a new `rtype` 5-tuple, or NULL with an
 * exception set (DecodeFailure for bad bytes). */
static PyObject *
decode_one(const uint8_t *p, Py_ssize_t *ppos, Py_ssize_t end, int64_t base_offset, int64_t base_ts,
           PyObject *fixed, PyTypeObject *rtype, hk_cache *cache)
{
    PyObject *key = NULL, *value = NULL, *headers = NULL, *offset = NULL, *ts = NULL, *rec;
    int64_t length = 0, ts_delta = 0, od = 0, hcount = 0;
    Py_ssize_t pos = *ppos;
    if (pos >= end) {
        failf(pos, "record count says more records than the data holds");
        return NULL;
    }
    if (read_varint(p, &pos, end, 5, &length) < 0)
        return NULL;
    if (length < 6 || length > end - pos) {
        failf(pos, "record length %lld is impossible here", (long long)length);
        return NULL;
    }
    Py_ssize_t rec_end = pos + (Py_ssize_t)length;
    pos += 1; /* attributes: unused */
    if (read_varint(p, &pos, rec_end, 10, &ts_delta) < 0 || read_varint(p, &pos, rec_end, 5, &od) < 0)
        return NULL;
    if ((key = read_nullable_bytes(p, &pos, rec_end, "key")) == NULL)
        goto fail;
    if ((value = read_nullable_bytes(p, &pos, rec_end, "value")) == NULL)
        goto fail;
    if (read_varint(p, &pos, rec_end, 5, &hcount) < 0)
        goto fail;
    if (hcount < 0 || hcount > (rec_end - pos) / 2) {
        failf(pos, "invalid header count %lld", (long long)hcount);
        goto fail;
    }
    headers = PyList_New((Py_ssize_t)hcount);
    if (headers == NULL)
        goto fail;
    for (Py_ssize_t h = 0; h < (Py_ssize_t)hcount; h++) {
        int64_t n = 0;
        if (read_varint(p, &pos, rec_end, 5, &n) < 0)
            goto fail;
        if (n < 0 || n > rec_end - pos) {
            failf(pos, "invalid header key length %lld", (long long)n);
            goto fail;
        }
        PyObject *hk, *prev = h < HK_CACHE ? cache->keys[h] : NULL;
        if (prev != NULL && PyUnicode_GET_LENGTH(prev) == (Py_ssize_t)n && PyUnicode_IS_ASCII(prev) &&
            memcmp(PyUnicode_DATA(prev), p + pos, (size_t)n) == 0) {
            hk = Py_NewRef(prev);
        }
        else {
            hk = PyUnicode_DecodeUTF8((const char *)p + pos, (Py_ssize_t)n, "strict");
            if (hk == NULL) {
                PyErr_Clear();
                failf(pos, "header key is not valid UTF-8");
                goto fail;
            }
            if (h < HK_CACHE)
                Py_XSETREF(cache->keys[h], Py_NewRef(hk));
        }
        pos += (Py_ssize_t)n;
        PyObject *hv = read_nullable_bytes(p, &pos, rec_end, "header value");
        if (hv == NULL) {
            Py_DECREF(hk);
            goto fail;
        }
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(hk);
            Py_DECREF(hv);
            goto fail;
        }
        PyTuple_SET_ITEM(pair, 0, hk);
        PyTuple_SET_ITEM(pair, 1, hv);
        /* a (str, bytes | None) tuple can hold no cycle: the collector would untrack it at its
         * first pass anyway (_PyTuple_MaybeUntrack); doing it now spares that pass */
        PyObject_GC_UnTrack(pair);
        PyList_SET_ITEM(headers, h, pair);
    }
    if (pos != rec_end) {
        /* every read above stops at rec_end, so pos < rec_end: the count prints with its minus sign
         * as the Python loop's {:+d} does */
        failf(pos, "record length %lld disagrees with its fields (%zd bytes)", (long long)length, pos - rec_end);
        goto fail;
    }
    if ((offset = add_i64(base_offset, od)) == NULL)
        goto fail;
    if (fixed != Py_None)
        ts = Py_NewRef(fixed);
    else if ((ts = add_i64(base_ts, ts_delta)) == NULL)
        goto fail;
    /* what tuple.__new__(rtype, ...) does, without building the argument tuple */
    rec = rtype->tp_alloc(rtype, 5);
    if (rec == NULL)
        goto fail;
    PyTuple_SET_ITEM(rec, 0, offset);
    PyTuple_SET_ITEM(rec, 1, ts);
    PyTuple_SET_ITEM(rec, 2, key);
    PyTuple_SET_ITEM(rec, 3, value);
    PyTuple_SET_ITEM(rec, 4, headers);
    *ppos = pos;
    return rec;
fail:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(headers);
    Py_XDECREF(offset);
    Py_XDECREF(ts);
    return NULL;
}

/* Shared argument checks of decode_records and RecordIterator. */
static int
check_decode_args(PyTypeObject *rtype, PyObject *fixed, Py_ssize_t count, Py_ssize_t len)
{
    if (!PyType_IsSubtype(rtype, &PyTuple_Type) || rtype->tp_basicsize != PyTuple_Type.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "record type must be a tuple subclass with empty __slots__");
        return -1;
    }
    if (fixed != Py_None && !PyLong_Check(fixed)) {
        PyErr_SetString(PyExc_TypeError, "fixed timestamp must be an int or None");
        return -1;
    }
    /* every record takes at least 7 bytes: refuse a lying count before allocating for it */
    if (count < 0 || count > len / 7)
        return failf(0, "record count %zd exceeds what %zd bytes of records can hold", count, len);
    return 0;
}

static PyObject *
decode_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_ts;
    PyObject *fixed;
    PyTypeObject *rtype;
    if (!PyArg_ParseTuple(args, "y*nLLOO!:decode_records", &view, &count, &base_offset, &base_ts, &fixed,
                          &PyType_Type, &rtype))
        return NULL;
    PyObject *list = NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    Py_ssize_t end = view.len, pos = 0;
    if (check_decode_args(rtype, fixed, count, end) < 0 || (list = PyList_New(count)) == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    hk_cache cache = {{NULL}};
    /* No collection may run inside the loop: nothing here runs Python code, so no one can see the
     * pause, and a collection would only scan the half-built list (several times per 1,000
     * records). The allocations still count towards the next one. */
    int gc_was_enabled = PyGC_Disable();
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *rec = decode_one(p, &pos, end, base_offset, base_ts, fixed, rtype, &cache);
        if (rec == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, rec);
    }
    if (list != NULL && pos != end) {
        failf(pos, "%zd bytes left after the last of %zd records", end - pos, count);
        Py_CLEAR(list);
    }
    if (gc_was_enabled)
        PyGC_Enable();
    hk_cache_clear(&cache);
    PyBuffer_Release(&view);
    return list;
}

/* ---- lazy iteration ---------------------------------------------------------------------------- */

/* RecordIterator(data, count, base_offset, base_timestamp, fixed_timestamp, record_type, on_error):
 * the records one at a time, as the pure-Python generator yields them. A consumer that drops each
 * record before taking the next never holds the batch's objects at once, so the collector never
 * runs over them. A decode failure raises on_error(reason, position) (an exception instance the
 * caller builds) at the record where it happens; the buffer is held until the end or a failure. */
typedef struct {
    PyObject_HEAD
    Py_buffer view;
    int has_view;
    Py_ssize_t pos, count, i;
    int64_t base_offset, base_ts;
    PyObject *fixed;
    PyTypeObject *rtype;
    PyObject *on_error;
    hk_cache cache;
} RecordIterator;

static void
rit_finish(RecordIterator *it)
{
    if (it->has_view) {
        PyBuffer_Release(&it->view);
        it->has_view = 0;
    }
    hk_cache_clear(&it->cache);
}

/* turn a pending DecodeFailure into on_error(reason, pos); other exceptions pass through */
static void
rit_raise(RecordIterator *it)
{
    if (!PyErr_ExceptionMatches(DecodeFailure))
        return;
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    PyErr_NormalizeException(&type, &val, &tb);
    PyObject *args = val != NULL ? PyObject_GetAttrString(val, "args") : NULL;
    Py_XDECREF(type);
    Py_XDECREF(val);
    Py_XDECREF(tb);
    if (args == NULL)
        return;
    PyObject *exc = PyObject_CallObject(it->on_error, args);
    Py_DECREF(args);
    if (exc == NULL)
        return;
    if (PyExceptionInstance_Check(exc))
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    else
        PyErr_SetString(PyExc_TypeError, "on_error must return an exception instance");
    Py_DECREF(exc);
}

static PyObject *
rit_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_ts;
    PyObject *fixed, *on_error;
    PyTypeObject *rtype;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "RecordIterator takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*nLLOO!O:RecordIterator", &view, &count, &base_offset, &base_ts, &fixed,
                          &PyType_Type, &rtype, &on_error))
        return NULL;
    RecordIterator *it = (RecordIterator *)type->tp_alloc(type, 0);
    if (it == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    it->view = view;
    it->has_view = 1;
    it->count = count;
    it->base_offset = base_offset;
    it->base_ts = base_ts;
    it->fixed = Py_NewRef(fixed);
    it->rtype = (PyTypeObject *)Py_NewRef(rtype);
    it->on_error = Py_NewRef(on_error);
    if (check_decode_args(rtype, fixed, count, view.len) < 0) {
        rit_raise(it);
        Py_DECREF(it);
        return NULL;
    }
    return (PyObject *)it;
}

static PyObject *
rit_next(RecordIterator *it)
{
    if (!it->has_view)
        return NULL;
    const uint8_t *p = (const uint8_t *)it->view.buf;
    Py_ssize_t end = it->view.len;
    if (it->i < it->count) {
        PyObject *rec = decode_one(p, &it->pos, end, it->base_offset, it->base_ts, it->fixed, it->rtype, &it->cache);
        if (rec == NULL) {
            rit_finish(it);
            rit_raise(it);
            return NULL;
        }
        it->i++;
        return rec;
    }
    if (it->pos != end) {
        failf(it->pos, "%zd bytes left after the last of %zd records", end - it->pos, it->count);
        rit_finish(it);
        rit_raise(it);
        return NULL;
    }
    rit_finish(it);
    return NULL;
}

static void
rit_dealloc(RecordIterator *it)
{
    rit_finish(it);
    Py_XDECREF(it->fixed);
    Py_XDECREF(it->rtype);
    Py_XDECREF(it->on_error);
    Py_TYPE(it)->tp_free((PyObject *)it);
}

static PyObject *
rit_length_hint(RecordIterator *it, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t(it->has_view ? it->count - it->i : 0);
}

static PyMethodDef rit_methods[] = {
    {"__length_hint__", (PyCFunction)rit_length_hint, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

/* Not GC-tracked: it refers to a buffer owner, ints, strs, a type and a callable, none of which
 * can refer back to an iterator the caller never hands out to them. */
static PyTypeObject RecordIteratorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kwire.records._speedups.RecordIterator",
    .tp_basicsize = sizeof(RecordIterator),
    .tp_dealloc = (destructor)rit_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RecordIterator(data, count, base_offset, base_timestamp, fixed_timestamp, record_type, on_error)",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)rit_next,
    .tp_methods = rit_methods,
    .tp_new = rit_new,
};

/* ---- encoding ---------------------------------------------------------------------------------- */

static inline int
varint_size(int64_t n)
{
    uint64_t u = ((uint64_t)n << 1) ^ (uint64_t)(n >> 63);
    int s = 1;
    while (u >= 0x80) {
        u >>= 7;
        s++;
    }
    return s;
}

static inline char *
write_varint(char *out, int64_t n)
{
    uint64_t u = ((uint64_t)n << 1) ^ (uint64_t)(n >> 63);
    while (u >= 0x80) {
        *out++ = (char)((u & 0x7f) | 0x80);
        u >>= 7;
    }
    *out++ = (char)u;
    return out;
}

/* Length of a nullable bytes-like object (-1 for None), or -2 with an exception set. */
static Py_ssize_t
blob_len(PyObject *o)
{
    if (o == Py_None)
        return -1;
    if (PyBytes_CheckExact(o))
        return PyBytes_GET_SIZE(o);
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_SIMPLE) < 0)
        return -2;
    Py_ssize_t n = b.len;
    PyBuffer_Release(&b);
    return n;
}

static char *
write_blob(char *out, const char *limit, PyObject *o, Py_ssize_t expect)
{
    /* limit: the end of the output; sizes come from pass 1, re-checked so nothing overflows */
    if (expect < -1 || limit - out < varint_size(expect) + (expect > 0 ? expect : 0)) {
        PyErr_SetString(PyExc_ValueError, "records changed while encoding");
        return NULL;
    }
    if (o == Py_None)
        return write_varint(out, -1);
    out = write_varint(out, expect);
    if (PyBytes_CheckExact(o)) {
        memcpy(out, PyBytes_AS_STRING(o), (size_t)expect);
        return out + expect;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    if (b.len != expect) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "a key or value changed size while encoding");
        return NULL;
    }
    memcpy(out, b.buf, (size_t)expect);
    PyBuffer_Release(&b);
    return out + expect;
}

typedef struct {
    int64_t od, ts_delta;
    Py_ssize_t klen, vlen, body;
} rec_info;

static int
int_field(PyObject *o, int64_t *out, const char *what)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

static PyObject *
encode_records(PyObject *self, PyObject *args)
{
    PyObject *records;
    long long base_ts;
    if (!PyArg_ParseTuple(args, "O!L:encode_records", &PyList_Type, &records, &base_ts))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(records);
    rec_info *info = PyMem_Malloc(sizeof(rec_info) * (size_t)(n ? n : 1));
    if (info == NULL)
        return PyErr_NoMemory();
    PyObject *result = NULL;
    Py_ssize_t total = 0;
    /* pass 1: validate and size everything */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 5) {
            PyErr_Format(PyExc_TypeError, "record %zd: not a 5-tuple", i);
            goto done;
        }
        int64_t ts;
        if (int_field(PyTuple_GET_ITEM(r, 0), &info[i].od, "offset delta") < 0 ||
            int_field(PyTuple_GET_ITEM(r, 1), &ts, "timestamp") < 0)
            goto done;
        if (info[i].od < INT32_MIN || info[i].od > INT32_MAX) {
            PyErr_Format(PyExc_OverflowError, "record %zd: offset delta out of int32 range", i);
            goto done;
        }
        if (__builtin_sub_overflow(ts, (int64_t)base_ts, &info[i].ts_delta)) {
            PyErr_Format(PyExc_OverflowError, "record %zd: timestamp delta out of int64 range", i);
            goto done;
        }
        Py_ssize_t klen = blob_len(PyTuple_GET_ITEM(r, 2)), vlen = blob_len(PyTuple_GET_ITEM(r, 3));
        if (klen == -2 || vlen == -2) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "record %zd: key and value must be bytes-like or None", i);
            goto done;
        }
        info[i].klen = klen;
        info[i].vlen = vlen;
        Py_ssize_t body = 1 + varint_size(info[i].ts_delta) + varint_size(info[i].od);
        body += klen < 0 ? 1 : varint_size(klen) + klen;
        body += vlen < 0 ? 1 : varint_size(vlen) + vlen;
        PyObject *hs0 = PyTuple_GET_ITEM(r, 4);
        if (!PyList_Check(hs0) && !PyTuple_Check(hs0)) {
            PyErr_Format(PyExc_TypeError, "record %zd: headers must be a list or tuple", i);
            goto done;
        }
        PyObject *hs = PySequence_Fast(hs0, "headers must be a sequence");
        if (hs == NULL)
            goto done;
        Py_ssize_t hn = PySequence_Fast_GET_SIZE(hs);
        body += varint_size(hn);
        for (Py_ssize_t h = 0; h < hn; h++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(hs, h);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
                Py_DECREF(hs);
                PyErr_Format(PyExc_TypeError, "record %zd: header must be a (str, bytes | None) tuple", i);
                goto done;
            }
            Py_ssize_t hklen;
            if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &hklen) == NULL) {
                Py_DECREF(hs);
                goto done;
            }
            Py_ssize_t hvlen = blob_len(PyTuple_GET_ITEM(pair, 1));
            if (hvlen == -2) {
                Py_DECREF(hs);
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "record %zd: header value must be bytes-like or None", i);
                goto done;
            }
            body += varint_size(hklen) + hklen + (hvlen < 0 ? 1 : varint_size(hvlen) + hvlen);
        }
        Py_DECREF(hs);
        if (body > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "record larger than 2 GiB");
            goto done;
        }
        info[i].body = body;
        total += varint_size(body) + body;
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL)
        goto done;
    char *out = PyBytes_AS_STRING(result);
    const char *limit = out + total;
    /* pass 2: write */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        if (limit - out < varint_size(info[i].body) + info[i].body) {
            PyErr_SetString(PyExc_ValueError, "records changed while encoding");
            goto fail;
        }
        out = write_varint(out, info[i].body);
        *out++ = 0; /* attributes */
        out = write_varint(out, info[i].ts_delta);
        out = write_varint(out, info[i].od);
        if ((out = write_blob(out, limit, PyTuple_GET_ITEM(r, 2), info[i].klen)) == NULL ||
            (out = write_blob(out, limit, PyTuple_GET_ITEM(r, 3), info[i].vlen)) == NULL)
            goto fail;
        PyObject *hs = PySequence_Fast(PyTuple_GET_ITEM(r, 4), "headers must be a sequence");
        if (hs == NULL)
            goto fail;
        Py_ssize_t hn = PySequence_Fast_GET_SIZE(hs);
        if (limit - out < varint_size(hn)) {
            Py_DECREF(hs);
            PyErr_SetString(PyExc_ValueError, "records changed while encoding");
            goto fail;
        }
        out = write_varint(out, hn);
        for (Py_ssize_t h = 0; h < hn; h++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(hs, h);
            Py_ssize_t hklen;
            const char *hk = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &hklen);
            if (hk == NULL) {
                Py_DECREF(hs);
                goto fail;
            }
            if (limit - out < varint_size(hklen) + hklen) {
                Py_DECREF(hs);
                PyErr_SetString(PyExc_ValueError, "records changed while encoding");
                goto fail;
            }
            out = write_varint(out, hklen);
            memcpy(out, hk, (size_t)hklen);
            out += hklen;
            PyObject *hv = PyTuple_GET_ITEM(pair, 1);
            if ((out = write_blob(out, limit, hv, blob_len(hv))) == NULL) {
                Py_DECREF(hs);
                goto fail;
            }
        }
        Py_DECREF(hs);
    }
    if (out != PyBytes_AS_STRING(result) + total) {
        PyErr_SetString(PyExc_ValueError, "records changed while encoding");
        goto fail;
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    PyMem_Free(info);
    return result;
}

/* ---- RecordBase -------------------------------------------------------------------------------- */

/* The base of kwire.records.Record when the extension is built: a tuple subclass whose fields
 * (offset, timestamp, key, value, headers) are member descriptors over the tuple's items, so reading
 * one is a slot load the interpreter specialises (LOAD_ATTR_SLOT) where property(itemgetter(i))
 * makes two calls (about 5x slower per read, measured). A member reads ob_item[i] unchecked, so every
 * instance must hold 5 items: tp_new insists on it, and because RecordBase is a static type with its
 * own tp_new, tuple.__new__(Record, ...) is refused ("not safe") as it is for structseq types. */
#define ITEM_OFFSET(i) ((Py_ssize_t)(offsetof(PyTupleObject, ob_item) + (i) * sizeof(PyObject *)))
static PyMemberDef record_members[] = {
    {"offset", T_OBJECT_EX, ITEM_OFFSET(0), READONLY, "absolute offset"},
    {"timestamp", T_OBJECT_EX, ITEM_OFFSET(1), READONLY, "epoch ms (-1 when absent)"},
    {"key", T_OBJECT_EX, ITEM_OFFSET(2), READONLY, "key bytes or None"},
    {"value", T_OBJECT_EX, ITEM_OFFSET(3), READONLY, "value bytes or None"},
    {"headers", T_OBJECT_EX, ITEM_OFFSET(4), READONLY, "list of (key, value)"},
    {NULL, 0, 0, 0, NULL},
};

/* RecordBase.__new__(cls, items): items is a sequence of exactly 5 values */
static PyObject *
record_base_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *items;
    if ((kwds != NULL && PyDict_GET_SIZE(kwds)) || !PyArg_UnpackTuple(args, "RecordBase", 1, 1, &items)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "RecordBase takes no keyword arguments");
        return NULL;
    }
    PyObject *t = PySequence_Tuple(items);
    if (t == NULL)
        return NULL;
    if (PyTuple_GET_SIZE(t) != 5) {
        PyErr_Format(PyExc_TypeError, "a record has 5 fields, not %zd", PyTuple_GET_SIZE(t));
        Py_DECREF(t);
        return NULL;
    }
    PyObject *rec = type->tp_alloc(type, 5);
    if (rec != NULL)
        for (Py_ssize_t i = 0; i < 5; i++)
            PyTuple_SET_ITEM(rec, i, Py_NewRef(PyTuple_GET_ITEM(t, i)));
    Py_DECREF(t);
    return rec;
}

static PyTypeObject RecordBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kwire.records._speedups.RecordBase",
    .tp_basicsize = sizeof(PyTupleObject) - sizeof(PyObject *),
    .tp_itemsize = sizeof(PyObject *),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "RecordBase(items): a 5-tuple (offset, timestamp, key, value, headers) with named fields",
    .tp_members = record_members,
    .tp_new = record_base_new,
};

static PyMethodDef methods[] = {
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(data, count, base_offset, base_timestamp, fixed_timestamp, record_type) -> list"},
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(records: list[(offset_delta, timestamp, key, value, headers)], base_timestamp) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kwire.records._speedups", "C twin of the v2 record loops.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    DecodeFailure = PyErr_NewException("kwire.records._speedups.DecodeFailure", PyExc_ValueError, NULL);
    RecordBaseType.tp_base = &PyTuple_Type; /* not a constant expression in a static initialiser */
    if (DecodeFailure == NULL || PyModule_AddObjectRef(m, "DecodeFailure", DecodeFailure) < 0 ||
        PyType_Ready(&RecordIteratorType) < 0 ||
        PyType_Ready(&RecordBaseType) < 0 ||
        PyModule_AddObjectRef(m, "RecordBase", (PyObject *)&RecordBaseType) < 0 ||
        PyModule_AddObjectRef(m, "RecordIterator", (PyObject *)&RecordIteratorType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
