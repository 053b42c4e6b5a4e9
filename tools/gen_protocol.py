"""Generate kwire's protocol codec from ``schemas/``.

Usage:
  python tools/gen_protocol.py           rewrite kwire/protocol/messages/, data/ and error_codes.py
  python tools/gen_protocol.py --check   exit 1 if the committed output differs from a fresh generation

Every (schema, version) gets its own decode and encode function, written out as plain
Python: adjacent fixed-width fields are merged into one precompiled ``struct.Struct``,
lengths are checked before anything is allocated, and nothing is interpreted per field at
run time. Versions whose layout is identical share one function.

The same decode layouts are also written as data (``_CTYPES``, ``_CDEFAULTS``, ``_CCONSTS``,
``_CPROGS``, ``_CENTRIES`` at the end of each module) for the optional C decoder
``kwire/protocol/_cdecode.c``; the Python functions stay the reference it must match.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"
OUT_PKG = ROOT / "kwire" / "protocol"
INF = 0x7FFF

FIXED = {  # kind -> (struct code, size)
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
    "float64": ("d", 8),
    "bool": ("?", 1),
    "uuid": ("16s", 16),
}
FLAT_INTS = {"int8", "int16", "int32", "int64", "uint16", "uint32"}  # what _pack_flat (C) writes
ARRAY_NAMES = {"b": "I8", "h": "I16", "i": "I32", "q": "I64", "H": "U16", "I": "U32", "d": "F64", "?": "BOOL"}
PRIMITIVES = set(FIXED) | {"string", "bytes", "records"}
# Op codes of the C decoder's tables (kwire/protocol/_cdecode.c reads the same numbers).
C_KINDS = {"int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint16": 5, "uint32": 6, "float64": 7, "bool": 8,
           "uuid": 9, "string": 10, "bytes": 11, "records": 12, "struct": 13}
C_ARRAY = 14
C_COMPACT, C_NULLABLE = 1, 2  # op flags
C_CONST, C_LIST, C_STRUCT = 0, 1, 2  # how a slot's default is made
RESERVED_ATTRS = {"unknown_tagged_fields", "to_json", "from_json", "encode", "decode", "decode_from", "encode_into"}

Range = tuple[int, int] | None
MISSING = object()  # no "default" key (as opposed to "default": null)


def parse_versions(s: str | None) -> Range:
    if s is None:
        return None
    s = s.strip()
    if s == "none":
        return None
    if s.endswith("+"):
        return (int(s[:-1]), INF)
    if "-" in s:
        lo, hi = s.split("-")
        return (int(lo), int(hi))
    return (int(s), int(s))


def in_range(r: Range, v: int) -> bool:
    return r is not None and r[0] <= v <= r[1]


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    s = s.lower()
    if keyword.iskeyword(s) or s in RESERVED_ATTRS:
        s += "_"
    return s


@dataclass
class FieldDef:
    name: str
    attr: str
    type: str
    kind: str  # primitive kind or "struct"
    is_array: bool
    versions: Range
    nullable: Range
    tagged: Range
    tag: int | None
    raw_default: Any
    ignorable: bool
    flexible_override: Range | str  # "inherit" or a range (None = never compact)
    struct: StructDef | None = None

    def present(self, v: int) -> bool:
        if self.tagged is not None:
            return in_range(self.tagged, v)
        return in_range(self.versions, v)

    def is_tagged(self, v: int) -> bool:
        return in_range(self.tagged, v)

    def compact(self, v: int, msg_flexible: bool) -> bool:
        if not msg_flexible:
            return False
        if self.flexible_override == "inherit":
            return True
        return in_range(self.flexible_override, v)  # type: ignore[arg-type]

    # --- defaults -------------------------------------------------------------
    def default_value(self) -> Any:
        """The Python default (arrays/structs: None or the sentinel 'new')."""
        d = self.raw_default
        nullable_kind = self.kind in ("string", "bytes", "records", "struct") or self.is_array
        if (d is None or d == "null") and nullable_kind:
            return None
        if d is MISSING:
            d = None
        if self.is_array or self.kind == "struct":
            return "new"
        if self.kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            if d is None or d == "":
                return 0
            if isinstance(d, bool):
                raise SystemExit(f"{self.name}: bool default for int")
            return int(d, 0) if isinstance(d, str) else int(d)
        if self.kind == "bool":
            if d is None or d == "":
                return False
            if isinstance(d, bool):
                return d
            return {"true": True, "false": False}[d.lower()]
        if self.kind == "float64":
            return float(d) if d not in (None, "") else 0.0
        if self.kind == "string":
            return "" if d is None else str(d)
        if self.kind == "bytes":
            return b""
        if self.kind == "records":
            return None if self.nullable is not None else b""
        if self.kind == "uuid":
            return "ZERO_UUID"
        raise SystemExit(f"unknown kind {self.kind}")

    def default_expr(self) -> str:
        d = self.default_value()
        if d is None:
            return "None"
        if self.is_array:
            return "[]"
        if self.kind == "struct":
            assert self.struct is not None
            return f"{self.struct.pyname}()"
        if self.kind == "uuid":
            return "_ZERO_UUID"
        return repr(d)

    def compare_expr(self) -> str:
        """Expression of the default for comparisons (no allocation)."""
        d = self.default_value()
        if d is None:
            return "None"
        if self.is_array:
            return "[]"
        if self.kind == "struct":
            assert self.struct is not None
            return f"_DEF_{self.struct.pyname}"
        if self.kind == "uuid":
            return "_ZERO_UUID"
        return repr(d)

    def not_default_cond(self, expr: str) -> str:
        d = self.default_value()
        if d is None:
            return f"{expr} is not None"
        if self.is_array:
            return f"{expr}"
        return f"{expr} != {self.compare_expr()}"

    def py_type(self) -> str:
        base = {
            "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int", "uint32": "int",
            "float64": "float", "bool": "bool", "string": "str", "bytes": "bytes",
            "records": "bytes | memoryview | RecordChain", "uuid": "UUID",
        }.get(self.kind)
        if base is None:
            assert self.struct is not None
            base = self.struct.pyname
        t = f"list[{base}]" if self.is_array else base
        if self.nullable is not None or self.default_value() is None:
            t += " | None"
        return t


@dataclass
class StructDef:
    name: str  # spec name
    pyname: str  # module-level Python name
    qualname: str  # public dotted name
    fields: list[FieldDef]
    is_top: bool = False


@dataclass
class SpecDef:
    path: str
    name: str
    type: str
    api_key: int | None
    valid: Range
    flexible: Range
    unstable: bool
    listeners: list[str]
    top: StructDef
    structs: list[StructDef] = field(default_factory=list)  # children first


def load_spec(path: Path, rel: str) -> SpecDef:
    data = json.loads(path.read_text())
    name = data["name"]
    commons: dict[str, dict[str, Any]] = {cs["name"]: cs for cs in data.get("commonStructs", [])}
    structs: list[StructDef] = []
    by_name: dict[str, StructDef] = {}

    def build_fields(fields: list[dict[str, Any]]) -> list[FieldDef]:
        out = []
        for f in fields:
            t = f["type"]
            is_array = t.startswith("[]")
            elem = t[2:] if is_array else t
            kind = elem if elem in PRIMITIVES else "struct"
            tagged = parse_versions(f.get("taggedVersions"))
            versions = parse_versions(f.get("versions", f.get("taggedVersions")))
            fo: Range | str = "inherit"
            if "flexibleVersions" in f:
                fo = parse_versions(f["flexibleVersions"])
            fd = FieldDef(
                name=f["name"],
                attr=snake(f["name"]),
                type=t,
                kind=kind,
                is_array=is_array,
                versions=versions,
                nullable=parse_versions(f.get("nullableVersions")),
                tagged=tagged,
                tag=f.get("tag"),
                raw_default=f.get("default", MISSING),
                ignorable=bool(f.get("ignorable", False)),
                flexible_override=fo,
            )
            if kind == "struct":
                if "fields" in f:
                    fd.struct = build_struct(elem, f["fields"])
                elif elem in by_name:
                    fd.struct = by_name[elem]
                elif elem in commons:
                    fd.struct = build_struct(elem, commons[elem]["fields"])
                else:
                    raise SystemExit(f"{rel}: unknown type {t} of field {f['name']}")
            out.append(fd)
        attrs = [fd.attr for fd in out]
        if len(set(attrs)) != len(attrs):
            raise SystemExit(f"{rel}: duplicate field attribute in {attrs}")
        return out

    def build_struct(sname: str, fields: list[dict[str, Any]]) -> StructDef:
        if sname in by_name:
            return by_name[sname]
        sd = StructDef(sname, f"{name}_{sname}", f"{name}.{sname}", [])
        by_name[sname] = sd
        sd.fields = build_fields(fields)
        structs.append(sd)
        return sd

    top = StructDef(name, name, name, [], is_top=True)
    top.fields = build_fields(data.get("fields", []))
    structs.append(top)
    return SpecDef(
        path=rel,
        name=name,
        type=data["type"],
        api_key=data.get("apiKey"),
        valid=parse_versions(data["validVersions"]),
        flexible=parse_versions(data.get("flexibleVersions", "none")),
        unstable=bool(data.get("latestVersionUnstable", False)),
        listeners=list(data.get("listeners", [])),
        top=top,
        structs=structs,
    )


class ModuleWriter:
    """Collects the code of one generated module."""

    def __init__(self) -> None:
        self.structs: dict[str, str] = {}  # format -> constant name
        self.flats: dict[str, str] = {}  # fast-path layout template -> name of its Struct cache
        self.flat_name_consts: dict[tuple[str, ...], str] = {}  # attribute names -> constant name
        self.funcs: list[str] = []
        self.func_bodies: dict[str, str] = {}  # canonical body -> function name
        self.makers: dict[str, str] = {}  # struct pyname -> code of its default maker
        self.ctypes: dict[str, int] = {}  # struct pyname -> index in _CTYPES
        self.cdefaults: list[tuple[int, ...]] = []  # per type: (how, arg) per slot
        self.cconsts: dict[tuple[str, str], int] = {}  # (type, expression) -> index in _CCONSTS
        self.cprogs: dict[tuple[int, ...], int] = {}  # program -> index in _CPROGS
        self.centries: dict[str, tuple[int, tuple[int, ...]]] = {}  # message -> (first version, programs)

    def default_build(self, fd: FieldDef) -> str:
        """Expression making a field's default: a new list or struct each time, else the constant."""
        if fd.kind == "struct" and not fd.is_array and fd.default_value() is not None:
            assert fd.struct is not None
            return self.maker(fd.struct) + "()"
        return fd.default_expr()

    def maker(self, sd: StructDef) -> str:
        """Name of a function equal to ``sd.pyname()`` that skips the dataclass ``__init__``."""
        name = f"_n_{sd.pyname}"
        if sd.pyname not in self.makers:
            self.makers[sd.pyname] = ""  # reserve the name first: defaults may nest
            body = [f"def {name}():", f"    o = _new({sd.pyname})"]
            body += [f"    o.{fd.attr} = {self.default_build(fd)}" for fd in sd.fields]
            body += ["    o.unknown_tagged_fields = None", "    return o"]
            self.makers[sd.pyname] = "\n".join(body) + "\n"
        return name

    def ctype(self, sd: StructDef) -> int:
        """Index of a struct in _CTYPES; its slot defaults are registered with it."""
        idx = self.ctypes.get(sd.pyname)
        if idx is not None:
            return idx
        idx = self.ctypes[sd.pyname] = len(self.ctypes)
        self.cdefaults.append(())
        row: list[int] = []
        for fd in sd.fields:
            d = fd.default_value()
            if d is None:
                row += [C_CONST, self.cconst("None")]
            elif fd.is_array:
                row += [C_LIST, 0]
            elif fd.kind == "struct":
                assert fd.struct is not None
                row += [C_STRUCT, self.ctype(fd.struct)]
            else:
                row += [C_CONST, self.cconst(fd.default_expr(), type(d).__name__)]
        row += [C_CONST, self.cconst("None")]  # unknown_tagged_fields
        self.cdefaults[idx] = tuple(row)
        return idx

    def cconst(self, expr: str, typ: str = "") -> int:
        # keyed by type too: 0, False and 0.0 are equal but must stay distinct constants
        return self.cconsts.setdefault((typ, expr), len(self.cconsts))

    def cprog(self, prog: tuple[int, ...]) -> int:
        return self.cprogs.setdefault(prog, len(self.cprogs))

    def struct_const(self, fmt: str) -> str:
        name = self.structs.get(fmt)
        if name is None:
            name = f"_S{len(self.structs)}"
            self.structs[fmt] = name
        return name

    def flat_names(self, names: tuple[str, ...]) -> str:
        name = self.flat_name_consts.get(names)
        if name is None:
            name = f"_FN{len(self.flat_name_consts)}"
            self.flat_name_consts[names] = name
        return name

    def flat_cache(self, template: str) -> str:
        name = self.flats.get(template)
        if name is None:
            name = f"_FL{len(self.flats)}"
            self.flats[template] = name
        return name

    def add_function(self, kind: str, pyname: str, v: int, params: str, body: list[str]) -> str:
        """Add a function unless an identical one exists; returns the name to call."""
        text = "\n".join(body)
        key = f"{kind}:{pyname}:{params}:{text}"
        existing = self.func_bodies.get(key)
        if existing is not None:
            return existing
        fname = f"_{kind}_{pyname}_v{v}"
        self.func_bodies[key] = fname
        self.funcs.append(f"def {fname}({params}):\n" + text + "\n")
        return fname


