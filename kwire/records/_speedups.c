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
#include <stdint.h>
#include <string.h>

static PyObject *DecodeFailure;

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
    if (!PyType_IsSubtype(rtype, &PyTuple_Type) || rtype->tp_basicsize != PyTuple_Type.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "record type must be a tuple subclass with empty __slots__");
        goto done;
    }
    if (fixed != Py_None && !PyLong_Check(fixed)) {
        PyErr_SetString(PyExc_TypeError, "fixed timestamp must be an int or None");
        goto done;
    }
    const uint8_t *p = (const uint8_t *)view.buf;
    Py_ssize_t end = view.len, pos = 0;
    /* every record takes at least 7 bytes: refuse a lying count before allocating for it */
    if (count < 0 || count > end / 7) {
        failf(0, "record count %zd exceeds what %zd bytes of records can hold", count, end);
        goto done;
    }
    list = PyList_New(count);
    if (list == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *key = NULL, *value = NULL, *headers = NULL, *offset = NULL, *ts = NULL, *rec;
        int64_t length = 0, ts_delta = 0, od = 0, hcount = 0;
        if (pos >= end) {
            failf(pos, "record count says more records than the data holds");
            goto fail;
        }
        if (read_varint(p, &pos, end, 5, &length) < 0)
            goto fail;
        if (length < 6 || length > end - pos) {
            failf(pos, "record length %lld is impossible here", (long long)length);
            goto fail;
        }
        Py_ssize_t rec_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes: unused */
        if (read_varint(p, &pos, rec_end, 10, &ts_delta) < 0 || read_varint(p, &pos, rec_end, 5, &od) < 0)
            goto fail;
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
            PyObject *hk = PyUnicode_DecodeUTF8((const char *)p + pos, (Py_ssize_t)n, "strict");
            if (hk == NULL) {
                PyErr_Clear();
                failf(pos, "header key is not valid UTF-8");
                goto fail;
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
            PyList_SET_ITEM(headers, h, pair);
        }
        if (pos != rec_end) {
            failf(pos, "record length %lld disagrees with its fields", (long long)length);
            goto fail;
        }
        if ((offset = add_i64(base_offset, od)) == NULL)
            goto fail;
        if (fixed != Py_None) {
            Py_INCREF(fixed);
            ts = fixed;
        }
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
        PyList_SET_ITEM(list, i, rec);
        continue;
    fail:
        Py_XDECREF(key);
        Py_XDECREF(value);
        Py_XDECREF(headers);
        Py_XDECREF(offset);
        Py_XDECREF(ts);
        Py_CLEAR(list);
        goto done;
    }
    if (pos != end) {
        failf(pos, "%zd bytes left after the last of %zd records", end - pos, count);
        Py_CLEAR(list);
    }
done:
    PyBuffer_Release(&view);
    return list;
}

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
    if (DecodeFailure == NULL || PyModule_AddObjectRef(m, "DecodeFailure", DecodeFailure) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
