"""Import Kafka's broker and group configs as data: kwire/broker/core/kafka_broker_configs.json
and kafka_group_configs.json (GroupConfig: types, defaults, validators, broker synonyms and the
broker-side bounds GroupConfig.validate checks; the shape is documented in configs.py).

Reads the pinned Kafka commit (../shared/kafka-specs/SOURCE.md) from a checkout (``--kafka DIR``)
or a bare git dir (``--git DIR --commit SHA``, read with ``git show``), and records per broker
config only structural facts: type, default as DescribeConfigs renders it, how it may change
(read-only / per-broker / cluster-wide), whether it is a password, internal, and the file that
defines it. Where the facts come from:

* the ConfigDef chains merged into ``AbstractKafkaConfig.CONFIG_DEF`` (the ``.define`` calls);
* ``DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS`` and ``PER_BROKER_CONFIGS`` and the sets they are
  built from (each resolved from its own file);
* ``QuotaConfig.brokerQuotaConfigs()`` for the dynamic-only quota keys.

Java expressions are evaluated by a small evaluator (constants, literals, arithmetic, casts,
``TimeUnit``, ``List.of``...); anything it cannot evaluate stops the import with the location, so
the data is never silently wrong. ``--docs`` also writes docs/broker-configs.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "kwire" / "broker" / "core" / "kafka_broker_configs.json"
DOCS = ROOT / "docs" / "broker-configs.md"
PINNED = "d79bd502ec7fa49335afa422f442af80ed0ab8f6"
# The snapshot `fetch github:confluentinc/kafka` brings holds the pinned trunk commit (SOURCE.md);
# `fetch github:apache/kafka` is an older snapshot without it.
DEFAULT_GIT = Path("/work/.mirror/confluentinc+kafka/repo")

ADMIN_CONFIG = "server/src/main/java/org/apache/kafka/server/config/AbstractKafkaConfig.java"
DYNAMIC_CONFIG = "server/src/main/java/org/apache/kafka/server/config/DynamicBrokerConfig.java"
QUOTA_CONFIG = "server-common/src/main/java/org/apache/kafka/server/config/QuotaConfig.java"
SOURCE_ROOTS = ("clients/src/main/java/", "server/src/main/java/", "server-common/src/main/java/",
                "storage/src/main/java/", "raft/src/main/java/", "group-coordinator/src/main/java/",
                "share-coordinator/src/main/java/", "transaction-coordinator/src/main/java/",
                "coordinator-common/src/main/java/", "metadata/src/main/java/",
                "group-coordinator/group-coordinator-api/src/main/java/")
TYPES = {"BOOLEAN": "boolean", "STRING": "string", "INT": "int", "SHORT": "short", "LONG": "long",
         "DOUBLE": "double", "LIST": "list", "CLASS": "class", "PASSWORD": "password"}
JAVA_BUILTINS: dict[str, Any] = {
    "Long.MAX_VALUE": 2**63 - 1, "Long.MIN_VALUE": -(2**63), "Integer.MAX_VALUE": 2**31 - 1,
    "Integer.MIN_VALUE": -(2**31), "Short.MAX_VALUE": 2**15 - 1, "Double.MAX_VALUE": sys.float_info.max,
    "Deflater.DEFAULT_COMPRESSION": -1,  # java.util.zip
}
TIME_UNITS = {"NANOSECONDS": 1e-6, "MICROSECONDS": 1e-3, "MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000,
              "HOURS": 3_600_000, "DAYS": 86_400_000}


class ImportError_(Exception):
    """Something in the Kafka source the importer does not understand."""


class NoDefault:
    """ConfigDef.NO_DEFAULT_VALUE: a required config."""


NO_DEFAULT = NoDefault()


# ---------------------------------------------------------------- reading the source tree

class Source:
    """Files of one Kafka commit, from a work tree or through ``git show``."""

    def __init__(self, kafka: Path | None, git: Path | None, commit: str) -> None:
        self.kafka, self.git, self.commit = kafka, git, commit
        self._cache: dict[str, str] = {}
        self.paths = self._list()

    def _list(self) -> list[str]:
        if self.kafka is not None:
            out = []
            for root in SOURCE_ROOTS:
                base = self.kafka / root
                for dirpath, _, files in os.walk(base):
                    out += [str(Path(dirpath, f).relative_to(self.kafka)) for f in files if f.endswith(".java")]
            return sorted(out)
        assert self.git is not None
        res = subprocess.run(["git", "--git-dir", str(self.git), "ls-tree", "-r", "--name-only", self.commit],
                             check=True, capture_output=True, text=True)
        return sorted(p for p in res.stdout.splitlines() if p.endswith(".java") and p.startswith(SOURCE_ROOTS))

    def read(self, path: str) -> str:
        if path not in self._cache:
            if self.kafka is not None:
                text = (self.kafka / path).read_text(encoding="utf-8")
            else:
                assert self.git is not None
                text = subprocess.run(["git", "--git-dir", str(self.git), "show", f"{self.commit}:{path}"],
                                      check=True, capture_output=True, text=True).stdout
            self._cache[path] = _strip_comments(text)
        return self._cache[path]


def _literal_end(text: str, i: int) -> int:
    """Index just past the string or char literal whose opening quote is at ``i``."""
    quote, j = text[i], i + 1
    while text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _strip_comments(text: str) -> str:
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = _literal_end(text, i)
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
            out.append(" ")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _scan(text: str, start: int, *, to_semicolon: bool) -> int:
    """Just past the bracket closing the one at ``start``, or (``to_semicolon``) the index of the
    ``;`` ending the statement that starts there; brackets nest, string literals are skipped."""
    depth, i = 0, start
    while True:
        c = text[i]
        if c == '"':
            i = _literal_end(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0 and not to_semicolon:
                return i + 1
        elif c == ";" and depth == 0 and to_semicolon:
            return i
        i += 1


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket closing the one at ``start`` (strings skipped)."""
    return _scan(text, start, to_semicolon=False)


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated parts of an argument list (without the parentheses)."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = _literal_end(text, i)
            cur.append(text[i:j])
            i = j
            continue
        if c in "([{<" and not (c == "<" and not re.match(r"<\s*[A-Z?]", text[i:])):
            depth += 1
        elif c in ")]}>" and not (c == ">" and depth == 0):
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _statement(text: str, start: int) -> str:
    """The text from ``start`` to the ``;`` that ends the statement."""
    return text[start:_scan(text, start, to_semicolon=True)]


