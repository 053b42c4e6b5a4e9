/* C decoder for the generated protocol messages (kwire/protocol/messages, kwire/protocol/data).
 *
 * tools/gen_protocol.py writes, next to each module's Python decoders, the same layouts as data:
 *   _CTYPES     struct classes, by name
 *   _CDEFAULTS  per class, how each slot's default is made: (CONST, index in _CCONSTS),
 *               (LIST, 0) a new empty list, or (STRUCT, class) a new default instance
 *   _CPROGS     per (struct, version): (class, flexible, op count, ops..., tag count,
 *               (tag, op)...), each op five ints (code, slot, flags, element code, program)
 * Program() checks those tables and compiles them once per module; Decoder(program, index,
 * fallback) is a callable with the signature of a generated decoder: fn(buf, pos) -> (obj, end).
 *
 * Objects are the generated dataclasses, built without __init__: tp_alloc, then every __slots__
 * member is stored at its offset (read once from the member descriptors), and slots the input
 * did not fill (fields absent in the version, tags not sent) take the class defaults.
 *
 * Failures: this module never builds an error. When the input is bad, or is a buffer type it
 * does not take, the Python decoder (the reference) runs on the same arguments and raises the
 * exact DecodeError, or decodes. Every length and count is checked against the bytes left
 * before anything is allocated, and nesting is bounded by MAX_DEPTH.
 * Built optionally (pyproject ext-modules, optional = true); KWIRE_NO_EXTENSIONS=1 disables it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define KW_T_OBJECT_EX T_OBJECT_EX
#define KW_READONLY READONLY
#else
#define KW_T_OBJECT_EX Py_T_OBJECT_EX
#define KW_READONLY Py_READONLY
#endif

/* Kafka's schemas nest a few levels; this only stops hostile tables. */
#define MAX_DEPTH 64

/* Op codes and flags: the numbers tools/gen_protocol.py writes (C_KINDS, C_ARRAY, ...). */
enum {
    K_I8 = 1, K_I16, K_I32, K_I64, K_U16, K_U32, K_F64, K_BOOL, K_UUID,
    K_STRING, K_BYTES, K_RECORDS, K_STRUCT, K_ARRAY
};
enum { F_COMPACT = 1, F_NULLABLE = 2 };
enum { D_CONST = 0, D_LIST = 1, D_STRUCT = 2 };
enum { B_BYTES, B_BYTEARRAY, B_MEMORYVIEW };

static const Py_ssize_t FIXED_SIZE[] = {0, 1, 2, 4, 8, 2, 4, 8, 1, 16};

typedef struct {
    uint8_t code, flags, elem;
    int32_t slot, arg;
} Op;

typedef struct {
    uint64_t tag;
    Op op;
} TagOp;

typedef struct {
    int32_t type, nops, ntags;
    int flexible;
    Op *ops;
    TagOp *tags;
} Prog;

typedef struct {
    PyTypeObject *type; /* borrowed from ProgramObject.types */
    int32_t nslots;     /* the last slot is unknown_tagged_fields */
    Py_ssize_t *offsets;
    uint8_t *dkind;
    int32_t *darg;
} TypeInfo;

typedef struct {
    PyObject_HEAD
    PyObject *types;  /* tuple of classes */
    PyObject *consts; /* tuple of default values */
    int32_t ntypes, nprogs;
    TypeInfo *ti;
    Prog *progs;
    void *mem; /* one block holding every array above */
} ProgramObject;

typedef struct {
    PyObject_HEAD
    ProgramObject *program;
    PyObject *fallback;
    int32_t index;
    vectorcallfunc vectorcall;
} DecoderObject;

typedef struct {
    const uint8_t *p;
    Py_ssize_t len;
    PyObject *buf;
    int kind;
    ProgramObject *prog;
} Ctx;

static PyTypeObject Program_Type;

/* uuid.UUID internals: built as kwire.protocol.primitives.make_uuid does, without __init__ */
static PyTypeObject *uuid_type;
static Py_ssize_t uuid_int_off, uuid_safe_off;
static PyObject *uuid_safe_unknown;

/* how often each path ran (stats()); a mismatch is a C failure the Python decoder did not share */
static unsigned long long n_decoded, n_failed, n_declined, n_mismatch;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static inline void
set_slot(PyObject *obj, Py_ssize_t off, PyObject *value)
{
    PyObject *old = SLOT(obj, off);
    SLOT(obj, off) = value;
    Py_XDECREF(old); /* a known tag sent twice: the last one wins, as in Python */
}

static inline uint16_t
be16(const uint8_t *p)
{
    return (uint16_t)(((unsigned)p[0] << 8) | p[1]);
}

static inline uint32_t
be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t
be64(const uint8_t *p)
{
    return ((uint64_t)be32(p) << 32) | be32(p + 4);
}

static PyObject *
make_uuid(const uint8_t *p)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *i = PyLong_FromUnsignedNativeBytes(p, 16, Py_ASNATIVEBYTES_BIG_ENDIAN);
#else
    PyObject *i = _PyLong_FromByteArray(p, 16, 0, 0);
#endif
    if (i == NULL)
        return NULL;
    PyObject *u = uuid_type->tp_alloc(uuid_type, 0);
    if (u == NULL) {
        Py_DECREF(i);
        return NULL;
    }
    SLOT(u, uuid_int_off) = i;
    SLOT(u, uuid_safe_off) = Py_NewRef(uuid_safe_unknown);
    return u;
}