class Gen:
    """Generates one spec's classes and codec functions into a ModuleWriter."""

    def __init__(self, spec: SpecDef, w: ModuleWriter) -> None:
        self.spec = spec
        self.w = w
        self.dec_names: dict[tuple[str, int], str] = {}
        self.enc_names: dict[tuple[str, int], str] = {}
        self.c_names: dict[tuple[str, int], int] = {}

    def versions(self) -> list[int]:
        if self.spec.valid is None:
            return []
        return list(range(self.spec.valid[0], self.spec.valid[1] + 1))

    def flexible(self, v: int) -> bool:
        return in_range(self.spec.flexible, v)

    def generate(self) -> None:
        for v in self.versions():
            for sd in self.spec.structs:  # children come first
                self.dec_names[(sd.pyname, v)] = self.gen_decode(sd, v)
                self.enc_names[(sd.pyname, v)] = self.gen_encode(sd, v)
                self.c_names[(sd.pyname, v)] = self.gen_cprog(sd, v)
        vs = self.versions()
        if vs:
            self.w.centries[self.spec.top.pyname] = (vs[0], tuple(self.c_names[(self.spec.top.pyname, v)] for v in vs))

    # --- C decoder tables ---------------------------------------------------------
    def gen_cprog(self, sd: StructDef, v: int) -> int:
        """The decode of ``sd`` at ``v`` as data for kwire/protocol/_cdecode.c:
        (type, flexible, op count, ops..., tag count, (tag, op)...), each op 5 ints
        (code, slot, flags, element code, program of a struct) in wire order."""
        flex = self.flexible(v)
        slots = {fd.attr: i for i, fd in enumerate(sd.fields)}
        ops: list[int] = []
        n = 0
        for fd in sd.fields:
            if fd.present(v) and not fd.is_tagged(v):
                ops += self.cop(fd, v, slots[fd.attr], fd.compact(v, flex))
                n += 1
        tagged = sorted((fd for fd in sd.fields if fd.is_tagged(v)), key=lambda x: x.tag or 0)
        assert flex or not tagged, f"{sd.qualname} v{v}: tagged fields in a non-flexible version"
        tags: list[int] = []
        for fd in tagged:
            assert fd.tag is not None
            tags += [fd.tag, *self.cop(fd, v, slots[fd.attr], True)]
        return self.w.cprog((self.w.ctype(sd), int(flex), n, *ops, len(tagged), *tags))

    def cop(self, fd: FieldDef, v: int, slot: int, compact: bool) -> tuple[int, int, int, int, int]:
        nullable = C_NULLABLE if in_range(fd.nullable, v) else 0
        prog = self.c_names[(fd.struct.pyname, v)] if fd.struct is not None else 0
        if fd.is_array:
            return (C_ARRAY, slot, (C_COMPACT if compact else 0) | nullable, C_KINDS[fd.kind], prog)
        if fd.kind == "struct":
            return (C_KINDS["struct"], slot, nullable, 0, prog)
        if fd.kind in FIXED:
            return (C_KINDS[fd.kind], slot, 0, 0, 0)
        return (C_KINDS[fd.kind], slot, (C_COMPACT if compact else 0) | nullable, 0, 0)

    # --- decode -----------------------------------------------------------------
    def gen_decode(self, sd: StructDef, v: int) -> str:
        flex = self.flexible(v)
        lines: list[str] = ["    f = ''", "    try:"]
        ind = " " * 8
        fields = sd.fields
        var = {fd.attr: f"v{i}" for i, fd in enumerate(fields)}
        present = [fd for fd in fields if fd.present(v) and not fd.is_tagged(v)]
        tagged = [fd for fd in fields if fd.is_tagged(v)]
        # Fixed-width runs are merged into one unpack.
        i = 0
        while i < len(present):
            fd = present[i]
            if fd.kind in FIXED and not fd.is_array:
                run = [fd]
                j = i + 1
                while j < len(present) and present[j].kind in FIXED and not present[j].is_array:
                    run.append(present[j])
                    j += 1
                fmt = ">" + "".join(FIXED[x.kind][0] for x in run)
                size = sum(FIXED[x.kind][1] for x in run)
                sc = self.w.struct_const(fmt)
                names = ", ".join(var[x.attr] for x in run)
                label = run[0].name if len(run) == 1 else f"{run[0].name}..{run[-1].name}"
                lines.append(f"{ind}f = {label!r}")
                lines.append(f"{ind}{names}, = {sc}.unpack_from(buf, pos)")
                lines.append(f"{ind}pos += {size}")
                for x in run:
                    if x.kind == "uuid":
                        lines.append(f"{ind}{var[x.attr]} = _uuid({var[x.attr]})")
                i = j
                continue
            lines.append(f"{ind}f = {fd.name!r}")
            lines.extend(self.read_field(fd, v, var[fd.attr], ind, compact=fd.compact(v, flex)))
            i += 1
        if flex:
            for fd in tagged:
                lines.append(f"{ind}{var[fd.attr]} = {self.w.default_build(fd)}")
            lines.append(f"{ind}f = '_tagged_fields'")
            if not tagged:
                # The common case: no known tags in this version; unknown ones are kept as bytes.
                lines.append(f"{ind}if buf[pos]:")
                lines.append(f"{ind}    u, pos = _read_unknown_tags(buf, pos)")
                lines.append(f"{ind}else:")
                lines.append(f"{ind}    u = None")
                lines.append(f"{ind}    pos += 1")
                return self._finish_decode(sd, v, flex, lines, var)
            lines.append(f"{ind}u = None")
            lines.extend(self.read_uvarint("nt", ind))
            lines.append(f"{ind}if nt > len(buf) - pos:")
            lines.append(f"{ind}    raise _count_err(nt, pos)")
            lines.append(f"{ind}for _ in range(nt):")
            ind2 = ind + "    "
            lines.extend(self.read_uvarint("tg", ind2))
            lines.extend(self.read_uvarint("tz", ind2))
            lines.append(f"{ind2}tend = pos + tz")
            lines.append(f"{ind2}if tend > len(buf):")
            lines.append(f"{ind2}    raise _short_err(tz, pos)")
            kw = "if"
            for fd in sorted(tagged, key=lambda x: x.tag or 0):
                lines.append(f"{ind2}{kw} tg == {fd.tag}:")
                ind3 = ind2 + "    "
                lines.append(f"{ind3}f = {fd.name!r}")
                lines.extend(self.read_field(fd, v, var[fd.attr], ind3, compact=True))
                lines.append(f"{ind3}if pos != tend:")
                lines.append(f"{ind3}    raise _tag_size_err(tg, tz, pos)")
                kw = "elif"
            if tagged:
                lines.append(f"{ind2}else:")
                ind3 = ind2 + "    "
            else:
                ind3 = ind2
            lines.append(f"{ind3}if u is None:")
            lines.append(f"{ind3}    u = []")
            lines.append(f"{ind3}u.append((tg, bytes(buf[pos:tend])))")
            lines.append(f"{ind2}pos = tend")
        return self._finish_decode(sd, v, flex, lines, var)

    def _finish_decode(self, sd: StructDef, v: int, flex: bool, lines: list[str], var: dict[str, str]) -> str:
        if lines[-1] == "    try:":
            lines.append("        pass")
        lines.append("    except _READ_ERRORS as e:")
        lines.append("        raise _read_fail(e, f, pos, buf) from None")
        lines.append("    except _DecodeError as e:")
        lines.append("        if e.field is None:")
        lines.append("            e.field = f")
        lines.append("        raise")
        # object.__new__ and slot stores: the same object as the dataclass __init__ makes, faster
        lines.append(f"    o = _new({sd.pyname})")
        for fd in sd.fields:
            value = var[fd.attr] if fd.present(v) else self.w.default_build(fd)
            lines.append(f"    o.{fd.attr} = {value}")
        lines.append(f"    o.unknown_tagged_fields = {'u' if flex else 'None'}")
        lines.append("    return o, pos")
        return self.w.add_function("d", sd.pyname, v, "buf, pos", lines)

    def read_uvarint(self, name: str, ind: str) -> list[str]:
        return [
            f"{ind}{name} = buf[pos]",
            f"{ind}pos += 1",
            f"{ind}if {name} > 127:",
            f"{ind}    {name}, pos = _uvc(buf, pos, {name})",
        ]

    def read_len(self, kind: str, compact: bool, ind: str) -> list[str]:
        """Read a length/count into ``n`` (-1 means null)."""
        if compact:
            return self.read_uvarint("n", ind) + [f"{ind}n -= 1"]
        if kind in ("string",):
            return [f"{ind}n, = _I16.unpack_from(buf, pos)", f"{ind}pos += 2"]
        return [f"{ind}n, = _I32.unpack_from(buf, pos)", f"{ind}pos += 4"]

    def null_branch(self, fd: FieldDef, v: int, target: str, ind: str) -> list[str]:
        if fd.nullable is not None and in_range(fd.nullable, v):
            return [
                f"{ind}if n < 0:",
                f"{ind}    if n != -1:",
                f"{ind}        raise _len_err(n, pos)",
                f"{ind}    {target} = None",
            ]
        return [f"{ind}if n < 0:", f"{ind}    raise _null_err(n, pos)"]

    def read_field(self, fd: FieldDef, v: int, target: str, ind: str, compact: bool) -> list[str]:
        lines: list[str] = []
        kind = fd.kind
        if fd.is_array:
            lines += self.read_len("array", compact, ind)
            lines += self.null_branch(fd, v, target, ind)
            lines.append(f"{ind}else:")
            i2 = ind + "    "
            lines.append(f"{i2}if n > len(buf) - pos:")
            lines.append(f"{i2}    raise _count_err(n, pos)")
            if kind in FIXED and kind != "uuid":
                code, size = FIXED[kind]
                lines.append(f"{i2}{target} = list(_A{ARRAY_NAMES[code]}[n].unpack_from(buf, pos))")
                lines.append(f"{i2}pos += {size} * n")
            elif kind == "struct":
                assert fd.struct is not None
                fn = self.dec_names[(fd.struct.pyname, v)]
                lines.append(f"{i2}{target} = []")
                lines.append(f"{i2}for _ in range(n):")
                lines.append(f"{i2}    o, pos = {fn}(buf, pos)")
                lines.append(f"{i2}    {target}.append(o)")
            else:
                lines.append(f"{i2}{target} = []")
                lines.append(f"{i2}for _ in range(n):")
                lines.append(f"{i2}    o, pos = _read_elem_{kind}(buf, pos, {compact!r})")
                lines.append(f"{i2}    {target}.append(o)")
            return lines
        if kind == "struct":
            assert fd.struct is not None
            fn = self.dec_names[(fd.struct.pyname, v)]
            if in_range(fd.nullable, v):
                lines.append(f"{ind}m, = _I8.unpack_from(buf, pos)")
                lines.append(f"{ind}pos += 1")
                lines.append(f"{ind}if m < 0:")
                lines.append(f"{ind}    {target} = None")
                lines.append(f"{ind}else:")
                lines.append(f"{ind}    {target}, pos = {fn}(buf, pos)")
            else:
                lines.append(f"{ind}{target}, pos = {fn}(buf, pos)")
            return lines
        if kind in FIXED:
            code, size = FIXED[kind]
            sc = self.w.struct_const(">" + code)
            lines.append(f"{ind}{target}, = {sc}.unpack_from(buf, pos)")
            lines.append(f"{ind}pos += {size}")
            if kind == "uuid":
                lines.append(f"{ind}{target} = _uuid({target})")
            return lines
        # string / bytes / records
        lines += self.read_len(kind, compact, ind)
        lines += self.null_branch(fd, v, target, ind)
        lines.append(f"{ind}else:")
        i2 = ind + "    "
        lines.append(f"{i2}end = pos + n")
        lines.append(f"{i2}if end > len(buf):")
        lines.append(f"{i2}    raise _short_err(n, pos)")
        if kind == "string":
            lines.append(f"{i2}{target} = str(buf[pos:end], 'utf-8')")
        elif kind == "bytes":
            lines.append(f"{i2}{target} = bytes(buf[pos:end])")
        else:  # records stay a view of the input (zero-copy for memoryview input)
            lines.append(f"{i2}{target} = buf[pos:end]")
        lines.append(f"{i2}pos = end")
        return lines

    # --- encode -----------------------------------------------------------------
    def flat_layout(self, sd: StructDef, v: int) -> tuple[str, str] | None:
        """(names constant, layout) for _pack_flat when ``sd`` v``v`` is a struct of integers and
        integer arrays only (no strings, uuids, floats, bools, tags or absent fields to check)."""
        flex = self.flexible(v)
        if any(not fd.present(v) and not fd.ignorable for fd in sd.fields) or any(fd.is_tagged(v) for fd in sd.fields):
            return None
        present = [fd for fd in sd.fields if fd.present(v)]
        if not present or any(fd.kind not in FLAT_INTS for fd in present):
            return None
        layout = "".join(("" if not fd.is_array else "[" if fd.compact(v, flex) else "(") + FIXED[fd.kind][0]
                         for fd in present)
        names = tuple(fd.attr for fd in present)
        return self.w.flat_names(names), layout

    def flat_fast_path(self, sd: StructDef, v: int, obj: str = "o", ind0: str = "    ", done: str = "return"
                       ) -> list[str]:
        """One ``pack`` for a struct of fixed-width numbers and arrays of them (no strings, no
        uuids, no tags, no absent fields to check), e.g. MetadataResponsePartition: the common
        case (no unknown tags, compact counts below 127) writes in one call and returns; anything
        else (a None array, a wrong type, an out-of-range value) falls through to the
        field-by-field path below, which writes the same bytes or raises the exact EncodeError."""
        flex = self.flexible(v)
        if any(not fd.present(v) and not fd.ignorable for fd in sd.fields) or any(fd.is_tagged(v) for fd in sd.fields):
            return []
        present = [fd for fd in sd.fields if fd.present(v)]
        if not any(fd.is_array for fd in present):
            return []  # already one pack per run of fixed fields
        if any(fd.kind not in FIXED or fd.kind == "uuid" for fd in present):
            return []
        template, vals, arrays = ">", [], []
        for fd in present:
            code = FIXED[fd.kind][0]
            if not fd.is_array:
                template += code
                vals.append(f"{obj}.{fd.attr}")
                continue
            a = f"a{len(arrays)}"
            compact = fd.compact(v, flex)
            arrays.append((a, fd, compact))
            template += ("B" if compact else "i") + "{}" + code
            vals.append(f"n{len(arrays) - 1} + 1" if compact else f"n{len(arrays) - 1}")
            vals.append(f"*{a}")
        if flex:
            template += "B"
            vals.append("0")
        cache = self.w.flat_cache(template)
        ns = [f"n{i}" for i in range(len(arrays))]
        key = ns[0] if len(ns) == 1 else "(" + ", ".join(ns) + ")"
        i1, i2 = ind0 + "    ", ind0 + "        "
        lines = [f"{ind0}try:"]
        for i, (a, fd, _) in enumerate(arrays):
            lines.append(f"{i1}{a} = {obj}.{fd.attr}")
            lines.append(f"{i1}n{i} = len({a})")
        small = [f"n{i} < 127" for i, (_, _, compact) in enumerate(arrays) if compact]
        lines.append(f"{i1}if {' and '.join(small + [f'not {obj}.unknown_tagged_fields'])}:")
        lines.append(f"{i2}s = {cache}.get({key})")
        lines.append(f"{i2}if s is None:")
        lines.append(f"{i2}    s = _flat_struct({cache}, {key}, {template!r}, ({', '.join(ns)},))")
        lines.append(f"{i2}out += s.pack({', '.join(vals)})")
        lines.append(f"{i2}{done}")
        lines.append(f"{ind0}except _WRITE_ERRORS:")
        lines.append(f"{ind0}    pass  # the field-by-field path raises the exact error")
        return lines

    def gen_encode(self, sd: StructDef, v: int) -> str:
        flex = self.flexible(v)
        lines: list[str] = self.flat_fast_path(sd, v) + ["    f = ''", "    try:"]
        ind = " " * 8
        fields = sd.fields
        for fd in fields:
            if not fd.present(v) and not fd.ignorable:
                lines.append(f"{ind}if {fd.not_default_cond('o.' + fd.attr)}:")
                lines.append(f"{ind}    raise _absent_err({fd.name!r}, {v})")
        present = [fd for fd in fields if fd.present(v) and not fd.is_tagged(v)]
        tagged = [fd for fd in fields if fd.is_tagged(v)]
        i = 0
        while i < len(present):
            fd = present[i]
            if fd.kind in FIXED and not fd.is_array:
                run = [fd]
                j = i + 1
                while j < len(present) and present[j].kind in FIXED and not present[j].is_array:
                    run.append(present[j])
                    j += 1
                fmt = ">" + "".join(FIXED[x.kind][0] for x in run)
                sc = self.w.struct_const(fmt)
                vals = ", ".join(f"o.{x.attr}.bytes" if x.kind == "uuid" else f"o.{x.attr}" for x in run)
                label = run[0].name if len(run) == 1 else f"{run[0].name}..{run[-1].name}"
                lines.append(f"{ind}f = {label!r}")
                lines.append(f"{ind}out += {sc}.pack({vals})")
                i = j
                continue
            lines.append(f"{ind}f = {fd.name!r}")
            lines.append(f"{ind}x = o.{fd.attr}")
            lines.extend(self.write_field(fd, v, "x", "out", ind, compact=fd.compact(v, flex)))
            i += 1
        if flex:
            lines.append(f"{ind}u = o.unknown_tagged_fields")
            if not tagged:
                lines.append(f"{ind}if u:")
                lines.append(f"{ind}    _write_tagged(out, u)")
                lines.append(f"{ind}else:")
                lines.append(f"{ind}    out.append(0)")
            else:
                lines.append(f"{ind}tgs = list(u) if u else []")
                for fd in sorted(tagged, key=lambda x: x.tag or 0):
                    lines.append(f"{ind}f = {fd.name!r}")
                    lines.append(f"{ind}x = o.{fd.attr}")
                    lines.append(f"{ind}if {fd.not_default_cond('x')}:")
                    i2 = ind + "    "
                    lines.append(f"{i2}t = bytearray()")
                    lines.extend(self.write_field(fd, v, "x", "t", i2, compact=True))
                    lines.append(f"{i2}tgs.append(({fd.tag}, t))")
                lines.append(f"{ind}if tgs:")
                lines.append(f"{ind}    _write_tagged(out, tgs)")
                lines.append(f"{ind}else:")
                lines.append(f"{ind}    out.append(0)")
        else:
            lines.append(f"{ind}if o.unknown_tagged_fields:")
            lines.append(f"{ind}    raise _tags_not_flexible({v})")
        if lines[-1] == "    try:":
            lines.append("        pass")
        lines.append("    except _WRITE_ERRORS as e:")
        lines.append("        raise _write_fail(e, f, o) from None")
        lines.append("    except _EncodeError as e:")
        lines.append("        if e.field is None:")
        lines.append("            e.field = f")
        lines.append("        raise")
        return self.w.add_function("e", sd.pyname, v, "out, o", lines)

    def write_len(self, kind: str, compact: bool, out: str, expr: str, ind: str) -> list[str]:
        if compact:
            return [
                f"{ind}n = {expr} + 1",
                f"{ind}if n < 128:",
                f"{ind}    {out}.append(n)",
                f"{ind}else:",
                f"{ind}    _wuv({out}, n)",
            ]
        if kind == "string":
            return [f"{ind}{out} += _I16.pack({expr})"]
        return [f"{ind}{out} += _I32.pack({expr})"]

    def write_null(self, fd: FieldDef, v: int, kind: str, compact: bool, out: str, ind: str) -> list[str]:
        if in_range(fd.nullable, v):
            if compact:
                return [f"{ind}    {out}.append(0)"]
            null = "b'\\xff\\xff'" if kind == "string" else "b'\\xff\\xff\\xff\\xff'"
            return [f"{ind}    {out} += {null}"]
        return [f"{ind}    raise _null_enc_err()"]

    def write_field(self, fd: FieldDef, v: int, x: str, out: str, ind: str, compact: bool) -> list[str]:
        lines: list[str] = []
        kind = fd.kind
        if fd.is_array:
            lines.append(f"{ind}if {x} is None:")
            lines += self.write_null(fd, v, "array", compact, out, ind)
            lines.append(f"{ind}else:")
            i2 = ind + "    "
            lines += self.write_len("array", compact, out, f"len({x})", i2)
            if kind in FIXED and kind != "uuid":
                code, _ = FIXED[kind]
                lines.append(f"{i2}{out} += _A{ARRAY_NAMES[code]}[len({x})].pack(*{x})")
            elif kind == "struct":
                assert fd.struct is not None
                fn = self.enc_names[(fd.struct.pyname, v)]
                flat = self.flat_layout(fd.struct, v) if out == "out" else None
                if flat is not None:  # the whole array in one C call when it takes it
                    # (an empty array has nothing to write: no call)
                    lines.append(f"{i2}if len({x}) and not _pack_flat({out}, {x}, {flat[0]}, {flat[1]!r}, "
                                 f"{self.flexible(v)!r}):")
                    i2 += "    "
                lines.append(f"{i2}for e in {x}:")
                if out == "out":  # the element's one-pack fast path inline: no call per element
                    lines += self.flat_fast_path(fd.struct, v, "e", i2 + "    ", "continue")
                lines.append(f"{i2}    {fn}({out}, e)")
            else:
                lines.append(f"{i2}for e in {x}:")
                lines.append(f"{i2}    _write_elem_{kind}({out}, e, {compact!r})")
            return lines
        if kind == "struct":
            assert fd.struct is not None
            fn = self.enc_names[(fd.struct.pyname, v)]
            if in_range(fd.nullable, v):
                lines.append(f"{ind}if {x} is None:")
                lines.append(f"{ind}    {out}.append(255)")
                lines.append(f"{ind}else:")
                lines.append(f"{ind}    {out}.append(1)")
                lines.append(f"{ind}    {fn}({out}, {x})")
            else:
                lines.append(f"{ind}{fn}({out}, {x})")
            return lines
        if kind in FIXED:
            code, _ = FIXED[kind]
            sc = self.w.struct_const(">" + code)
            val = f"{x}.bytes" if kind == "uuid" else x
            lines.append(f"{ind}{out} += {sc}.pack({val})")
            return lines
        lines.append(f"{ind}if {x} is None:")
        lines += self.write_null(fd, v, kind, compact, out, ind)
        lines.append(f"{ind}else:")
        i2 = ind + "    "
        if kind == "string":
            lines.append(f"{i2}{x} = {x}.encode()")
        lines += self.write_len(kind, compact, out, f"len({x})", i2)
        if kind == "records":
            # A RecordChain is spliced in at send time rather than copied (kwire.protocol.splice).
            lines.append(f"{i2}if {x}.__class__ is RecordChain:")
            lines.append(f"{i2}    _splice({out}, {x})")
            lines.append(f"{i2}else:")
            lines.append(f"{i2}    {out} += {x}")
        else:
            lines.append(f"{i2}{out} += {x}")
        return lines