# ---------------------------------------------------------------- Java classes and constants

@dataclass
class JavaFile:
    path: str
    text: str
    package: str
    imports: dict[str, str] = field(default_factory=dict)        # simple name -> FQN
    static_imports: dict[str, str] = field(default_factory=dict)  # member -> class FQN
    static_wildcards: list[str] = field(default_factory=list)     # class FQNs


class Project:
    def __init__(self, src: Source) -> None:
        self.src = src
        self.by_fqn: dict[str, str] = {}
        for p in src.paths:
            for root in SOURCE_ROOTS:
                if p.startswith(root):
                    self.by_fqn[p[len(root):-5].replace("/", ".")] = p
        self._files: dict[str, JavaFile] = {}
        self._values: dict[tuple[str, str], Any] = {}

    def file(self, path: str) -> JavaFile:
        if path not in self._files:
            text = self.src.read(path)
            m = re.search(r"^\s*package\s+([\w.]+)\s*;", text, re.M)
            jf = JavaFile(path, text, m.group(1) if m else "")
            for m in re.finditer(r"^\s*import\s+(static\s+)?([\w.]+)(\.\*)?\s*;", text, re.M):
                fqn = m.group(2)
                if m.group(1) and m.group(3):
                    jf.static_wildcards.append(fqn)
                elif m.group(1):
                    cls, _, member = fqn.rpartition(".")
                    jf.static_imports[member] = cls
                elif not m.group(3):
                    jf.imports[fqn.rpartition(".")[2]] = fqn
            self._files[path] = jf
        return self._files[path]

    def class_path(self, jf: JavaFile, name: str) -> tuple[str, str] | None:
        """(path, nested class path) of a class named in ``jf`` ("Outer" or "Outer.Inner")."""
        head, _, rest = name.partition(".")
        fqn = jf.imports.get(head) or f"{jf.package}.{head}"
        if fqn in self.by_fqn:
            return self.by_fqn[fqn], rest
        # a class nested in a class this file imports or in this file itself
        own = Path(jf.path).stem
        if head != own and re.search(rf"\b(class|interface|enum)\s+{head}\b", jf.text):
            return jf.path, name
        return None

    def field_expr(self, path: str, name: str) -> str | None:
        text = self.file(path).text
        m = re.search(rf"\b(?:static\s+final|final\s+static|public\s+final|String|int|long|short|double|boolean)"
                      rf"\s+(?:[\w.<>\[\], ?]+\s+)?{re.escape(name)}\s*=", text)
        if m is None:
            return None
        return _statement(text, m.end()).strip()

    def constant(self, jf: JavaFile, name: str) -> Any:
        """The value of a bare or qualified constant as the file ``jf`` sees it."""
        if name in JAVA_BUILTINS:
            return JAVA_BUILTINS[name]
        if "." not in name:
            candidates = [jf.path]
            if name in jf.static_imports and jf.static_imports[name] in self.by_fqn:
                candidates.insert(0, self.by_fqn[jf.static_imports[name]])
            candidates += [self.by_fqn[c] for c in jf.static_wildcards if c in self.by_fqn]
            # an interface or superclass in the same package (constants inherited)
            for m in re.finditer(r"\b(?:extends|implements)\s+([\w., ]+?)\s*\{", jf.text):
                for sup in m.group(1).replace("implements", ",").split(","):
                    found = self.class_path(jf, sup.strip().split("<")[0])
                    if found:
                        candidates.append(found[0])
            for p in candidates:
                v = self._value(p, name)
                if v is not None:
                    return v
            raise ImportError_(f"{jf.path}: cannot resolve {name}")
        cls, _, member = name.rpartition(".")
        found = self.class_path(jf, cls)
        if found is None:
            raise ImportError_(f"{jf.path}: cannot resolve class {cls} of {name}")
        v = self._value(found[0], member)
        if v is None:
            raise ImportError_(f"{jf.path}: cannot resolve {name} in {found[0]}")
        return v

    def _value(self, path: str, name: str) -> Any:
        key = (path, name)
        if key not in self._values:
            expr = self.field_expr(path, name)
            self._values[key] = None if expr is None else Evaluator(self, self.file(path)).eval(expr)
        return self._values[key]


# ---------------------------------------------------------------- expression evaluator

TOKEN = re.compile(r"""\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<chr>'(?:[^'\\]|\\.)')|
    (?P<num>0[xX][0-9a-fA-F_]+[lL]?|(?:\d[\d_]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+)[lLdDfF]?)|
    (?P<name>[A-Za-z_$][\w$]*)|(?P<op>::|->|[-+*/%(),.?:<>!=&|\[\]{}]))""", re.X)