/* An unsigned varint of at most 5 bytes (35 bits, as primitives.read_uvarint_cont reads it). */
static inline int
read_uvarint(Ctx *c, Py_ssize_t *pos, uint64_t *out)
{
    Py_ssize_t i = *pos;
    if (i >= c->len)
        return -1;
    uint8_t b = c->p[i++];
    if (b < 0x80) {
        *out = b;
        *pos = i;
        return 0;
    }
    uint64_t v = b & 0x7f;
    int shift = 7;
    for (;;) {
        if (i >= c->len)
            return -1;
        b = c->p[i++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80)
            break;
        shift += 7;
        if (shift >= 35)
            return -1;
    }
    *out = v;
    *pos = i;
    return 0;
}

/* A length or count: compact uvarint(n + 1), else a signed int16/int32; -1 means null. */
static inline int
read_len(Ctx *c, Py_ssize_t *pos, int compact, int width, int64_t *n)
{
    if (compact) {
        uint64_t u;
        if (read_uvarint(c, pos, &u) < 0)
            return -1;
        *n = (int64_t)u - 1;
        return 0;
    }
    Py_ssize_t i = *pos;
    if (c->len - i < width)
        return -1;
    *n = width == 2 ? (int16_t)be16(c->p + i) : (int32_t)be32(c->p + i);
    *pos = i + width;
    return 0;
}

static PyObject *
read_fixed(Ctx *c, int kind, Py_ssize_t *pos)
{
    Py_ssize_t i = *pos;
    if (c->len - i < FIXED_SIZE[kind])
        return NULL;
    const uint8_t *p = c->p + i;
    *pos = i + FIXED_SIZE[kind];
    switch (kind) {
    case K_I8:
        return PyLong_FromLong((int8_t)p[0]);
    case K_I16:
        return PyLong_FromLong((int16_t)be16(p));
    case K_I32:
        return PyLong_FromLong((int32_t)be32(p));
    case K_I64:
        return PyLong_FromLongLong((int64_t)be64(p));
    case K_U16:
        return PyLong_FromLong(be16(p));
    case K_U32:
        return PyLong_FromUnsignedLong(be32(p));
    case K_F64: {
        uint64_t u = be64(p);
        double d;
        memcpy(&d, &u, sizeof d);
        return PyFloat_FromDouble(d);
    }
    case K_BOOL:
        return PyBool_FromLong(p[0] != 0);
    default:
        return make_uuid(p);
    }
}

/* string, bytes or records. A field maps -1 to None only where nullable; an array element never
 * does (Kafka refuses a null element), and its records are bytes, not slices. */
static PyObject *
read_blob(Ctx *c, Py_ssize_t *pos, int kind, int compact, int nullable, int element)
{
    int64_t n;
    if (read_len(c, pos, compact, kind == K_STRING ? 2 : 4, &n) < 0)
        return NULL;
    if (n < 0) {
        if (n == -1 && nullable)
            Py_RETURN_NONE;
        return NULL;
    }
    Py_ssize_t i = *pos;
    if (n > c->len - i)
        return NULL;
    const char *s = (const char *)c->p + i;
    PyObject *r;
    if (kind == K_STRING)
        r = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, NULL);
    else if (kind == K_BYTES || element || c->kind == B_BYTES)
        r = PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
    else if (c->kind == B_BYTEARRAY) /* records are buf[pos:end]: the input's own type */
        r = PyByteArray_FromStringAndSize(s, (Py_ssize_t)n);
    else
        r = PySequence_GetSlice(c->buf, i, i + (Py_ssize_t)n);
    if (r != NULL)
        *pos = i + (Py_ssize_t)n;
    return r;
}

static PyObject *decode_struct(Ctx *c, int32_t pi, Py_ssize_t *pos, int depth);
static int fill_defaults(ProgramObject *P, const TypeInfo *t, PyObject *obj, int depth);

static PyObject *
read_array(Ctx *c, const Op *op, Py_ssize_t *pos, int depth)
{
    int64_t n;
    if (read_len(c, pos, op->flags & F_COMPACT, 4, &n) < 0)
        return NULL;
    if (n < 0) {
        if (n == -1 && (op->flags & F_NULLABLE))
            Py_RETURN_NONE;
        return NULL;
    }
    if (n > c->len - *pos) /* every element takes a byte or more, as the Python decoder assumes */
        return NULL;
    int elem = op->elem;
    if (elem <= K_BOOL && n * FIXED_SIZE[elem] > c->len - *pos)
        return NULL;
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < (Py_ssize_t)n; k++) {
        PyObject *item;
        if (elem == K_STRUCT)
            item = decode_struct(c, op->arg, pos, depth + 1);
        else if (elem <= K_UUID)
            item = read_fixed(c, elem, pos);
        else
            item = read_blob(c, pos, elem, op->flags & F_COMPACT, 0, 1);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, item);
    }
    return list;
}

static PyObject *
read_op(Ctx *c, const Op *op, Py_ssize_t *pos, int depth)
{
    switch (op->code) {
    case K_STRING:
    case K_BYTES:
    case K_RECORDS:
        return read_blob(c, pos, op->code, op->flags & F_COMPACT, op->flags & F_NULLABLE, 0);
    case K_STRUCT:
        if (op->flags & F_NULLABLE) { /* an int8 marker: negative is null */
            if (*pos >= c->len)
                return NULL;
            if ((int8_t)c->p[(*pos)++] < 0)
                Py_RETURN_NONE;
        }
        return decode_struct(c, op->arg, pos, depth + 1);
    case K_ARRAY:
        return read_array(c, op, pos, depth);
    default:
        return read_fixed(c, op->code, pos);
    }
}