def class_code(spec: SpecDef, sd: StructDef, w: ModuleWriter) -> str:
    base = "Message" if sd.is_top else "Struct"
    lines = ["@dataclass(slots=True)", f"class {sd.pyname}({base}):"]
    for fd in sd.fields:
        d = fd.default_value()
        if fd.is_array and d is not None:
            dflt = "field(default_factory=list)"
        elif fd.kind == "struct" and d is not None:
            assert fd.struct is not None
            dflt = f"field(default_factory={fd.struct.pyname})"
        else:
            dflt = fd.default_expr()
        lines.append(f"    {fd.attr}: {fd.py_type()} = {dflt}")
    lines.append("    unknown_tagged_fields: list[tuple[int, bytes]] | None = field(default=None, repr=False)")
    if sd.is_top:
        # Nested structures as class attributes: ProduceRequest.TopicProduceData(...)
        for child in spec.structs:
            if not child.is_top:
                lines.append(f"    {child.name}: ClassVar[type[{child.pyname}]] = {child.pyname}")
    lines.append("")
    lines.append(f"{sd.pyname}.__qualname__ = {sd.qualname!r}")
    lines.append(f"{sd.pyname}._schema_name = {sd.qualname!r}")
    return "\n".join(lines) + "\n"


def fieldspec_code(sd: StructDef) -> str:
    rows = []
    for fd in sd.fields:
        d = fd.default_value()
        if fd.is_array or fd.kind == "struct":
            default = "None" if d is None else "'new'"
        elif fd.kind == "uuid":
            default = "_ZERO_UUID"
        else:
            default = repr(d)
        never_compact = fd.flexible_override is None
        rows.append(
            f"    _F({fd.attr!r}, {fd.name!r}, {fd.type!r}, {fd.kind!r}, {fd.is_array!r}, {fd.versions!r}, "
            f"{fd.nullable!r}, {fd.tagged!r}, {fd.tag!r}, {default}, {fd.ignorable!r}, {never_compact!r}, "
            f"{fd.struct.pyname if fd.struct else 'None'}),"
        )
    body = "\n".join(rows)
    return f"{sd.pyname}._fields = (\n{body}\n)\n" if rows else f"{sd.pyname}._fields = ()\n"