class Evaluator:
    """Evaluates the Java constant expressions config definitions use."""

    def __init__(self, project: Project, jf: JavaFile) -> None:
        self.project, self.jf = project, jf
        self.toks: list[tuple[str, str]] = []
        self.i = 0

    def eval(self, expr: str) -> Any:
        self.toks, pos = [], 0
        expr = expr.strip()
        while pos < len(expr):
            m = TOKEN.match(expr, pos)
            if m is None or m.end() == pos:
                raise ImportError_(f"{self.jf.path}: cannot read {expr!r}")
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
            while pos < len(expr) and expr[pos].isspace():
                pos += 1
        self.i = 0
        self.expr = expr
        pm = PROTOCOL_MAP.fullmatch(re.sub(r"\s+", "", expr))
        if pm:
            return self._protocol_map(pm.group(1))
        v = self._sum()
        if self.i != len(self.toks):
            raise ImportError_(f"{self.jf.path}: cannot evaluate {expr!r}")
        return v

    def _peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def _take(self, want: str | None = None) -> str:
        if self.i >= len(self.toks) or (want is not None and self.toks[self.i][1] != want):
            raise ImportError_(f"{self.jf.path}: cannot evaluate {self.expr!r}")
        self.i += 1
        return self.toks[self.i - 1][1]

    def _sum(self) -> Any:
        v = self._product()
        while self._peek() in ("+", "-"):
            op = self._take()
            r = self._product()
            if op == "+":
                v = f"{_java_str(v)}{_java_str(r)}" if isinstance(v, str) or isinstance(r, str) else v + r
            else:
                v = v - r
        return v

    def _product(self) -> Any:
        v = self._unary()
        while self._peek() in ("*", "/", "%"):
            op = self._take()
            r = self._unary()
            if op == "*":
                v = v * r
            elif op == "%":
                v = v % r
            else:
                v = int(v / r) if isinstance(v, int) and isinstance(r, int) else v / r
        return v

    def _unary(self) -> Any:
        if self._peek() == "-":
            self._take()
            return -self._unary()
        if self._peek() == "(" and self.i + 2 < len(self.toks) and self.toks[self.i + 2][1] == ")" \
                and self.toks[self.i + 1][1] in ("int", "long", "short", "double", "float", "byte"):
            self._take()
            cast = self._take()
            self._take(")")
            v = self._unary()
            return float(v) if cast in ("double", "float") else int(v)
        return self._primary()

    def _args(self) -> list[Any]:
        self._take("(")
        out = []
        while self._peek() != ")":
            out.append(self._sum())
            if self._peek() == ",":
                self._take()
        self._take(")")
        return out

    def _primary(self) -> Any:
        kind, tok = self.toks[self.i] if self.i < len(self.toks) else ("", "")
        if tok == "(":
            self._take()
            v = self._sum()
            self._take(")")
            return v
        if kind == "str":
            self._take()
            return json.loads(tok)
        if kind == "num":
            self._take()
            t = tok.replace("_", "")
            if t[:2].lower() == "0x":
                return int(t.rstrip("lL"), 16)
            if t[-1] in "lL":
                return int(t[:-1])
            if t[-1] in "dDfF" or "." in t or "e" in t.lower():
                return float(t.rstrip("dDfF"))
            return int(t)
        if kind != "name":
            raise ImportError_(f"{self.jf.path}: cannot evaluate {self.expr!r}")
        if tok in ("true", "false"):
            self._take()
            return tok == "true"
        if tok == "null":
            self._take()
            return None
        # a dotted name, possibly ending in (or passing through) calls
        parts = [self._take()]
        while self._peek() == ".":
            self._take()
            parts.append(self._take())
            if self._peek() == "(":
                return self._call(parts, self._args())
        if self._peek() == "(":
            return self._call(parts, self._args())
        name = ".".join(parts)
        if name == "ConfigDef.NO_DEFAULT_VALUE" or name == "NO_DEFAULT_VALUE":
            return NO_DEFAULT
        if parts[-1] == "class":
            return self._class_name(".".join(parts[:-1]))
        if len(parts) >= 2 and parts[-1] == "name":  # an enum constant's `name` field
            return self._enum_field(".".join(parts[:-1]))
        return self.project.constant(self.jf, name)

    def _class_name(self, cls: str) -> str:
        found = self.project.class_path(self.jf, cls)
        if found is not None:
            for root in SOURCE_ROOTS:
                if found[0].startswith(root):
                    outer = found[0][len(root):-5].replace("/", ".")
                    return outer + ("$" + found[1].replace(".", "$") if found[1] else "")
        return self.jf.imports.get(cls, cls)

    def _enum_field(self, const: str) -> str:
        """``Enum.CONST.name``: the constant's first string constructor argument."""
        cls, _, member = const.rpartition(".")
        found = self.project.class_path(self.jf, cls)
        if found is None:
            raise ImportError_(f"{self.jf.path}: cannot resolve enum {cls}")
        text = self.project.file(found[0]).text
        m = re.search(rf"\b{member}\s*\(([^)]*)\)", text)
        if m is None:
            raise ImportError_(f"{self.jf.path}: cannot resolve {const}.name")
        for a in _split_args(m.group(1)):
            if a.startswith('"'):
                return str(json.loads(a))
        raise ImportError_(f"{self.jf.path}: {const} has no string name")

    def _protocol_map(self, enum: str) -> str:
        """``listener:protocol`` for each constant of the enum, in the HashMap's iteration order."""
        found = self.project.class_path(self.jf, enum)
        if found is None:
            raise ImportError_(f"{self.jf.path}: cannot resolve enum {enum}")
        text = self.project.file(found[0]).text
        body = text[text.index("{", re.search(rf"enum\s+{enum}\b", text).end()):]  # type: ignore[union-attr]
        names = re.findall(r"^\s*([A-Z_]+)\s*\(", body[:body.index(";")], re.M)
        return ",".join(f"{n}:{n}" for n in _java_hashmap_order(names))

    def _enum_method(self, cls: str, const: str, method: str) -> Any:
        """``Enum.CONST.method()`` where the constant's body returns a constant expression."""
        found = self.project.class_path(self.jf, cls)
        if found is None:
            raise ImportError_(f"{self.jf.path}: cannot resolve enum {cls}")
        text = self.project.file(found[0]).text
        m = re.search(rf"\b{const}\s*\(", text)
        if m is None:
            raise ImportError_(f"{self.jf.path}: no {cls}.{const}")
        body_start = text.index("{", _balanced(text, m.end() - 1))
        body = text[body_start:_balanced(text, body_start)]
        bm = re.search(rf"\b{method}\s*\(\s*\)\s*\{{\s*return\s+([^;]+);", body)
        if bm is None:
            raise ImportError_(f"{self.jf.path}: cannot read {cls}.{const}.{method}()")
        return Evaluator(self.project, self.project.file(found[0])).eval(bm.group(1))

    def _call(self, parts: list[str], args: list[Any]) -> Any:
        method = parts[-1]
        target = ".".join(parts[:-1])
        v: Any
        if len(parts) == 3 and parts[0] == "TimeUnit" and parts[1] in TIME_UNITS:
            ms = args[0] * TIME_UNITS[parts[1]]
            factor = {"toMillis": 1, "toSeconds": 1e-3, "toMinutes": 1 / 60_000, "toNanos": 1e6,
                      "toMicros": 1e3, "toHours": 1 / 3_600_000}[method]
            v = int(ms * factor)
        elif method in ("of", "asList", "emptyList", "emptySet", "singletonList", "copyOf") and target in (
                "List", "Set", "Arrays", "Collections"):
            v = [x for a in args for x in (a if isinstance(a, list) else [a])]
        elif method == "join" and target == "String":
            sep, *rest = args
            items = [x for a in rest for x in (a if isinstance(a, list) else [a])]
            v = sep.join(items)
        elif method == "serverSynonym" and target == "ServerTopicConfigSynonyms":
            found = self.project.class_path(self.jf, target)
            assert found is not None
            v = topic_config_synonyms(self.project, found[0])[args[0]]
        elif method in ("name", "toString") and not args and len(parts) >= 3 and parts[-2].isupper():
            v = parts[-2]  # Enum.name(); these enums do not override toString
        elif not args and len(parts) >= 3 and parts[-2].isupper():
            v = self._enum_method(".".join(parts[:-2]), parts[-2], method)
        elif method == "getName" and parts[-2] == "class":
            v = self._class_name(".".join(parts[:-2]))
        elif method in ("toString", "valueOf") and target in ("Integer", "Long", "String", "Boolean"):
            v = _java_str(args[0])
        else:
            raise ImportError_(f"{self.jf.path}: cannot evaluate call {'.'.join(parts)}(...) in {self.expr!r}")
        # a call chained on the result (e.g. `.toString()`)
        while self._peek() == ".":
            self._take()
            nxt = self._take()
            a = self._args()
            if nxt in ("toString", "name") and not a:
                v = _java_str(v)
            else:
                raise ImportError_(f"{self.jf.path}: cannot evaluate .{nxt}() in {self.expr!r}")
        return v