static const TagOp *
find_tag(const Prog *pr, uint64_t tag)
{
    for (int32_t k = 0; k < pr->ntags; k++)
        if (pr->tags[k].tag == tag)
            return &pr->tags[k];
    return NULL;
}

/* The tagged-field section: known tags into their slots, the others kept as [(tag, bytes)]. */
static int
read_tags(Ctx *c, const Prog *pr, const TypeInfo *t, PyObject *obj, Py_ssize_t *pos, int depth)
{
    if (pr->ntags == 0) { /* the common case: a zero count byte */
        if (*pos >= c->len)
            return -1;
        if (c->p[*pos] == 0) {
            (*pos)++;
            return 0;
        }
    }
    uint64_t nt;
    if (read_uvarint(c, pos, &nt) < 0 || (int64_t)nt > c->len - *pos)
        return -1;
    PyObject *unknown = NULL;
    for (uint64_t k = 0; k < nt; k++) {
        uint64_t tag, size;
        if (read_uvarint(c, pos, &tag) < 0 || read_uvarint(c, pos, &size) < 0 ||
            (int64_t)size > c->len - *pos)
            goto fail;
        Py_ssize_t tend = *pos + (Py_ssize_t)size;
        const TagOp *to = find_tag(pr, tag);
        if (to != NULL) {
            PyObject *v = read_op(c, &to->op, pos, depth);
            if (v == NULL)
                goto fail;
            set_slot(obj, t->offsets[to->op.slot], v);
            if (*pos != tend)
                goto fail;
        }
        else {
            if (unknown == NULL && (unknown = PyList_New(0)) == NULL)
                goto fail;
            PyObject *pair = Py_BuildValue("(Ky#)", (unsigned long long)tag, (const char *)c->p + *pos,
                                           (Py_ssize_t)size);
            if (pair == NULL)
                goto fail;
            int rc = PyList_Append(unknown, pair);
            Py_DECREF(pair);
            if (rc < 0)
                goto fail;
        }
        *pos = tend;
    }
    if (unknown != NULL)
        set_slot(obj, t->offsets[t->nslots - 1], unknown);
    return 0;
fail:
    Py_XDECREF(unknown);
    return -1;
}

static PyObject *
new_default(ProgramObject *P, int32_t ti, int depth)
{
    if (depth > MAX_DEPTH)
        return NULL;
    const TypeInfo *t = &P->ti[ti];
    PyObject *obj = t->type->tp_alloc(t->type, 0);
    if (obj == NULL)
        return NULL;
    if (fill_defaults(P, t, obj, depth) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

/* Every slot still empty takes the class default: a shared constant, or a new list or struct. */
static int
fill_defaults(ProgramObject *P, const TypeInfo *t, PyObject *obj, int depth)
{
    for (int32_t s = 0; s < t->nslots; s++) {
        PyObject **addr = &SLOT(obj, t->offsets[s]);
        if (*addr != NULL)
            continue;
        PyObject *v;
        switch (t->dkind[s]) {
        case D_CONST:
            v = Py_NewRef(PyTuple_GET_ITEM(P->consts, t->darg[s]));
            break;
        case D_LIST:
            v = PyList_New(0);
            break;
        default:
            v = new_default(P, t->darg[s], depth + 1);
        }
        if (v == NULL)
            return -1;
        *addr = v;
    }
    return 0;
}

static PyObject *
decode_struct(Ctx *c, int32_t pi, Py_ssize_t *pos, int depth)
{
    if (depth > MAX_DEPTH)
        return NULL;
    const Prog *pr = &c->prog->progs[pi];
    const TypeInfo *t = &c->prog->ti[pr->type];
    PyObject *obj = t->type->tp_alloc(t->type, 0);
    if (obj == NULL)
        return NULL;
    for (int32_t k = 0; k < pr->nops; k++) {
        const Op *op = &pr->ops[k];
        PyObject *v = read_op(c, op, pos, depth);
        if (v == NULL)
            goto fail;
        set_slot(obj, t->offsets[op->slot], v);
    }
    if (pr->flexible && read_tags(c, pr, t, obj, pos, depth) < 0)
        goto fail;
    if (fill_defaults(c->prog, t, obj, depth) < 0)
        goto fail;
    return obj;
fail:
    Py_DECREF(obj);
    return NULL;
}

/* ---- Decoder ------------------------------------------------------------------------------- */

/* NULL: not decoded here (*tried says whether the input was attempted); exceptions may be set. */
static PyObject *
try_decode(DecoderObject *self, PyObject *buf, PyObject *posobj, int *tried)
{
    Ctx c;
    Py_buffer view;
    int have_view = 0;
    PyObject *result = NULL;

    /* cleared by the collector (only while its cycle is being torn down) */
    if (self->program == NULL || self->program->progs == NULL)
        return NULL;
    if (!PyLong_CheckExact(posobj))
        return NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(posobj);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    c.buf = buf;
    c.prog = self->program;
    if (PyBytes_CheckExact(buf)) {
        c.p = (const uint8_t *)PyBytes_AS_STRING(buf);
        c.len = PyBytes_GET_SIZE(buf);
        c.kind = B_BYTES;
    }
    else if (PyByteArray_CheckExact(buf) || PyMemoryView_Check(buf)) {
        /* The export pins the memory: a bytearray cannot be resized, nor a memoryview released,
         * by code that a garbage collection might run while we decode. */
        if (PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE) < 0)
            return NULL;
        have_view = 1;
        if (PyMemoryView_Check(buf)) {
            /* Only a flat view of unsigned bytes indexes as the Python decoder expects (read
             * after the export above, which fails on a released view). */
            const Py_buffer *mv = PyMemoryView_GET_BUFFER(buf);
            if (mv->ndim != 1 || mv->itemsize != 1 || (mv->format != NULL && strcmp(mv->format, "B") != 0))
                goto done;
            c.kind = B_MEMORYVIEW;
        }
        else
            c.kind = B_BYTEARRAY;
        c.p = (const uint8_t *)view.buf;
        c.len = view.len;
    }
    else
        return NULL;
    if (pos < 0 || pos > c.len)
        goto done;
    *tried = 1;
    /* No collection while the tree is half built: it would scan the new objects and promote
     * them to older generations, the cost that dominated decoding (2 of 3 of the time for a
     * 500-partition MetadataResponse). Nothing here runs Python code, so no one sees the pause;
     * the allocations still count towards the next collection. */
    int gc_was_enabled = PyGC_Disable();
    PyObject *obj = decode_struct(&c, self->index, &pos, 0);
    if (gc_was_enabled)
        PyGC_Enable();
    if (obj == NULL)
        goto done;
    PyObject *end = PyLong_FromSsize_t(pos);
    if (end == NULL) {
        Py_DECREF(obj);
        goto done;
    }
    result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(obj);
        Py_DECREF(end);
        goto done;
    }
    PyTuple_SET_ITEM(result, 0, obj);
    PyTuple_SET_ITEM(result, 1, end);
done:
    if (have_view)
        PyBuffer_Release(&view);
    return result;
}