HEADER = '''\
# GENERATED by tools/gen_protocol.py from {sources}. Do not edit.
# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar
from struct import Struct as _Struct, pack as _pack, unpack_from as _unpack_from
from uuid import UUID

from kwire.errors import DecodeError as _DecodeError, EncodeError as _EncodeError
from kwire.protocol._message import FieldSpec as _F, Message, Struct
from kwire.protocol._codec_support import ARRAY_STRUCTS as _AS
from kwire.protocol.splice import RecordChain, splice as _splice
from kwire.protocol._codec_support import (
    READ_ERRORS as _READ_ERRORS,
    WRITE_ERRORS as _WRITE_ERRORS,
    ZERO_UUID as _ZERO_UUID,
    I8 as _I8,
    I16 as _I16,
    I32 as _I32,
    absent_err as _absent_err,
    count_err as _count_err,
    flat_struct as _flat_struct,
    pack_flat as _pack_flat,
    len_err as _len_err,
    make_uuid as _uuid,
    null_enc_err as _null_enc_err,
    null_err as _null_err,
    read_elem_bytes as _read_elem_bytes,
    read_elem_records as _read_elem_records,
    read_elem_string as _read_elem_string,
    read_elem_uuid as _read_elem_uuid,
    read_fail as _read_fail,
    read_unknown_tags as _read_unknown_tags,
    read_uvarint_cont as _uvc,
    short_err as _short_err,
    tag_size_err as _tag_size_err,
    tags_not_flexible as _tags_not_flexible,
    write_elem_bytes as _write_elem_bytes,
    write_elem_records as _write_elem_records,
    write_elem_string as _write_elem_string,
    write_elem_uuid as _write_elem_uuid,
    write_fail as _write_fail,
    write_tagged as _write_tagged,
    write_uvarint as _wuv,
)

__all__ = {all_names!r}

_new = object.__new__
_AI8, _AI16, _AI32, _AI64 = _AS["b"], _AS["h"], _AS["i"], _AS["q"]
_AU16, _AU32, _AF64, _ABOOL = _AS["H"], _AS["I"], _AS["d"], _AS["?"]
'''