# Collectors.toMap(ListenerName::forSecurityProtocol, ...) then joined: a HashMap's order
PROTOCOL_MAP = re.compile(r'Arrays\.stream\((\w+)\.values\(\)\)\.collect\(Collectors\.toMap\(ListenerName::'
                          r'forSecurityProtocol,sp->sp\)\)\.entrySet\(\)\.stream\(\)\.map\(entry->entry\.getKey\(\)'
                          r'\.value\(\)\+":"\+entry\.getValue\(\)\.name\(\)\)\.collect\(Collectors\.joining\(","\)\)')


def _java_hashmap_order(keys: list[str]) -> list[str]:
    """Iteration order of a java.util.HashMap (16 buckets) holding these String keys."""
    def spread(k: str) -> int:
        h = 0
        for ch in k:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & 15
    return sorted(keys, key=lambda k: (spread(k), keys.index(k)))


def _java_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return _java_double(v)
    if isinstance(v, list):
        return ",".join(_java_str(x) for x in v)
    return str(v)


def _java_double(x: float) -> str:
    """Double.toString: plain between 10^-3 and 10^7, else d.dddE±n."""
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        s = repr(float(x))
        return s if "e" not in s else f"{x:.1f}"
    mant, exp = f"{x:e}".split("e")
    mant = mant.rstrip("0")
    mant = mant + "0" if mant.endswith(".") else mant
    return f"{mant}E{int(exp)}"


# ---------------------------------------------------------------- config definitions

@dataclass
class Definition:
    name: str
    type: str
    default: Any
    internal: bool
    source: str