static PyObject *
decoder_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    DecoderObject *self = (DecoderObject *)self_;
    int tried = 0;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        PyObject *r = try_decode(self, args[0], args[1], &tried);
        if (r != NULL) {
            n_decoded++;
            return r;
        }
        if (PyErr_Occurred())
            PyErr_Clear();
    }
    /* The Python decoder gives the exact DecodeError (or decodes what this module declined). */
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "decoder was cleared");
        return NULL;
    }
    PyObject *r = PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    if (!tried)
        n_declined++;
    else if (r == NULL)
        n_failed++;
    else
        n_mismatch++;
    return r;
}

static PyObject *
decoder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"program", "index", "fallback", NULL};
    PyObject *program, *fallback;
    Py_ssize_t index;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!nO:Decoder", kwlist, &Program_Type, &program, &index,
                                     &fallback))
        return NULL;
    if (index < 0 || index >= ((ProgramObject *)program)->nprogs) {
        PyErr_SetString(PyExc_ValueError, "program index out of range");
        return NULL;
    }
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable");
        return NULL;
    }
    DecoderObject *self = (DecoderObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->program = (ProgramObject *)Py_NewRef(program);
    self->fallback = Py_NewRef(fallback);
    self->index = (int32_t)index;
    self->vectorcall = decoder_vectorcall;
    return (PyObject *)self;
}

static int
decoder_traverse(DecoderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->program);
    Py_VISIT(self->fallback);
    return 0;
}

static int
decoder_clear(DecoderObject *self)
{
    Py_CLEAR(self->program);
    Py_CLEAR(self->fallback);
    return 0;
}