def module_code(specs: list[SpecDef]) -> str:
    w = ModuleWriter()
    classes: list[str] = []
    metas: list[str] = []
    attach: list[str] = []
    all_names = []
    for spec in specs:
        # Children first so that default_factory names resolve.
        for sd in spec.structs:
            classes.append(class_code(spec, sd, w))
        for sd in spec.structs:
            if not sd.is_top:
                metas.append(f"_DEF_{sd.pyname} = {sd.pyname}()")
        for sd in spec.structs:
            metas.append(fieldspec_code(sd))
        all_names.append(spec.top.pyname)
        all_names.extend(sd.pyname for sd in spec.structs if not sd.is_top)
    for spec in specs:
        for sd in spec.structs:
            w.ctype(sd)  # _CTYPES in module order
    gens = []
    for spec in specs:
        g = Gen(spec, w)
        g.generate()
        gens.append(g)
    for spec, g in zip(specs, gens, strict=True):
        top = spec.top
        vs = g.versions()
        attach.append(f"{top.pyname}.API_KEY = {spec.api_key!r}")
        attach.append(f"{top.pyname}.MESSAGE_TYPE = {spec.type!r}")
        attach.append(f"{top.pyname}.VALID_VERSIONS = {spec.valid!r}")
        attach.append(f"{top.pyname}.FLEXIBLE_VERSIONS = {spec.flexible!r}")
        attach.append(f"{top.pyname}.LATEST_VERSION_UNSTABLE = {spec.unstable!r}")
        dec = ", ".join(f"{v}: {g.dec_names[(top.pyname, v)]}" for v in vs)
        enc = ", ".join(f"{v}: {g.enc_names[(top.pyname, v)]}" for v in vs)
        attach.append(f"{top.pyname}._decoders = {{{dec}}}")
        attach.append(f"{top.pyname}._encoders = {{{enc}}}")
    sources = ", ".join(f"schemas/{s.path}" for s in specs)
    consts = "\n".join(f"{name} = _Struct({fmt!r})" for fmt, name in w.structs.items())
    if w.flats:
        consts += "\n" + "\n".join(f"{name}: dict = {{}}  # {tpl}" for tpl, name in w.flats.items())
    if w.flat_name_consts:
        consts += "\n" + "\n".join(f"{name} = {names!r}" for names, name in w.flat_name_consts.items())
    parts = [
        HEADER.format(sources=sources, all_names=all_names),
        consts + "\n",
        "\n\n".join(classes),
        "\n".join(metas),
        "\n\n".join(w.funcs),
        "\n\n".join(code for _, code in sorted(w.makers.items())),
        "\n".join(attach) + "\n",
        ctables_code(w),
    ]
    return "\n\n".join(p for p in parts if p.strip()) + ""