# Defaults the evaluator cannot follow (an enum constant's field), read by hand from the same
# commit: (file, default expression) -> value. Checked by the import: an entry no longer used fails.
HAND_READ: dict[tuple[str, str], Any] = {
    # CompressionType.NONE((byte) 0, ...): its id
    ("GroupCoordinatorConfig.java", "(int) OFFSETS_TOPIC_COMPRESSION_CODEC_DEFAULT.id"): 0,
    ("ShareCoordinatorConfig.java", "(int) STATE_TOPIC_COMPRESSION_CODEC_DEFAULT.id"): 0,
    # the names of the built-in assignor instances (UniformAssignor.NAME, RangeAssignor.NAME, ...)
    ("GroupCoordinatorConfig.java", "CONSUMER_GROUP_ASSIGNORS_DEFAULT"): ["uniform", "range"],
    ("GroupCoordinatorConfig.java", "SHARE_GROUP_ASSIGNORS_DEFAULT"): ["simple"],
    ("GroupCoordinatorConfig.java", "STREAMS_GROUP_ASSIGNORS_DEFAULT"): ["sticky"],
    ("GroupCoordinatorConfig.java", "STREAMS_GROUP_TOPOLOGY_DESCRIPTION_PLUGIN_CLASS_DEFAULT"): None,
    # GroupConfig: ShareGroupAutoOffsetResetStrategy.LATEST.name() and IsolationLevel's toString()
    # both lower-case the constant's name
    ("GroupConfig.java", "SHARE_AUTO_OFFSET_RESET_DEFAULT"): "latest",
    ("GroupConfig.java", "SHARE_ISOLATION_LEVEL_DEFAULT"): "read_uncommitted",
    # the JDK's KeyManagerFactory/TrustManagerFactory default algorithms (OpenJDK)
    ("BrokerSecurityConfigs.java", "SslConfigs.DEFAULT_SSL_KEYMANGER_ALGORITHM"): "SunX509",
    ("BrokerSecurityConfigs.java", "SslConfigs.DEFAULT_SSL_TRUSTMANAGER_ALGORITHM"): "PKIX",
}
UNRESOLVED: list[str] = []


def _chain(text: str, start: int) -> list[tuple[str, list[str]]]:
    """The ``.define(...)`` / ``.defineInternal(...)`` calls of a ConfigDef chain from ``start``."""
    body = _statement(text, start)
    out = []
    for m in re.finditer(r"\.(define|defineInternal)\s*\(", body):
        end = _balanced(body, m.end() - 1)
        out.append((m.group(1), _split_args(body[m.end():end - 1])))
    return out


def definitions(project: Project, path: str, anchor: str) -> list[Definition]:
    jf = project.file(path)
    m = re.search(anchor, jf.text)
    if m is None:
        raise ImportError_(f"{path}: no {anchor!r}")
    ev = Evaluator(project, jf)
    out = []
    for kind, args in _chain(jf.text, m.end()):
        if len(args) < 3:
            continue  # define(ConfigKey)
        name = ev.eval(args[0])
        tm = re.fullmatch(r"(?:ConfigDef\.)?(?:Type\.)?([A-Z]+)", args[1])
        if tm is None or tm.group(1) not in TYPES:
            raise ImportError_(f"{path}: {name}: cannot read type {args[1]!r}")
        ctype = TYPES[tm.group(1)]
        imp = [i for i, a in enumerate(args) if re.fullmatch(r"(?:ConfigDef\.)?(?:Importance\.)?(HIGH|MEDIUM|LOW)", a)]
        if kind == "defineInternal" and len(args) == 4 and not imp:
            imp = [3]
        if not imp:
            raise ImportError_(f"{path}: {name}: no importance in {args!r}")
        key = (Path(path).name, re.sub(r"\s+", " ", args[2]))
        if imp[0] == 2:
            default = NO_DEFAULT
        elif key in HAND_READ:
            default = HAND_READ[key]
        else:
            try:
                default = ev.eval(args[2])
            except ImportError_ as exc:
                UNRESOLVED.append(f"{key}: {exc}")
                default = None
        out.append(Definition(name, ctype, default, kind == "defineInternal", path))
    return out


def render_default(d: Definition) -> str | None:
    """The default as DescribeConfigs shows it (ConfigDef.convertToString); null for passwords/none."""
    v = d.default
    if v is NO_DEFAULT or v is None or d.type == "password":
        return None
    if d.type == "list":
        items = v if isinstance(v, list) else [x.strip() for x in str(v).split(",") if x.strip()]
        return ",".join(_java_str(x) for x in items)
    if d.type == "double":
        return _java_double(float(v))
    if d.type in ("int", "long", "short") and not isinstance(v, str):
        return str(int(v))
    return _java_str(v)


# ---------------------------------------------------------------- dynamic sets

def string_set(project: Project, path: str, expr: str) -> set[str]:
    """A Set<String> expression of DynamicBrokerConfig and the classes it reads."""
    jf = project.file(path)
    expr = re.sub(r"\s+", " ", expr.strip())
    m = re.fullmatch(r"Stream\.of\((.*)\)\s*\.flatMap\(.*?\)(?:\s*\.filter\((.*?)\))?\s*\.collect\(.*\)", expr)
    if m:
        out: set[str] = set()
        for part in _split_args(m.group(1)):
            out |= string_set(project, path, part)
        if m.group(2):
            fm = re.fullmatch(r"c -> !(\w+)\.contains\(c\)", m.group(2).strip())
            if fm is None:
                raise ImportError_(f"{path}: cannot read filter {m.group(2)!r}")
            out -= string_set(project, path, fm.group(1))
        return out
    m = re.fullmatch(r"Set\.copyOf\((\w+)\(\)\.names\(\)\)", expr)
    if m:
        return {d.name for d in definitions(project, path, rf"{m.group(1)}\(\)\s*\{{")}
    m = re.fullmatch(r"(?:Set|List)\.(?:of|copyOf)\((.*)\)", expr)
    if m:
        ev = Evaluator(project, jf)
        vals: set[str] = set()
        for a in _split_args(m.group(1)):
            v = ev.eval(a)
            vals |= set(v) if isinstance(v, list) else {v}
        return vals
    m = re.fullmatch(r"ServerTopicConfigSynonyms\.TOPIC_CONFIG_SYNONYMS\.values\(\)", expr)
    if m:
        found = project.class_path(jf, "ServerTopicConfigSynonyms")
        assert found is not None
        return topic_config_synonym_heads(project, found[0])
    m = re.fullmatch(r"([\w.]+)", expr)
    if m:
        name = m.group(1)
        cls, _, member = name.rpartition(".")
        if cls:
            found = project.class_path(jf, cls)
            if found is None:
                raise ImportError_(f"{path}: cannot resolve {cls}")
            # nested classes (DynamicBrokerConfig.DynamicLogConfig) live in the same file
            target, nested = found
            scope = project.file(target).text
            if nested:
                cm = re.search(rf"class\s+{nested.split('.')[-1]}\b", scope)
                if cm:
                    scope = scope[cm.start():]
            fm = re.search(rf"\b{member}\s*=", scope)
            if fm is None:
                raise ImportError_(f"{path}: cannot find {name}")
            return string_set(project, target, _statement(scope, fm.end()))
        expr2 = project.field_expr(path, name)
        if expr2 is None:
            raise ImportError_(f"{path}: cannot find {name}")
        return string_set(project, path, expr2)
    raise ImportError_(f"{path}: cannot read set {expr!r}")