static void
decoder_dealloc(DecoderObject *self)
{
    PyObject_GC_UnTrack(self);
    decoder_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef decoder_members[] = {
    {"fallback", KW_T_OBJECT_EX, offsetof(DecoderObject, fallback), KW_READONLY,
     "the Python decoder that runs when this one does not decode"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject Decoder_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kwire.protocol._cdecode.Decoder",
    .tp_doc = "Decoder(program, index, fallback): fn(buf, pos) -> (message, end), as the generated one.",
    .tp_basicsize = sizeof(DecoderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(DecoderObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = decoder_new,
    .tp_traverse = (traverseproc)decoder_traverse,
    .tp_clear = (inquiry)decoder_clear,
    .tp_dealloc = (destructor)decoder_dealloc,
    .tp_members = decoder_members,
};

/* ---- Program: the checked, compiled tables of one module ----------------------------------- */

/* Offset of the object slot ``name`` that ``tp`` itself defines (a __slots__ member). */
static int
slot_offset(PyTypeObject *tp, PyObject *name, Py_ssize_t *out)
{
    PyObject *d = PyObject_GetAttr((PyObject *)tp, name);
    if (d == NULL)
        return -1;
    int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && PyDescr_TYPE(d) == tp;
    if (ok) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        ok = m->type == KW_T_OBJECT_EX && !(m->flags & KW_READONLY) &&
             m->offset >= (Py_ssize_t)sizeof(PyObject) &&
             m->offset <= tp->tp_basicsize - (Py_ssize_t)sizeof(PyObject *);
        *out = m->offset;
    }
    Py_DECREF(d);
    if (!ok)
        PyErr_Format(PyExc_TypeError, "%s.%U is not an object slot", tp->tp_name, name);
    return ok ? 0 : -1;
}

static int
int_at(PyObject *tuple, Py_ssize_t i, long lo, long hi, long *out)
{
    if (i >= PyTuple_GET_SIZE(tuple)) {
        PyErr_SetString(PyExc_ValueError, "decode table ends early");
        return -1;
    }
    long v = PyLong_AsLong(PyTuple_GET_ITEM(tuple, i));
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "decode table value %ld out of range [%ld, %ld]", v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* One op of a program (five ints from ``*i``), checked against its class and the program count. */
static int
parse_op(PyObject *t, Py_ssize_t *i, const TypeInfo *ti, int32_t nprogs, Op *op)
{
    long code, slot, flags, elem, arg;
    if (int_at(t, (*i)++, K_I8, K_ARRAY, &code) < 0 || int_at(t, (*i)++, 0, ti->nslots - 2, &slot) < 0 ||
        int_at(t, (*i)++, 0, F_COMPACT | F_NULLABLE, &flags) < 0 || int_at(t, (*i)++, 0, K_STRUCT, &elem) < 0 ||
        int_at(t, (*i)++, 0, nprogs - 1, &arg) < 0)
        return -1;
    if ((code == K_ARRAY) != (elem != 0)) {
        PyErr_SetString(PyExc_ValueError, "decode table: element code only on arrays");
        return -1;
    }
    op->code = (uint8_t)code;
    op->slot = (int32_t)slot;
    op->flags = (uint8_t)flags;
    op->elem = (uint8_t)elem;
    op->arg = (int32_t)arg;
    return 0;
}

/* Struct references must form no cycle (the generator's never do): a hostile table could
 * otherwise make decoding or defaults recurse without consuming input. 0 new, 1 open, 2 done. */
static int
acyclic_prog(const ProgramObject *self, int32_t k, uint8_t *color)
{
    if (color[k] != 0)
        return color[k] == 2 ? 0 : -1;
    color[k] = 1;
    const Prog *pr = &self->progs[k];
    for (int32_t j = 0; j < pr->nops + pr->ntags; j++) {
        const Op *op = j < pr->nops ? &pr->ops[j] : &pr->tags[j - pr->nops].op;
        if ((op->code == K_STRUCT || (op->code == K_ARRAY && op->elem == K_STRUCT)) &&
            acyclic_prog(self, op->arg, color) < 0)
            return -1;
    }
    color[k] = 2;
    return 0;
}

static int
acyclic_type(const ProgramObject *self, int32_t k, uint8_t *color)
{
    if (color[k] != 0)
        return color[k] == 2 ? 0 : -1;
    color[k] = 1;
    const TypeInfo *t = &self->ti[k];
    for (int32_t s = 0; s < t->nslots; s++)
        if (t->dkind[s] == D_STRUCT && acyclic_type(self, t->darg[s], color) < 0)
            return -1;
    color[k] = 2;
    return 0;
}

static int
check_acyclic(const ProgramObject *self)
{
    uint8_t *color = PyMem_Calloc((size_t)self->nprogs + (size_t)self->ntypes, 1);
    if (color == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = 0;
    for (int32_t k = 0; k < self->nprogs && rc == 0; k++)
        rc = acyclic_prog(self, k, color);
    for (int32_t k = 0; k < self->ntypes && rc == 0; k++)
        rc = acyclic_type(self, k, color + self->nprogs);
    PyMem_Free(color);
    if (rc < 0)
        PyErr_SetString(PyExc_ValueError, "decode table: structs refer to themselves");
    return rc;
}

static void
program_free_tables(ProgramObject *self)
{
    PyMem_Free(self->mem);
    self->mem = NULL;
    self->ti = NULL;
    self->progs = NULL;
}

static int
program_build(ProgramObject *self, PyObject *types, PyObject *slots, PyObject *defaults, PyObject *progs)
{
    Py_ssize_t ntypes = PyTuple_GET_SIZE(types), nprogs = PyTuple_GET_SIZE(progs);
    Py_ssize_t nconsts = PyTuple_GET_SIZE(self->consts);
    if (PyTuple_GET_SIZE(slots) != ntypes || PyTuple_GET_SIZE(defaults) != ntypes || ntypes > INT32_MAX ||
        nprogs > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "decode tables of mismatched sizes");
        return -1;
    }
    /* size the single block: types, their slot arrays, programs, their ops */
    /* an upper bound: every TAKE below pads to 8 bytes at most */
    size_t total = sizeof(TypeInfo) * (size_t)ntypes + sizeof(Prog) * (size_t)nprogs + 32;
    for (Py_ssize_t k = 0; k < ntypes; k++) {
        PyObject *names = PyTuple_GET_ITEM(slots, k);
        if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) < 1 || PyTuple_GET_SIZE(names) > INT32_MAX) {
            PyErr_SetString(PyExc_TypeError, "slot names must be non-empty tuples");
            return -1;
        }
        total += (sizeof(Py_ssize_t) + sizeof(int32_t) + 1) * (size_t)PyTuple_GET_SIZE(names) + 32;
    }
    for (Py_ssize_t k = 0; k < nprogs; k++) {
        PyObject *p = PyTuple_GET_ITEM(progs, k);
        if (!PyTuple_Check(p)) {
            PyErr_SetString(PyExc_TypeError, "programs must be tuples");
            return -1;
        }
        total += (sizeof(Op) + sizeof(TagOp)) * (size_t)PyTuple_GET_SIZE(p) / 5 + 32;
    }
    char *mem = PyMem_Calloc(1, total);
    if (mem == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->mem = mem;
    char *cur = mem;
#define TAKE(ptr, count)                                                              \
    do {                                                                              \
        size_t need_ = ((8 - ((uintptr_t)cur & 7)) & 7) + sizeof(*(ptr)) * (size_t)(count); \
        if (need_ > total - (size_t)(cur - mem)) {                                    \
            PyErr_SetString(PyExc_SystemError, "decode table sizing");                \
            return -1;                                                                \
        }                                                                             \
        cur += need_ - sizeof(*(ptr)) * (size_t)(count);                              \
        (ptr) = (void *)cur;                                                          \
        cur += sizeof(*(ptr)) * (size_t)(count);                                      \
    } while (0)
    TAKE(self->ti, ntypes);
    TAKE(self->progs, nprogs);
    self->ntypes = (int32_t)ntypes;
    self->nprogs = (int32_t)nprogs;
    for (Py_ssize_t k = 0; k < ntypes; k++) {
        TypeInfo *ti = &self->ti[k];
        PyObject *tp = PyTuple_GET_ITEM(types, k), *names = PyTuple_GET_ITEM(slots, k);
        PyObject *dflt = PyTuple_GET_ITEM(defaults, k);
        Py_ssize_t n = PyTuple_GET_SIZE(names);
        if (!PyType_Check(tp)) {
            PyErr_SetString(PyExc_TypeError, "types must be classes");
            return -1;
        }
        PyTypeObject *type = (PyTypeObject *)tp;
        /* Exactly the named slots and nothing else (no __dict__, no __weakref__), made by
         * object.__new__: then filling every slot makes a complete instance. */
        if (type->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + sizeof(PyObject *) * (size_t)n) ||
            type->tp_itemsize != 0 || type->tp_dictoffset != 0 || type->tp_weaklistoffset != 0 ||
            type->tp_new != PyBaseObject_Type.tp_new || type->tp_alloc == NULL) {
            PyErr_Format(PyExc_TypeError, "%s does not have the slotted layout the decoder fills", type->tp_name);
            return -1;
        }
        if (!PyTuple_Check(dflt) || PyTuple_GET_SIZE(dflt) != 2 * n) {
            PyErr_SetString(PyExc_ValueError, "defaults must be (how, arg) per slot");
            return -1;
        }
        ti->type = type;
        ti->nslots = (int32_t)n;
        TAKE(ti->offsets, n);
        TAKE(ti->darg, n);
        TAKE(ti->dkind, n);
        for (Py_ssize_t s = 0; s < n; s++) {
            PyObject *name = PyTuple_GET_ITEM(names, s);
            if (!PyUnicode_Check(name)) {
                PyErr_SetString(PyExc_TypeError, "slot names must be str");
                return -1;
            }
            if (slot_offset(type, name, &ti->offsets[s]) < 0)
                return -1;
            for (Py_ssize_t r = 0; r < s; r++)
                if (ti->offsets[r] == ti->offsets[s]) {
                    PyErr_SetString(PyExc_ValueError, "slot named twice");
                    return -1;
                }
            long how, arg;
            if (int_at(dflt, 2 * s, D_CONST, D_STRUCT, &how) < 0)
                return -1;
            long hi = how == D_CONST ? (long)nconsts - 1 : how == D_STRUCT ? (long)ntypes - 1 : 0;
            if (int_at(dflt, 2 * s + 1, 0, hi, &arg) < 0)
                return -1;
            ti->dkind[s] = (uint8_t)how;
            ti->darg[s] = (int32_t)arg;
        }
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(names, n - 1), "unknown_tagged_fields") != 0) {
            PyErr_SetString(PyExc_ValueError, "the last slot must be unknown_tagged_fields");
            return -1;
        }
    }
    for (Py_ssize_t k = 0; k < nprogs; k++) {
        Prog *pr = &self->progs[k];
        PyObject *t = PyTuple_GET_ITEM(progs, k);
        Py_ssize_t i = 0;
        long type, flexible, nops, ntags;
        if (int_at(t, i++, 0, ntypes - 1, &type) < 0 || int_at(t, i++, 0, 1, &flexible) < 0 ||
            int_at(t, i++, 0, PyTuple_GET_SIZE(t) / 5, &nops) < 0)
            return -1;
        const TypeInfo *ti = &self->ti[type];
        pr->type = (int32_t)type;
        pr->flexible = (int)flexible;
        pr->nops = (int32_t)nops;
        TAKE(pr->ops, nops);
        for (long j = 0; j < nops; j++)
            if (parse_op(t, &i, ti, (int32_t)nprogs, &pr->ops[j]) < 0)
                return -1;
        if (int_at(t, i++, 0, flexible ? PyTuple_GET_SIZE(t) / 6 : 0, &ntags) < 0)
            return -1;
        pr->ntags = (int32_t)ntags;
        TAKE(pr->tags, ntags);
        for (long j = 0; j < ntags; j++) {
            long tag;
            if (int_at(t, i++, 0, INT32_MAX, &tag) < 0 || parse_op(t, &i, ti, (int32_t)nprogs, &pr->tags[j].op) < 0)
                return -1;
            pr->tags[j].tag = (uint64_t)tag;
        }
        if (i != PyTuple_GET_SIZE(t)) {
            PyErr_SetString(PyExc_ValueError, "decode table: trailing values in a program");
            return -1;
        }
    }
#undef TAKE
    return check_acyclic(self);
}