def ctables_code(w: ModuleWriter) -> str:
    """The tables kwire/protocol/_cdecode.c decodes from, compiled on a module's first decode."""
    types = "".join(f"\n    {name!r}," for name in w.ctypes)
    defaults = "".join(f"\n    {row!r}," for row in w.cdefaults)
    consts = "".join(f" {expr}," for _, expr in w.cconsts)
    progs = "".join(f"\n    {prog!r}," for prog in w.cprogs)
    entries = "".join(f"\n    {name!r}: {entry!r}," for name, entry in w.centries.items())
    return (f"_CTYPES = ({types}\n)\n_CDEFAULTS = ({defaults}\n)\n_CCONSTS = ({consts.strip()})\n"
            f"_CPROGS = ({progs}\n)\n_CENTRIES = {{{entries}\n}}\n")


def module_name_for(spec: SpecDef) -> str:
    if spec.type in ("request", "response"):
        base = re.sub(r"(Request|Response)$", "", spec.name)
        return snake(base).rstrip("_")
    return snake(spec.name).rstrip("_")


def error_codes_code() -> str:
    data = json.loads((SCHEMAS / "error_codes.json").read_text())["errors"]
    lines = [
        "# GENERATED by tools/gen_protocol.py from schemas/error_codes.json. Do not edit.",
        "# ruff: noqa",
        '"""Kafka error codes as data: ``ErrorCode`` (an IntEnum) and ``ERROR_INFO``."""',
        "from __future__ import annotations",
        "",
        "from enum import IntEnum",
        "from typing import NamedTuple",
        "",
        '__all__ = ["ErrorCode", "ErrorInfo", "ERROR_INFO", "error_info"]',
        "",
        "",
        "class ErrorCode(IntEnum):",
    ]
    for row in data:
        lines.append(f"    {row['name']} = {row['code']}")
    lines += [
        "",
        "",
        "class ErrorInfo(NamedTuple):",
        "    code: int",
        "    name: str",
        "    retriable: bool",
        "    message: str",
        "",
        "",
        "ERROR_INFO: dict[int, ErrorInfo] = {",
    ]
    for row in data:
        lines.append(f"    {row['code']}: ErrorInfo({row['code']}, {row['name']!r}, {row['retriable']!r}, {row['message'] or ''!r}),")
    lines += [
        "}",
        "",
        "",
        "def error_info(code: int) -> ErrorInfo:",
        '    """Facts about an error code; an unknown code is reported as such, not raised."""',
        "    info = ERROR_INFO.get(code)",
        "    if info is None:",
        '        return ErrorInfo(code, f"UNKNOWN_CODE_{code}", False, "An error code this version of kwire does not know.")',
        "    return info",
        "",
    ]
    return "\n".join(lines)