def topic_config_synonym_heads(project: Project, path: str) -> set[str]:
    """The first broker synonym of each topic config (TOPIC_CONFIG_SYNONYMS' values)."""
    return set(topic_config_synonyms(project, path).values())


def topic_config_synonyms(project: Project, path: str) -> dict[str, str]:
    """Topic config -> its first broker synonym (what TOPIC_CONFIG_SYNONYMS maps it to)."""
    jf = project.file(path)
    ev = Evaluator(project, jf)
    prefixes = {"sameName": "", "single": "", "sameNameWithLogPrefix": "LOG_PREFIX",
                "singleWithLogPrefix": "LOG_PREFIX", "listWithLogPrefix": "LOG_PREFIX",
                "sameNameWithLogCleanerPrefix": "LOG_CLEANER_PREFIX",
                "singleWithLogCleanerPrefix": "LOG_CLEANER_PREFIX"}
    m = re.search(r"ALL_TOPIC_CONFIG_SYNONYMS\s*=\s*Utils\.mkMap\(", jf.text)
    if m is None:
        raise ImportError_(f"{path}: no ALL_TOPIC_CONFIG_SYNONYMS")
    end = _balanced(jf.text, m.end() - 1)
    out = {}
    for call in _split_args(jf.text[m.end():end - 1]):
        cm = re.fullmatch(r"(\w+)\((.*)\)", call, re.S)
        if cm is None or cm.group(1) not in prefixes:
            raise ImportError_(f"{path}: cannot read synonym {call!r}")
        args = _split_args(cm.group(2))
        prefix = ev.eval(prefixes[cm.group(1)]) if prefixes[cm.group(1)] else ""
        if cm.group(1).startswith("sameName"):
            base = ev.eval(args[0])
        elif cm.group(1).startswith("list"):
            sm = re.fullmatch(r"new ConfigSynonym\((.*?)(?:,.*)?\)", args[1], re.S)
            assert sm is not None
            base = ev.eval(sm.group(1))
        else:
            base = ev.eval(args[1])
        out[ev.eval(args[0])] = prefix + base
    return out


# ---------------------------------------------------------------- the import

def build(src: Source) -> dict[str, Any]:
    project = Project(src)
    admin = project.file(ADMIN_CONFIG)
    m = re.search(r"CONFIG_DEF\s*=\s*Utils\.mergeConfigs\(\s*List\.of\(", admin.text)
    if m is None:
        raise ImportError_(f"{ADMIN_CONFIG}: no CONFIG_DEF")
    end = _balanced(admin.text, m.end() - 1)
    defs: dict[str, Definition] = {}
    for part in _split_args(admin.text[m.end():end - 1]):
        pm = re.fullmatch(r"(\w+)\.(\w+)(\(\))?", part)
        if pm is None:
            raise ImportError_(f"{ADMIN_CONFIG}: cannot read {part!r}")
        found = project.class_path(admin, pm.group(1))
        if found is None:
            raise ImportError_(f"{ADMIN_CONFIG}: cannot resolve {pm.group(1)}")
        anchor = rf"{pm.group(2)}\(\)\s*\{{" if pm.group(3) else rf"\b{pm.group(2)}\s*="
        for d in definitions(project, found[0], anchor):
            defs.setdefault(d.name, d)  # mergeConfigs keeps the first definition
    if UNRESOLVED:
        raise ImportError_("defaults not evaluated:\n" + "\n".join(UNRESOLVED))
    quota_only = {d.name: d for d in definitions(project, QUOTA_CONFIG, r"brokerQuotaConfigs\(\)\s*\{")
                  if d.name not in defs}
    dyn = project.file(DYNAMIC_CONFIG).text

    def field_set(name: str) -> set[str]:
        fm = re.search(rf"\b{name}\s*=", dyn)
        if fm is None:
            raise ImportError_(f"{DYNAMIC_CONFIG}: no {name}")
        return string_set(project, DYNAMIC_CONFIG, _statement(dyn, fm.end()))

    all_dynamic = field_set("ALL_DYNAMIC_CONFIGS")
    per_broker = field_set("PER_BROKER_CONFIGS")
    security = field_set("DYNAMIC_SECURITY_CONFIGS")
    unknown = sorted((all_dynamic | per_broker) - set(defs) - set(quota_only))
    if unknown:
        raise ImportError_(f"dynamic configs without a definition: {unknown}")
    configs: dict[str, dict[str, Any]] = {}
    for name in sorted(set(defs) | set(quota_only)):
        d = defs.get(name) or quota_only[name]
        mode = "read-only" if name not in all_dynamic else "per-broker" if name in per_broker else "cluster-wide"
        entry: dict[str, Any] = {"type": d.type, "default": render_default(d), "mode": mode,
                                 "sensitive": d.type == "password", "internal": d.internal,
                                 "required": d.default is NO_DEFAULT, "source": d.source}
        if name in security:
            entry["listener_prefix_only"] = True
        if name not in defs:
            entry["dynamic_only"] = True  # not in CONFIG_DEF: never listed, only set
        configs[name] = entry
    return {"kafka": {"repository": "apache/kafka", "commit": src.commit}, "configs": configs}