static PyObject *
program_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"types", "slots", "defaults", "consts", "progs", NULL};
    PyObject *types, *slots, *defaults, *consts, *progs;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!O!O!:Program", kwlist, &PyTuple_Type, &types,
                                     &PyTuple_Type, &slots, &PyTuple_Type, &defaults, &PyTuple_Type, &consts,
                                     &PyTuple_Type, &progs))
        return NULL;
    ProgramObject *self = (ProgramObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->types = Py_NewRef(types);
    self->consts = Py_NewRef(consts);
    if (program_build(self, types, slots, defaults, progs) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
program_traverse(ProgramObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->types);
    Py_VISIT(self->consts);
    return 0;
}

static int
program_clear(ProgramObject *self)
{
    /* The tables borrow the classes; drop them together. */
    program_free_tables(self);
    self->ntypes = self->nprogs = 0;
    Py_CLEAR(self->types);
    Py_CLEAR(self->consts);
    return 0;
}

static void
program_dealloc(ProgramObject *self)
{
    PyObject_GC_UnTrack(self);
    program_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject Program_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kwire.protocol._cdecode.Program",
    .tp_doc = "Program(types, slots, defaults, consts, progs): one module's decode tables, checked.",
    .tp_basicsize = sizeof(ProgramObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = program_new,
    .tp_traverse = (traverseproc)program_traverse,
    .tp_clear = (inquiry)program_clear,
    .tp_dealloc = (destructor)program_dealloc,
};

/* ---- module ------------------------------------------------------------------------------- */

static PyObject *
stats(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args))
{
    return Py_BuildValue("{sKsKsKsK}", "decoded", n_decoded, "failed", n_failed, "declined", n_declined,
                         "mismatch", n_mismatch);
}

/* ---- encoding: arrays of flat structs ------------------------------------------------------------ */

/* pack_flat(out, elems, names, layout, flexible) -> bool
 *
 * The one encoding helper here: a list of structs whose fields are all fixed-width integers and
 * arrays of them (MetadataResponsePartition, ...), appended to the bytearray `out` in wire order.
 * `names` holds the attribute of each field; `layout` one token per field: a struct code
 * (b h i q H I) for a number, '[' or '(' then a code for a compact or a classic array of them;
 * `flexible` adds the empty tagged-field section after each element. Returns True when every
 * element was written. Anything it does not take (a value that is not an int or out of range, an
 * array that is not a list or tuple, a compact count above 126, unknown tagged fields) makes it
 * take back what it wrote and return False: the generated Python encoder then writes the array
 * (the same bytes) or raises the exact EncodeError. No Python code runs while it writes. */
#define FLAT_MAX_FIELDS 32
static PyObject *str_unknown_tags;

static int
flat_size(char c)
{
    switch (c) {
    case 'b': return 1;
    case 'h': case 'H': return 2;
    case 'i': case 'I': return 4;
    case 'q': return 8;
    default: return 0;
    }
}

/* 0: *out holds the value; 1: not one this path takes */
static int
flat_int(PyObject *v, char c, int64_t *out)
{
    if (!PyLong_Check(v))
        return 1;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 1;
    }
    switch (c) {
    case 'b': if (x < INT8_MIN || x > INT8_MAX) return 1; break;
    case 'h': if (x < INT16_MIN || x > INT16_MAX) return 1; break;
    case 'i': if (x < INT32_MIN || x > INT32_MAX) return 1; break;
    case 'q': break;
    case 'H': if (x < 0 || x > UINT16_MAX) return 1; break;
    case 'I': if (x < 0 || x > (long long)UINT32_MAX) return 1; break;
    default: return 1;
    }
    *out = x;
    return 0;
}