def index_code(api_modules: dict[str, list[SpecDef]], data_modules: dict[str, list[SpecDef]]) -> str:
    lines = [
        "# GENERATED by tools/gen_protocol.py from schemas/. Do not edit.",
        "# ruff: noqa",
        '"""Index of the generated message modules: data only, so importing it loads no codec."""',
        "from __future__ import annotations",
        "",
        "from enum import IntEnum",
        "",
        "# api key -> (api name, module, request class, response class, (min, max) or None,",
        "#             first flexible version or None, latest version unstable, listeners)",
        "API_INDEX: dict[int, tuple[str, str, str, str, tuple[int, int] | None, int | None, bool, tuple[str, ...]]] = {",
    ]
    rows = []
    for mod, specs in api_modules.items():
        req = next((s for s in specs if s.type == "request"), None)
        resp = next((s for s in specs if s.type == "response"), None)
        assert req is not None and resp is not None, mod
        api_name = re.sub(r"Request$", "", req.name)
        flex = req.flexible[0] if req.flexible else None
        rows.append((req.api_key, f"    {req.api_key}: ({api_name!r}, {mod!r}, {req.name!r}, {resp.name!r}, "
                     f"{req.valid!r}, {flex!r}, {req.unstable!r}, {tuple(req.listeners)!r}),"))
    lines += [r for _, r in sorted(rows, key=lambda t: t[0])]
    lines.append("}")
    lines.append("")
    lines.append("")
    lines.append("class ApiKey(IntEnum):")
    for key, _ in sorted(rows, key=lambda t: t[0]):
        name = next(re.sub(r"Request$", "", s.name) for specs in api_modules.values() for s in specs
                    if s.type == "request" and s.api_key == key)
        lines.append(f"    {snake(name).rstrip('_').upper()} = {key}")
    lines.append("")
    lines.append("# schema name -> (package, module) for headers and data/coordinator schemas")
    lines.append("SCHEMA_INDEX: dict[str, tuple[str, str]] = {")
    for mod, specs in sorted(api_modules.items()):
        for s in specs:
            lines.append(f"    {s.name!r}: ('messages', {mod!r}),")
    for mod, specs in sorted(data_modules.items()):
        for s in specs:
            pkg = "messages" if s.type == "header" else "data"
            lines.append(f"    {s.name!r}: ({pkg!r}, {mod!r}),")
    lines.append("}")
    lines.append("")
    return "\n".join(lines)