# ---------------------------------------------------------------- group configs

GROUP_CONFIG = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupConfig.java"
GROUP_OUT = ROOT / "kwire" / "broker" / "core" / "kafka_group_configs.json"
# the broker-side config classes GroupConfig.validate reads bounds from (accessor -> config key)
BOUND_SOURCES = ("group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupCoordinatorConfig.java",
                 "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/share/ShareGroupConfig.java")


def _validator(ev: Evaluator, path: str, name: str, expr: str) -> dict[str, Any]:
    """A ConfigDef validator as data: a range (atLeast/between), a choice (ValidString.in), or the
    name of a custom validator class (kwire maps it to a check, configs.py's _GROUP_CHECKS)."""
    expr = re.sub(r"\s+", " ", expr.strip())
    m = re.fullmatch(r"(?:ConfigDef\.)?(?:Range\.)?atLeast\((.*)\)", expr)
    if m:
        return {"min": ev.eval(m.group(1))}
    m = re.fullmatch(r"(?:ConfigDef\.)?(?:Range\.)?between\((.*)\)", expr)
    if m:
        lo, hi = _split_args(m.group(1))
        return {"min": ev.eval(lo), "max": ev.eval(hi)}
    m = re.fullmatch(r"(?:ConfigDef\.)?(?:ValidString\.)?in\((.*)\)", expr)
    if m:
        out = []
        for a in _split_args(m.group(1)):
            am = re.fullmatch(r"IsolationLevel\.(\w+)\.toString\(\)", a)  # enum constant's toString(): lower case
            out.append(am.group(1).lower() if am else ev.eval(a))
        return {"choices": out}
    m = re.fullmatch(r"new ([\w.]+)\(\)", expr)
    if m:
        return {"validator": m.group(1)}
    m = re.fullmatch(r"ConfigDef\.ValidList\.anyNonDuplicateValues\((true|false), (true|false)\)", expr)
    if m:
        return {"validator": "ValidList.anyNonDuplicateValues", "empty_allowed": m.group(1) == "true",
                "null_allowed": m.group(2) == "true"}
    raise ImportError_(f"{path}: {name}: cannot read validator {expr!r}")


def _accessor_key(project: Project, method: str) -> str:
    """The config key a GroupCoordinatorConfig/ShareGroupConfig accessor returns (``method()``
    returns a field set from ``config.getInt(KEY)``, or reads ``config.getInt(KEY)`` itself)."""
    for path in BOUND_SOURCES:
        jf = project.file(path)
        m = re.search(rf"public\s+\w+\s+{method}\s*\(\s*\)\s*\{{\s*return\s+([^;]+);", jf.text)
        if m is None:
            continue
        body = m.group(1).strip()
        gm = re.fullmatch(r"config\.get\w+\((.+)\)", body)
        if gm is None:
            fm = re.search(rf"(?:this\.)?{re.escape(body)}\s*=\s*config\.get\w+\(([^;]+)\);", jf.text)
            if fm is None:
                raise ImportError_(f"{path}: cannot follow {method}() to a config key")
            key_expr = fm.group(1)
        else:
            key_expr = gm.group(1)
        return str(Evaluator(project, jf).eval(key_expr))
    raise ImportError_(f"no accessor {method}() in {BOUND_SOURCES}")


def group_build(src: Source) -> dict[str, Any]:
    """GroupConfig.CONFIG_DEF, its broker synonyms (ALL_GROUP_CONFIG_SYNONYMS) and the broker-side
    bounds GroupConfig.validateValues checks, as data."""
    project = Project(src)
    jf = project.file(GROUP_CONFIG)
    ev = Evaluator(project, jf)
    m = re.search(r"CONFIG_DEF\s*=\s*new ConfigDef\(\)", jf.text)
    if m is None:
        raise ImportError_(f"{GROUP_CONFIG}: no CONFIG_DEF")
    configs: dict[str, dict[str, Any]] = {}
    for d, (_, args) in zip(definitions(project, GROUP_CONFIG, r"CONFIG_DEF\s*=\s*new ConfigDef\(\)"),
                            _chain(jf.text, m.end()), strict=True):
        imp = [i for i, a in enumerate(args) if re.fullmatch(r"(?:ConfigDef\.)?(?:Importance\.)?(HIGH|MEDIUM|LOW)", a)]
        entry: dict[str, Any] = {"type": d.type, "default": render_default(d), "synonym": None, "bounds": None,
                                 "source": d.source}
        if imp[0] == 4:
            entry.update(_validator(ev, GROUP_CONFIG, d.name, args[3]))
        try:
            entry["doc"] = ev.eval(args[imp[0] + 1]) if len(args) > imp[0] + 1 else ""
        except ImportError_:
            entry["doc"] = ""
        configs[d.name] = entry
    if UNRESOLVED:
        raise ImportError_("defaults not evaluated:\n" + "\n".join(UNRESOLVED))
    sm = re.search(r"ALL_GROUP_CONFIG_SYNONYMS\s*=\s*Map\.ofEntries\(", jf.text)
    if sm is None:
        raise ImportError_(f"{GROUP_CONFIG}: no ALL_GROUP_CONFIG_SYNONYMS")
    end = _balanced(jf.text, sm.end() - 1)
    for entry_expr in _split_args(jf.text[sm.end():end - 1]):
        em = re.fullmatch(r"Map\.entry\((\w+),\s*Optional\.(?:of\((.+)\)|empty\(\))\)", entry_expr.strip(), re.S)
        if em is None:
            raise ImportError_(f"{GROUP_CONFIG}: cannot read synonym {entry_expr!r}")
        configs[ev.eval(em.group(1))]["synonym"] = ev.eval(em.group(2)) if em.group(2) else None
    vm = re.search(r"private static void validateValues\(", jf.text)
    if vm is None:
        raise ImportError_(f"{GROUP_CONFIG}: no validateValues")
    body = jf.text[vm.start():_balanced(jf.text, jf.text.index("{", vm.end()))]
    cross: list[list[str]] = []
    for cm in re.finditer(r"\b(validateIntRange|validateIntMax|validateIntMin|validateSessionExceedsHeartbeat)\s*\(",
                          body):
        args = _split_args(body[cm.end():_balanced(body, cm.end() - 1) - 1])
        keys = [_accessor_key(project, am.group(1)) if (am := re.fullmatch(r"\w+\.(\w+)\(\)", a)) else None
                for a in args]
        kind = cm.group(1)
        if kind == "validateSessionExceedsHeartbeat":
            cross.append([ev.eval(args[1]), ev.eval(args[3])])
            continue
        name = ev.eval(args[1])
        configs[name]["bounds"] = {"validateIntRange": [keys[2], keys[3] if len(keys) > 3 else None],
                                   "validateIntMax": [None, keys[2]], "validateIntMin": [keys[2], None]}[kind]
    return {"kafka": {"repository": "apache/kafka", "commit": src.commit}, "configs": configs,
            "session_exceeds_heartbeat": cross}