static inline char *
put_be(char *p, int64_t x, int size)
{
    uint64_t u = (uint64_t)x;
    for (int k = size - 1; k >= 0; k--) {
        p[k] = (char)(u & 0xff);
        u >>= 8;
    }
    return p + size;
}

static PyObject *
pack_flat(PyObject *self, PyObject *args)
{
    PyObject *out, *elems, *names;
    const char *layout;
    Py_ssize_t layout_len;
    int flexible;
    if (!PyArg_ParseTuple(args, "O!OO!s#p:pack_flat", &PyByteArray_Type, &out, &elems, &PyTuple_Type, &names,
                          &layout, &layout_len, &flexible))
        return NULL;
    char kind[FLAT_MAX_FIELDS], code[FLAT_MAX_FIELDS];
    Py_ssize_t nf = 0;
    for (Py_ssize_t i = 0; i < layout_len; i++) {
        if (nf == FLAT_MAX_FIELDS)
            break;
        char k = layout[i];
        if ((k == '[' || k == '(') && i + 1 < layout_len) {
            kind[nf] = k;
            code[nf++] = layout[++i];
        }
        else {
            kind[nf] = 0;
            code[nf++] = k;
        }
    }
    if (nf != PyTuple_GET_SIZE(names) || nf == 0) {
        PyErr_SetString(PyExc_ValueError, "pack_flat: layout and names disagree");
        return NULL;
    }
    for (Py_ssize_t f = 0; f < nf; f++)
        if (flat_size(code[f]) == 0 || !PyUnicode_Check(PyTuple_GET_ITEM(names, f))) {
            PyErr_SetString(PyExc_ValueError, "pack_flat: bad layout");
            return NULL;
        }
    if (!PyList_CheckExact(elems))
        Py_RETURN_FALSE;
    Py_ssize_t start = PyByteArray_GET_SIZE(out);
    PyObject *vals[FLAT_MAX_FIELDS];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(elems); i++) {
        PyObject *e = Py_NewRef(PyList_GET_ITEM(elems, i));
        Py_ssize_t got = 0, size = flexible ? 1 : 0;
        int ok = 1;
        for (; got < nf; got++) {
            vals[got] = PyObject_GetAttr(e, PyTuple_GET_ITEM(names, got));
            if (vals[got] == NULL) {
                PyErr_Clear();
                ok = 0;
                break;
            }
        }
        if (ok) {
            PyObject *u = PyObject_GetAttr(e, str_unknown_tags);
            int has_tags = u == NULL ? -1 : PyObject_IsTrue(u);
            Py_XDECREF(u);
            if (has_tags != 0) {
                PyErr_Clear();
                ok = 0;
            }
        }
        /* validate every value and size the element before writing any of it */
        for (Py_ssize_t f = 0; ok && f < got; f++) {
            int w = flat_size(code[f]);
            int64_t x;
            if (kind[f] == 0) {
                ok = flat_int(vals[f], code[f], &x) == 0;
                size += w;
                continue;
            }
            PyObject *a = vals[f];
            if (!PyList_CheckExact(a) && !PyTuple_CheckExact(a)) {
                ok = 0;
                break;
            }
            Py_ssize_t n = PySequence_Fast_GET_SIZE(a);
            if (kind[f] == '[' && n >= 127) {
                ok = 0;
                break;
            }
            PyObject **items = PySequence_Fast_ITEMS(a);
            for (Py_ssize_t j = 0; ok && j < n; j++)
                ok = flat_int(items[j], code[f], &x) == 0;
            size += (kind[f] == '[' ? 1 : 4) + n * w;
        }
        if (ok) {
            Py_ssize_t cur = PyByteArray_GET_SIZE(out);
            if (PyByteArray_Resize(out, cur + size) < 0) {
                PyErr_Clear();
                ok = 0;
            }
            else {
                char *p = PyByteArray_AS_STRING(out) + cur;
                for (Py_ssize_t f = 0; f < got; f++) {
                    int w = flat_size(code[f]);
                    int64_t x = 0;
                    if (kind[f] == 0) {
                        flat_int(vals[f], code[f], &x);
                        p = put_be(p, x, w);
                        continue;
                    }
                    Py_ssize_t n = PySequence_Fast_GET_SIZE(vals[f]);
                    PyObject **items = PySequence_Fast_ITEMS(vals[f]);
                    if (kind[f] == '[')
                        *p++ = (char)(n + 1);
                    else
                        p = put_be(p, n, 4);
                    for (Py_ssize_t j = 0; j < n; j++) {
                        flat_int(items[j], code[f], &x);
                        p = put_be(p, x, w);
                    }
                }
                if (flexible)
                    *p++ = 0;
            }
        }
        for (Py_ssize_t f = 0; f < got; f++)
            Py_DECREF(vals[f]);
        Py_DECREF(e);
        if (!ok) {
            if (PyByteArray_Resize(out, start) < 0)
                return NULL;
            Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"pack_flat", pack_flat, METH_VARARGS,
     "pack_flat(out, elems, names, layout, flexible) -> bool: an array of flat structs appended to out"},
    {"stats", stats, METH_NOARGS,
     "stats() -> {decoded, failed, declined, mismatch}: calls decoded here; calls the Python decoder "
     "answered after bad input (failed), for input not taken here (declined), or after a failure it "
     "did not share (mismatch: a bug)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kwire.protocol._cdecode", "C decoder for the generated protocol messages.", -1,
    methods, NULL, NULL, NULL, NULL,
};

static int
init_uuid(void)
{
    PyObject *mod = PyImport_ImportModule("uuid");
    if (mod == NULL)
        return -1;
    PyObject *safe = NULL, *name = NULL;
    int rc = -1;
    uuid_type = (PyTypeObject *)PyObject_GetAttrString(mod, "UUID");
    if (uuid_type == NULL || !PyType_Check(uuid_type))
        goto done;
    safe = PyObject_GetAttrString(mod, "SafeUUID");
    if (safe == NULL || (uuid_safe_unknown = PyObject_GetAttrString(safe, "unknown")) == NULL)
        goto done;
    if ((name = PyUnicode_FromString("int")) == NULL || slot_offset(uuid_type, name, &uuid_int_off) < 0)
        goto done;
    Py_SETREF(name, PyUnicode_FromString("is_safe"));
    if (name == NULL || slot_offset(uuid_type, name, &uuid_safe_off) < 0)
        goto done;
    if (uuid_type->tp_new != PyBaseObject_Type.tp_new) {
        PyErr_SetString(PyExc_ImportError, "uuid.UUID has its own __new__");
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(name);
    Py_XDECREF(safe);
    Py_DECREF(mod);
    return rc;
}

PyMODINIT_FUNC
PyInit__cdecode(void)
{
    if (PyType_Ready(&Program_Type) < 0 || PyType_Ready(&Decoder_Type) < 0 || init_uuid() < 0)
        return NULL;
    if (str_unknown_tags == NULL && (str_unknown_tags = PyUnicode_InternFromString("unknown_tagged_fields")) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Program", (PyObject *)&Program_Type) < 0 ||
        PyModule_AddObjectRef(m, "Decoder", (PyObject *)&Decoder_Type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