def generate() -> dict[str, str]:
    """Return {relative path: content} of every generated file."""
    specs: list[SpecDef] = []
    for path in sorted(SCHEMAS.glob("*/*.json")):
        rel = path.relative_to(SCHEMAS).as_posix()
        specs.append(load_spec(path, rel))
    api_modules: dict[str, list[SpecDef]] = {}
    header_modules: dict[str, list[SpecDef]] = {}
    data_modules: dict[str, list[SpecDef]] = {}
    for s in specs:
        mod = module_name_for(s)
        if s.type in ("request", "response"):
            api_modules.setdefault(mod, []).append(s)
        elif s.type == "header":
            header_modules.setdefault(mod, []).append(s)
        else:
            data_modules.setdefault(mod, []).append(s)
    for mod in api_modules:
        api_modules[mod].sort(key=lambda s: 0 if s.type == "request" else 1)
    out: dict[str, str] = {}
    for mod, ss in api_modules.items():
        out[f"messages/{mod}.py"] = module_code(ss)
    for mod, ss in header_modules.items():
        out[f"messages/{mod}.py"] = module_code(ss)
    for mod, ss in data_modules.items():
        out[f"data/{mod}.py"] = module_code(ss)
    out["messages/__init__.py"] = (
        "# GENERATED by tools/gen_protocol.py. Do not edit.\n"
        '"""Generated message modules, one per API (request and response) plus the headers."""\n'
    )
    out["data/__init__.py"] = (
        "# GENERATED by tools/gen_protocol.py. Do not edit.\n"
        '"""Generated data schemas: control records, coordinator log records."""\n'
    )
    all_data = dict(header_modules)
    all_data.update(data_modules)
    out["_index.py"] = index_code(api_modules, all_data)
    out["error_codes.py"] = error_codes_code()
    return out


GENERATED_DIRS = ("messages", "data")


def write(files: dict[str, str]) -> None:
    for d in GENERATED_DIRS:
        target = OUT_PKG / d
        if target.exists():
            for old in target.glob("*.py"):
                old.unlink()
        target.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        (OUT_PKG / rel).write_text(content)


def check(files: dict[str, str]) -> list[str]:
    problems = []
    expected = set(files)
    for d in GENERATED_DIRS:
        for p in (OUT_PKG / d).glob("*.py"):
            rel = p.relative_to(OUT_PKG).as_posix()
            if rel not in expected:
                problems.append(f"{rel}: not produced by the generator (stale file)")
    for rel, content in files.items():
        p = OUT_PKG / rel
        if not p.exists():
            problems.append(f"{rel}: missing")
            continue
        have = p.read_text()
        if have != content:
            diff = list(difflib.unified_diff(have.splitlines(), content.splitlines(), lineterm="", n=1))[:10]
            problems.append(f"{rel}: differs from a fresh generation\n  " + "\n  ".join(diff))
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="generate kwire.protocol from schemas/")
    ap.add_argument("--check", action="store_true", help="fail if the committed output is stale")
    args = ap.parse_args(argv)
    files = generate()
    if args.check:
        problems = check(files)
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    write(files)
    print(f"wrote {len(files)} files under {OUT_PKG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