def render_docs(data: dict[str, Any]) -> str:
    """docs/broker-configs.md: which broker configs kwire acts on and which it only stores."""
    sys.path.insert(0, str(ROOT))
    from kwire.broker.core.configs import BROKER_CONFIGS

    kafka = data["configs"]
    lines = [
        "# Broker configs",
        "",
        "Generated by `tools/import_broker_configs.py --docs`; do not edit by hand.",
        "",
        f"Kafka's broker config names come from apache/kafka `{data['kafka']['commit']}` "
        "(`kwire/broker/core/kafka_broker_configs.json`). AlterConfigs and IncrementalAlterConfigs on a "
        "BROKER resource accept every config Kafka can change dynamically at that scope (per-broker "
        "configs only on a broker id, cluster-wide ones on a broker id or on the default resource \"\"), "
        "store it and report it in DescribeConfigs; read-only configs are refused with INVALID_REQUEST "
        "as Kafka refuses them. A name Kafka does not define is a custom config: SET and DELETE keep or "
        "drop it unchecked, DescribeConfigs lists it as Kafka does (no known type, so sensitive with a "
        "null value, read-only, type UNKNOWN), and APPEND/SUBTRACT on it are INVALID_CONFIG.",
        "",
        "## Configs kwire acts on",
        "",
        "A change to one of these changes what kwire does. kwire keeps them cluster-wide (one config "
        "store for its brokers): set on a broker id they apply to every broker and are reported as "
        "DYNAMIC_DEFAULT_BROKER_CONFIG. \"Kafka\" is how Kafka lets the config change; where kwire "
        "differs (kwire-only keys, or keys Kafka only reads at start-up) the kwire column says so.",
        "",
        "| config | type | default | kwire | Kafka |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, d in sorted(BROKER_CONFIGS.items()):
        k = kafka.get(name)
        lines.append(f"| `{name}` | {d.type} | `{d.default}` | {'read-only' if d.read_only else 'dynamic'} | "
                     f"{k['mode'] if k else 'not a Kafka config'} |")
    lines += [
        "",
        "## Configs kwire only stores",
        "",
        "Accepted and reported as Kafka reports them; they change nothing in kwire.",
        "",
        "| config | type | Kafka default | mode |",
        "| --- | --- | --- | --- |",
    ]
    for name, k in sorted(kafka.items()):
        if name in BROKER_CONFIGS or k["internal"]:
            continue
        default = "(sensitive)" if k["sensitive"] else f"`{k['default']}`" if k["default"] is not None else "null"
        mode = k["mode"] + (", listener prefix only" if k.get("listener_prefix_only") else "")
        lines.append(f"| `{name}` | {k['type']} | {default} | {mode} |")
    return "\n".join(lines) + "\n"


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kafka", type=Path, help="a Kafka work tree at the pinned commit")
    p.add_argument("--git", type=Path, default=DEFAULT_GIT, help="a Kafka git dir (read with git show)")
    p.add_argument("--commit", default=PINNED)
    p.add_argument("--check", action="store_true", help="fail if the committed JSON differs")
    p.add_argument("--docs", action="store_true", help="also write docs/broker-configs.md")
    args = p.parse_args(argv)
    src = Source(args.kafka, None if args.kafka else args.git, args.commit)
    text = dump(build(src))
    group_text = dump(group_build(src))
    if args.check:
        stale = [p for p, t in ((OUT, text), (GROUP_OUT, group_text))
                 if not p.exists() or p.read_text(encoding="utf-8") != t]
        for p in stale:
            out(f"{p} differs from what {args.kafka or args.git} at {args.commit} gives")
        return 1 if stale else 0
    OUT.write_text(text, encoding="utf-8")
    out(f"wrote {OUT} ({len(json.loads(text)['configs'])} configs)")
    GROUP_OUT.write_text(group_text, encoding="utf-8")
    out(f"wrote {GROUP_OUT} ({len(json.loads(group_text)['configs'])} group configs)")
    if args.docs:
        DOCS.write_text(render_docs(json.loads(text)), encoding="utf-8")
        out(f"wrote {DOCS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
